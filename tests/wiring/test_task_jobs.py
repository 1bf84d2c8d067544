"""Task files run as Dagster jobs: reply-to-dana end to end, concurrency, both failure modes, retry
rollback, overrides, trajectories written, the multiprocess executor, and the CLI."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from dagster import (
    DagsterEventType,
    DagsterInstance,
    ReexecutionOptions,
    build_reconstructable_job,
    execute_job,
    instance_for_test,
)

from resources.sources import FileTrajectorySource
from tests.fake_chat import FakeChatServer
from tests.helpers import REPO, run_task_file, task_context, write_task
from tests.scripted_agent import email_agent
from training_pipeline.cli import main
from training_pipeline.definitions import defs
from training_pipeline.tasks import EXAMPLE_TASKS
from training_pipeline.trajectories.models import validation_reason


def _steps(events, kind: DagsterEventType) -> set[str]:
    return {e.step_key for e in events if e.dagster_event and e.dagster_event.event_type == kind}


def test_task_files_are_jobs_of_the_code_location_with_ops_aliased_by_step_id() -> None:
    job = defs.resolve_job_def("task_reply_to_dana")
    assert job.executor_def.name == "async_executor"
    assert {node.name for node in job.graph.nodes} == {"email", "inbox", "assistant", "reply", "check"}
    upstream = {
        node.name: sorted(
            d.node.name
            for deps in job.graph.dependency_structure.input_to_upstream_outputs_for_node(node.name).values()
            for d in deps
        )
        for node in job.graph.nodes
    }
    assert upstream["reply"] == ["assistant", "inbox"]
    assert upstream["check"] == ["assistant", "email", "inbox", "reply"]  # omitted: after every earlier step
    assert upstream["email"] == []
    assert "task_inbox_triage" in {j.name for j in defs.resolve_all_job_defs()}


def test_reply_to_dana_end_to_end(data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeChatServer(email_agent) as llm:
        monkeypatch.setenv("LLM_BASE_URL", llm.base_url)
        result, events, _ = run_task_file(EXAMPLE_TASKS / "reply-to-dana.json")
    assert result.success
    context = task_context(data, result.run_id)
    assert context["metadata"]["verifications"]["check"]["score"] == 1.0
    [reply] = context["prompt_responses"]
    assert reply["prompt_id"] == "reply" and reply["tool_calls"] == 3 and reply["turns"] == 4
    assert reply["usage"]["calls"] == 4 and reply["usage"]["prompt_tokens"] > 0
    assert "Thursday" in reply["response"]
    # the agent really used the env: its requests carried the env's tool schemas
    assert {t["function"]["name"] for t in llm.requests[0]["tools"]} >= {"list_emails", "reply_email"}
    # the env process is gone once the run ended
    [env] = context["deployed_envs"]
    assert env["url"].startswith("unix:") and env["url"].endswith("/env.sock")  # a socket, no port
    with pytest.raises(ProcessLookupError):
        os.kill(env["pid"], 0)
    # the verification is the check op's metadata, the whole context the last op's
    check = next(
        e
        for e in events
        if e.step_key == "check" and e.dagster_event and e.dagster_event.is_successful_output
    )
    assert check.dagster_event.step_output_data.metadata["score"].value == 1.0
    # the conversation is an elizaOS trajectory in the source, read back with its day
    [file] = (data / "agent_trajectories").rglob("*.jsonl")
    trajectory = json.loads(file.read_text())
    assert validation_reason(trajectory) is None and trajectory["trajectoryId"] == reply["trajectory_id"]
    source = FileTrajectorySource(path=str(data / "nowhere"), agent_runs_dir=str(data / "agent_trajectories"))
    (data / "nowhere").mkdir()
    day = file.parent.name
    from datetime import date

    assert [r.trajectory["trajectoryId"] for r in source.read_day(date.fromisoformat(day))] == [
        reply["trajectory_id"]
    ]


def test_independent_steps_run_concurrently(data: Path, tmp_path: Path) -> None:
    steps = [{"id": f"w{i}", "type": "wait", "seconds": 1.0, "depends_on": []} for i in range(8)]
    result, _, elapsed = run_task_file(write_task(tmp_path / "tasks", steps))
    assert result.success
    assert elapsed < 5.0  # 8 s one after another; the benchmark measures the real overhead


@pytest.fixture
def scripts(tmp_path: Path) -> Path:
    """A tasks folder holding two scripts for `run_code`: one that always fails, one that fails once."""
    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / "fail.py").write_text("import sys\nprint('no luck')\nsys.exit(3)\n")
    (folder / "flaky.py").write_text(
        # its current directory is its work folder: kept across the run's retries and re-executions
        "import pathlib, sys\nmarker = pathlib.Path('marker')\n"
        "if not marker.exists():\n    marker.write_text('x')\n    sys.exit(1)\nprint('{\"ok\": true}')\n"
    )
    return folder


def _run_code(step_id: str, script: str, **extra: Any) -> dict[str, Any]:
    return {"id": step_id, "type": "run_code", "env_name": "email", "script": script, **extra}


def _email_steps() -> list[dict]:
    return [{"id": "email", "type": "deploy_env", "env_type": "email", "env_name": "email", "depends_on": []}]


def test_a_fatal_failure_starts_nothing_more_and_fails_the_run(
    data: Path, scripts: Path, tmp_path: Path
) -> None:
    steps = [
        *_email_steps(),
        {"id": "slow", "type": "wait", "seconds": 1.0, "depends_on": []},
        _run_code("bad", "fail.py", depends_on=[{"task_step_id": "email"}]),
        {"id": "after_slow", "type": "wait", "seconds": 0, "depends_on": [{"task_step_id": "slow"}]},
        {"id": "after_bad", "type": "wait", "seconds": 0, "depends_on": [{"task_step_id": "bad"}]},
    ]
    result, events, _ = run_task_file(write_task(scripts, steps))
    assert not result.success
    assert _steps(events, DagsterEventType.STEP_FAILURE) == {"bad"}
    assert "slow" in _steps(events, DagsterEventType.STEP_SUCCESS)  # running steps finish
    assert not {"after_slow", "after_bad"} & _steps(
        events, DagsterEventType.STEP_OUTPUT
    )  # nothing new starts
    failure = next(
        e for e in events if e.dagster_event and e.dagster_event.event_type == DagsterEventType.STEP_FAILURE
    )
    assert "fail.py exited with code 3" in failure.dagster_event.step_failure_data.error.message
    context = task_context(data, result.run_id)
    [failed] = context["metadata"]["failed_steps"]
    assert failed["step_id"] == "bad" and failed["step_type"] == "run_code" and failed["is_fatal"] is True
    assert failed["error_type"] == "RuntimeError" and failed["duration_seconds"] >= 0
    assert context["metadata"]["script_results"]["bad"]["output"] == "no luck\n"
    assert context["step_statuses"]["after_slow"] in ("pending", "skipped")


def test_a_tolerated_failure_lets_dependants_run(data: Path, scripts: Path) -> None:
    steps = [
        *_email_steps(),
        _run_code("bad", "fail.py", fail_task_on_error=False),
        {"id": "after_bad", "type": "wait", "seconds": 0},
    ]
    result, events, _ = run_task_file(write_task(scripts, steps))
    assert result.success
    assert "after_bad" in _steps(events, DagsterEventType.STEP_SUCCESS)
    [failed] = task_context(data, result.run_id)["metadata"]["failed_steps"]
    assert failed["step_id"] == "bad" and failed["is_fatal"] is False


def test_retry_rolls_back_and_reruns_on_a_fresh_env(data: Path, scripts: Path, tmp_path: Path) -> None:
    steps = [
        *_email_steps(),
        {"id": "side", "type": "wait", "seconds": 0, "depends_on": []},
        _run_code(
            "flaky",
            "flaky.py",
            retry_config={"retry_from_step_id": "email", "max_retries": 1},
        ),
    ]
    result, _, _ = run_task_file(write_task(scripts, steps))
    assert result.success
    run_dir = data / "task_runs" / result.run_id
    context = task_context(data, result.run_id)
    [reset] = context["metadata"]["retry_resets"]
    assert reset["step_id"] == "flaky" and reset["retry_from_step_id"] == "email"
    assert reset["rerun_steps"] == ["email", "flaky"]  # `side` is not downstream of `email`
    [failure] = context["metadata"]["failed_steps"]
    assert failure["step_id"] == "flaky" and failure["is_fatal"] is False
    assert context["metadata"]["script_results"]["flaky"]["output"] == {"ok": True}
    # the first env instance was rolled back and stopped; the context holds only the fresh one
    with sqlite3.connect(run_dir / "context.db") as db:
        rows = db.execute("SELECT ops, reverted FROM diffs WHERE step_id = 'email' ORDER BY seq").fetchall()
    first, second = (json.loads(ops)[0]["value"] for ops, _ in rows)
    assert [reverted for _, reverted in rows] == [1, 0]
    assert first["instance_id"] != second["instance_id"]
    assert [env["instance_id"] for env in context["deployed_envs"]] == [second["instance_id"]]


def test_re_executing_from_failure_continues_the_run_on_its_envs(
    data: Path, scripts: Path, tmp_path: Path
) -> None:
    (scripts / "inbox.json").write_text((EXAMPLE_TASKS / "artifacts" / "dana_email.json").read_text())
    steps = [
        *_email_steps(),
        {"id": "load", "type": "load_artifact", "env_name": "email", "path": "inbox.json"},
        _run_code("flaky", "flaky.py"),  # fails the first time: fatal
        {"id": "snap", "type": "snapshot_env", "env_name": "email"},
    ]
    job = build_reconstructable_job(
        "assets.tasks.jobs",
        "job_for_file",
        reconstructable_args=(str(write_task(scripts, steps)), "async"),
    )
    with instance_for_test() as instance:
        first = execute_job(job, instance, raise_on_error=False)
        assert not first.success
        second = execute_job(
            job, instance, reexecution_options=ReexecutionOptions.from_failure(first.run_id, instance)
        )
        events = instance.all_logs(second.run_id)
    assert second.success
    assert _steps(events, DagsterEventType.STEP_SUCCESS) == {"flaky", "snap"}  # email and load kept

    context = task_context(data, second.run_id)
    assert context["metadata"]["continued_from"] == {"run_id": first.run_id, "rerun_steps": ["flaky", "snap"]}
    assert "failed_steps" not in context["metadata"]  # the failure it re-ran is no longer the story
    assert context["metadata"]["script_results"]["flaky"]["output"] == {"ok": True}
    # the env, stopped when the first run ended, came back on its own state: the emails `load` put there
    snapshot = json.loads(
        (data / "task_runs" / second.run_id / context["metadata"]["snapshots"]["snap"]["path"]).read_text()
    )
    # the env's mail survived the re-execution; stored, its sender is personal data, kept as its kind
    assert snapshot["emails"] and {e["from"] for e in snapshot["emails"]} == {"<PII:EMAIL_ADDRESS:1>"}
    [env] = context["deployed_envs"]
    [before] = task_context(data, first.run_id)["deployed_envs"]
    assert env["instance_id"] == before["instance_id"] and env["pid"] != before["pid"]
    with pytest.raises(ProcessLookupError):
        os.kill(env["pid"], 0)  # and was stopped when the continuation ended
    assert (
        task_context(data, first.run_id)["metadata"]["failed_steps"][0]["step_id"] == "flaky"
    )  # history kept


def test_a_re_executed_selection_ends_its_run_and_stops_the_envs(
    data: Path, scripts: Path, tmp_path: Path
) -> None:
    steps = [
        *_email_steps(),
        _run_code("flaky", "flaky.py"),
        {"id": "snap", "type": "snapshot_env", "env_name": "email"},
    ]
    path = str(write_task(scripts, steps))
    job = build_reconstructable_job("assets.tasks.jobs", "job_for_file", reconstructable_args=(path, "async"))
    with instance_for_test() as instance:
        first = execute_job(job, instance, raise_on_error=False)
        only_flaky = ReexecutionOptions(parent_run_id=first.run_id, step_selection=["flaky"])
        second = execute_job(job, instance, reexecution_options=only_flaky)
    assert second.success
    context = task_context(data, second.run_id)  # written: the run ended although `snap` never ran
    assert context["step_statuses"] == {"email": "succeeded", "flaky": "succeeded", "snap": "skipped"}
    with pytest.raises(ProcessLookupError):
        os.kill(context["deployed_envs"][0]["pid"], 0)


def test_retries_run_out_then_the_failure_is_fatal(data: Path, scripts: Path) -> None:
    steps = [
        *_email_steps(),
        _run_code("bad", "fail.py", retry_config={"retry_from_step_id": "bad", "max_retries": 2}),
    ]
    result, _, _ = run_task_file(write_task(scripts, steps))
    assert not result.success
    metadata = task_context(data, result.run_id)["metadata"]
    assert [r["rerun_steps"] for r in metadata["retry_resets"]] == [["bad"], ["bad"]]
    assert [f["is_fatal"] for f in metadata["failed_steps"]] == [False, False, True]


def test_overrides_land_in_user_overrides_and_replace_step_fields(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeChatServer(email_agent) as llm:
        monkeypatch.setenv("LLM_BASE_URL", llm.base_url)
        config = {
            "values": {"experiment": 7},
            "step_params": {"reply": {"prompt": "Reply to Dana, briefly."}},
        }
        result, _, _ = run_task_file(
            EXAMPLE_TASKS / "reply-to-dana.json",
            {"resources": {"training_pipeline_task_overrides": {"config": config}}},
        )
    assert result.success
    context = task_context(data, result.run_id)
    assert context["metadata"]["user_overrides"] == {"experiment": 7, "step_params": config["step_params"]}
    assert llm.requests[0]["messages"][1]["content"] == "Reply to Dana, briefly."
    assert context["prompt_responses"][0]["prompt"] == "Reply to Dana, briefly."


def test_the_multiprocess_executor_shares_the_context_across_processes(data: Path, tmp_path: Path) -> None:
    folder = tmp_path / "tasks"
    folder.mkdir()
    steps = [
        *_email_steps(),
        {"id": "look", "type": "snapshot_env", "env_name": "email"},
    ]
    result, events, _ = run_task_file(write_task(folder, steps), executor="multiprocess")
    assert result.success
    pids = {
        e.dagster_event.pid
        for e in events
        if e.dagster_event and e.dagster_event.event_type == DagsterEventType.STEP_START
    }
    assert len(pids) == 2  # each step in its own process, the env found through the store
    snapshot = task_context(data, result.run_id)["metadata"]["snapshots"]["look"]["path"]
    assert json.loads((data / "task_runs" / result.run_id / snapshot).read_text())["emails"] == []


def test_task_run_cli_with_overrides(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").symlink_to(REPO / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with FakeChatServer(email_agent) as llm:
        monkeypatch.setenv("LLM_BASE_URL", llm.base_url)
        code = main(
            [
                "task",
                "run",
                str(EXAMPLE_TASKS / "inbox-triage.json"),
                "--override",
                "summary.max_turns=3",
                "--override",
                "note=cli",
            ]
        )
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and summary["status"] == "succeeded"
    assert summary["scores"] == {"sent_to_dana": 1.0, "mentions_thursday": 1.0, "tone": 1.0, "score": 1.0}
    context = json.loads(Path(summary["context"]).read_text())
    assert context["metadata"]["user_overrides"] == {
        "note": "cli",
        "step_params": {"summary": {"max_turns": 3}},
    }
    with DagsterInstance.get() as instance:  # the run is on the instance the UI shows
        assert instance.get_run_by_id(summary["run_id"]).job_name == "task_inbox_triage"
    assert (
        main(["task", "run", str(EXAMPLE_TASKS / "inbox-triage.json"), "--override", "summary.colour=1"]) == 2
    )
