"""AgentEnv's step families beyond the first fourteen, as task jobs: sandboxes and commands in them,
files in and out, an MCP tool server for an agent, multi-turn conversations, unit-test, schema and
multi-judge verifiers, and waiting for a condition; and the bundled example that uses them together."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.fake_chat import FakeChatServer
from tests.helpers import run_task_file, task_context, write_task
from tests.scripted_agent import tool_call
from training_pipeline.tasks import EXAMPLE_TASKS
from training_pipeline.tasks.steps.verifiers import _summary_counts

FIXED = """import re


def slugify(title: str) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", title.lower()))
"""
HALF_FIXED = """def slugify(title: str) -> str:
    return title.lower().replace(" ", "-")
"""


def _coder(code: str):
    """A scripted coder: lists the files, reads the code, writes `code`, answers, then answers the
    follow-up question."""

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        tools = [m for m in messages if m["role"] == "tool"]
        if messages[-1]["role"] == "user" and "what did you change" in messages[-1]["content"]:
            return {"content": "I made slugify lower-case the title and join its words with hyphens."}
        if len(tools) == 0:
            return tool_call("list_files", {}, 1)
        if len(tools) == 1:
            return tool_call("read_file", {"path": "slugify.py"}, 2)
        if len(tools) == 2:
            return tool_call("write_file", {"path": "slugify.py", "content": code}, 3)
        return {"content": "Fixed slugify.py."}

    return reply


def test_the_fix_the_tests_example_runs_end_to_end(data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeChatServer(_coder(FIXED)) as llm:
        monkeypatch.setenv("LLM_BASE_URL", llm.base_url)
        result, _, _ = run_task_file(EXAMPLE_TASKS / "fix-the-tests.json")
    assert result.success
    context = task_context(data, result.run_id)
    # the agent was offered the MCP server's tools, and its calls reached the sandbox's files
    assert {t["function"]["name"] for t in llm.requests[0]["tools"]} == {
        "list_files",
        "read_file",
        "write_file",
    }
    assert context["metadata"]["tool_servers"]["files"]["tools"] == ["list_files", "read_file", "write_file"]
    [reply] = context["prompt_responses"]
    listed = json.loads(next(m["content"] for m in reply["messages"] if m["role"] == "tool"))
    assert sorted(listed) == ["slugify.py", "test_slugify.py"]
    # two user messages in one conversation; the last answer is the response
    users = [m["content"] for m in reply["messages"] if m["role"] == "user"]
    assert len(users) == 2 and reply["response"].startswith("I made slugify")
    # the unit tests ran in the sandbox, on the agent's fix
    tests = context["metadata"]["verifications"]["tests"]
    assert tests["score"] == 1.0 and tests["results"][0]["total"] == 4
    kept = context["metadata"]["artifacts"]["keep"]
    assert sorted(kept) == ["artifacts/keep/slugify.py", "artifacts/keep/test_slugify.py"]
    assert "re.findall" in (data / "task_runs" / result.run_id / "artifacts/keep/slugify.py").read_text()
    # the server's stderr went to a file of the run (scrubbed at its end), not to the pipeline's
    assert (data / "task_runs" / result.run_id / "work" / "files" / "files.stderr.log").is_file()


def test_a_partial_fix_scores_the_share_of_tests_that_pass(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a copy: Dagster caches a reconstructed job (with its resources) by its file's path
    examples = shutil.copytree(EXAMPLE_TASKS, tmp_path / "examples")
    with FakeChatServer(_coder(HALF_FIXED)) as llm:
        monkeypatch.setenv("LLM_BASE_URL", llm.base_url)
        result, _, _ = run_task_file(examples / "fix-the-tests.json")
    tests = task_context(data, result.run_id)["metadata"]["verifications"]["tests"]
    assert tests["score"] == 0.5 and tests["results"][0]["passed"] == 2


def test_sandbox_commands_files_and_what_they_refuse(data: Path, tmp_path: Path) -> None:
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "input.txt").write_text("hello from the task folder\n")
    plant = (
        "import os; os.symlink('/etc/passwd', 'leak.txt'); os.symlink('/etc', 'etc');"
        "open('out/report.json', 'w').write('{\"ok\": true}'); open('out/notes.txt', 'w').write('n')"
    )
    task = write_task(
        tmp_path / "tasks",
        [
            {
                "id": "box",
                "type": "deploy_sandbox",
                "sandbox_name": "box",
                "files": {"in/input.txt": "input.txt"},
            },
            {"id": "mk", "type": "run_in_sandbox", "sandbox_name": "box", "command": ["mkdir", "out"]},
            {
                "id": "plant",
                "type": "run_in_sandbox",
                "sandbox_name": "box",
                "command": ["python", "-c", plant],
            },
            {
                "id": "cat",
                "type": "run_in_sandbox",
                "sandbox_name": "box",
                "command": ["cat", "in/input.txt"],
            },
            {"id": "get", "type": "download_files", "sandbox_name": "box", "paths": ["out/report.json"]},
            {"id": "all", "type": "collect_files", "sandbox_name": "box", "patterns": ["**/*", "*.txt"]},
            {
                "id": "through_link",
                "type": "upload_files",
                "sandbox_name": "box",
                "files": {"etc/evil.txt": "input.txt"},
                "fail_task_on_error": False,
            },
            {
                "id": "leak",
                "type": "download_files",
                "sandbox_name": "box",
                "paths": ["leak.txt"],
                "fail_task_on_error": False,
            },
            {
                "id": "fails",
                "type": "run_in_sandbox",
                "sandbox_name": "box",
                "command": ["python", "-c", "raise SystemExit(3)"],
                "fail_task_on_error": False,
            },
        ],
    )
    result, _, _ = run_task_file(task)
    assert result.success
    context = task_context(data, result.run_id)
    metadata = context["metadata"]
    assert metadata["sandbox_results"]["cat"]["stdout"] == "hello from the task folder\n"
    [sandbox] = context["deployed_sandboxes"]
    assert sandbox["name"] == "box" and sandbox["kind"] == "bwrap" and sandbox["limits"]["cpu_seconds"] == 60
    run_dir = data / "task_runs" / result.run_id
    assert json.loads((run_dir / "artifacts/get/out/report.json").read_text()) == {"ok": True}
    assert sorted(metadata["artifacts"]["all"]) == [
        "artifacts/all/in/input.txt",
        "artifacts/all/out/notes.txt",
        "artifacts/all/out/report.json",
    ]
    assert set(metadata["skipped_files"]["all"]) == {"leak.txt", "etc"}  # links: never followed
    failed = {f["step_id"]: f["error"] for f in metadata["failed_steps"]}
    assert "symlink" in failed["through_link"] and not Path("/etc/evil.txt").exists()
    assert "leak.txt" in failed["leak"] and not (run_dir / "artifacts/leak").exists()
    assert "exited with 3" in failed["fails"]


def test_wait_for_sees_what_a_concurrent_step_makes_and_times_out_otherwise(
    data: Path, tmp_path: Path
) -> None:
    task = write_task(
        tmp_path / "tasks",
        [
            {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box"},
            {
                "id": "slow",
                "type": "run_in_sandbox",
                "sandbox_name": "box",
                "command": ["python", "-c", "import time; time.sleep(1.5); open('ready', 'w').close()"],
                "depends_on": [{"task_step_id": "box"}],
            },
            {
                "id": "until_ready",
                "type": "wait_for",
                "condition": {"sandbox_name": "box", "file_exists": "ready"},
                "timeout_seconds": 30,
                "interval_seconds": 0.2,
                "depends_on": [{"task_step_id": "box"}],
            },
            {
                "id": "never",
                "type": "wait_for",
                "condition": {"sandbox_name": "box", "command": ["test", "-e", "nothing-here"]},
                "timeout_seconds": 1,
                "interval_seconds": 0.3,
                "fail_task_on_error": False,
                "depends_on": [{"task_step_id": "until_ready"}],
            },
        ],
    )
    result, _, _ = run_task_file(task)
    assert result.success
    metadata = task_context(data, result.run_id)["metadata"]
    assert metadata["waits"]["until_ready"]["checks"] > 1 and metadata["waits"]["until_ready"]["seconds"] >= 1
    [failed] = metadata["failed_steps"]
    assert failed["step_id"] == "never" and "condition not met after 1.0s" in failed["error"]


def test_schema_and_several_judges_verify_a_response(data: Path, tmp_path: Path, monkeypatch) -> None:
    def reply(body: dict[str, Any]) -> dict[str, Any]:
        if body.get("response_format"):  # a judge: each model has its own view of criterion 2
            strict = body.get("model") == "strict-judge"
            return {
                "content": json.dumps(
                    {
                        "results": [
                            {"index": 1, "passed": True, "reason": "names the city"},
                            {
                                "index": 2,
                                "passed": not strict,
                                "reason": "brief enough" if not strict else "wordy",
                            },
                        ]
                    }
                )
            }
        return {"content": 'Here you go: {"city": "Lyon", "population": 522250}'}

    task = write_task(
        tmp_path / "tasks",
        [
            {"id": "agent", "type": "deploy_agent", "agent_name": "a", "system_prompt": "Answer in JSON."},
            {
                "id": "ask",
                "type": "prompt_agent",
                "agent_name": "a",
                "prompt_id": "q",
                "prompt": "A French city?",
            },
            {
                "id": "shape",
                "type": "agent_prompt_response_verifier",
                "prompt_id": "q",
                "json_schema": {
                    "type": "object",
                    "required": ["city", "population"],
                    "properties": {
                        "city": {"type": "string"},
                        "population": {"type": "integer", "minimum": 1},
                    },
                },
            },
            {
                "id": "wrong_shape",
                "type": "agent_prompt_response_verifier",
                "prompt_id": "q",
                "json_schema": {"type": "object", "required": ["country"]},
            },
            {
                "id": "judges",
                "type": "rubrics_verifier",
                "prompt_id": "q",
                "criteria": [{"criterion": "names a French city"}, {"criterion": "is brief", "weight": 3}],
                "judges": [{"model": "lenient-judge"}, {"model": "strict-judge"}, {"model": "other-judge"}],
                "aggregation": "majority",
            },
            {
                "id": "unanimous",
                "type": "rubrics_verifier",
                "prompt_id": "q",
                "criteria": [{"criterion": "names a French city"}, {"criterion": "is brief", "weight": 3}],
                "judges": [{"model": "lenient-judge"}, {"model": "strict-judge"}],
                "aggregation": "unanimous",
            },
        ],
    )
    with FakeChatServer(reply) as llm:
        monkeypatch.setenv("LLM_BASE_URL", llm.base_url)
        result, _, _ = run_task_file(task)
    assert result.success
    verifications = task_context(data, result.run_id)["metadata"]["verifications"]
    assert verifications["shape"]["score"] == 1.0
    assert verifications["wrong_shape"]["score"] == 0.0
    assert "'country' is a required property" in verifications["wrong_shape"]["results"][0]["detail"][0]
    assert verifications["judges"]["score"] == 1.0  # 2 of 3 judges pass "brief"
    assert [v["passed"] for v in verifications["judges"]["results"][1]["votes"]] == [True, False, True]
    assert verifications["unanimous"]["score"] == 0.25  # "brief" (weight 3) fails: 1 / 4


def test_an_invalid_schema_or_condition_is_refused_before_anything_runs(tmp_path: Path) -> None:
    from training_pipeline.tasks.registry import build_registry
    from training_pipeline.tasks.task import TaskError, load_task

    bad = write_task(
        tmp_path / "tasks",
        [
            {
                "id": "v",
                "type": "agent_prompt_response_verifier",
                "prompt_id": "q",
                "json_schema": {"type": 5},
            },
            {"id": "w", "type": "wait_for", "condition": {"file_exists": "x"}},
            {"id": "s", "type": "deploy_tool_server", "server_name": "x"},
        ],
    )
    with pytest.raises(TaskError) as raised:
        load_task(bad, build_registry())
    text = str(raised.value)
    assert "json_schema" in text and "sandbox_name" in text and "exactly one of script and module" in text


def test_test_summaries_of_unittest_and_pytest() -> None:
    assert _summary_counts("Ran 4 tests in 0.001s\n\nFAILED (failures=1, errors=1)\n") == (2, 4)
    assert _summary_counts("Ran 3 tests in 0.001s\n\nOK\n") == (3, 3)
    assert _summary_counts("...\n==== 5 passed, 2 failed in 0.12s ====") == (5, 7)
    assert _summary_counts("no tests here") is None
