"""Task files without Dagster: validation, `depends_on`, the step registry, the context store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from training_pipeline.tasks import EXAMPLE_TASKS
from training_pipeline.tasks.context import diff
from training_pipeline.tasks.registry import RegistryError, build_registry
from training_pipeline.tasks.run_store import ContextStore
from training_pipeline.tasks.steps.agents import PromptAgentStep
from training_pipeline.tasks.task import TaskError, load_task, parse_task

REGISTRY = build_registry()


def _task(steps: list[dict]):
    return parse_task(steps, REGISTRY, name="t")


def _wait(step_id: str, **extra) -> dict:
    return {"id": step_id, "type": "wait", "seconds": 0, **extra}


def test_examples_are_valid_and_steps_take_class_defaults() -> None:
    task = load_task(EXAMPLE_TASKS / "reply-to-dana.json", REGISTRY)
    reply = task.step("reply")
    assert isinstance(reply, PromptAgentStep)
    assert reply.timeout_seconds == 600 and reply.fail_task_on_error is True
    assert reply.to_dict()["type"] == "prompt_agent"
    assert type(reply).from_dict(reply.to_dict()) == reply
    assert load_task(EXAMPLE_TASKS / "inbox-triage.json", REGISTRY).retries["reply"].max_retries == 1


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([{"id": "a", "type": "teleport"}], "step 'a': unknown type 'teleport'"),
        ([{"id": "a", "type": "os.system"}], "unknown type 'os.system'"),
        ([_wait("a", secnds=1)], "step 'a' (wait): unknown field 'secnds'"),
        ([{"id": "a", "type": "wait"}], "step 'a' (wait): missing field 'seconds'"),
        ([_wait("a"), _wait("a")], "step 'a': duplicate id (also step #1)"),
        ([_wait("a", depends_on=[{"task_step_id": "zz"}])], "step 'a' field 'depends_on': unknown step 'zz'"),
        (
            [_wait("a", depends_on=[{"task_step_id": "b"}]), _wait("b")],
            "step 'a' field 'depends_on': 'b' is not listed before 'a'",
        ),
        (
            [
                _wait("a"),
                _wait("b", depends_on=[]),
                _wait("c", retry_config={"retry_from_step_id": "b"}),
                _wait(
                    "d",
                    depends_on=[{"task_step_id": "a"}],
                    retry_config={"retry_from_step_id": "b", "max_retries": 1},
                ),
            ],
            "step 'd' field 'retry_config.retry_from_step_id': 'b' is neither the step nor one of",
        ),
        (
            [_wait("a", retry_config={"retry_from_step_id": "a", "max_retries": 1, "extra": 1})],
            "step 'a' field 'retry_config': unknown field 'extra'",
        ),
        (
            [{"id": "l", "type": "load_artifact", "env_name": "e", "path": "../../etc/passwd"}],
            "step 'l' (load_artifact): field 'path'",
        ),
        ([{"id": "l", "type": "load_artifact", "env_name": "e", "path": "/etc/passwd"}], "relative path"),
        ([{"id": "x", "type": "deploy_env", "env_type": "ftp", "env_name": "e"}], "unknown env type 'ftp'"),
        ({"id": "a"}, "a non-empty JSON list"),
    ],
)
def test_validation_names_the_step_and_the_field(steps, message: str) -> None:
    with pytest.raises(TaskError) as caught:
        _task(steps)
    assert message in str(caught.value)


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(TaskError) as caught:
        _task([_wait("a", x=1), {"id": "b", "type": "nope"}, _wait("c", depends_on=[{"task_step_id": "q"}])])
    assert len(caught.value.problems) == 3


def test_the_three_forms_of_depends_on() -> None:
    task = _task(
        [
            _wait("a"),
            _wait("b"),  # omitted: after every earlier step
            _wait("c", depends_on=[]),  # none
            _wait("d", depends_on=[{"task_step_id": "a"}, {"task_step_id": "c"}]),  # exactly these
            _wait("e"),
        ]
    )
    assert task.upstream == {"a": (), "b": ("a",), "c": (), "d": ("a", "c"), "e": ("a", "b", "c", "d")}
    assert task.descendants("c") == {"d", "e"}
    assert task.ancestors("d") == {"a", "c"}


def test_context_diffs_merge_side_by_side_and_revert(tmp_path: Path) -> None:
    store = ContextStore(tmp_path / "context.db")
    base = store.state()
    one = {"metadata": {"verifications": {"v1": {"score": 1.0, "results": []}}}}
    two = {"metadata": {"verifications": {"v2": {"score": 0.5, "results": []}}}}
    store.commit("v1", 1, diff(base, one))  # both started from the same (empty) context
    store.commit("v2", 1, diff(base, two))
    assert set(store.state()["metadata"]["verifications"]) == {"v1", "v2"}
    env = {"name": "mail", "url": "http://127.0.0.1:1"}
    store.commit("env", 1, diff(store.state(), {**store.state(), "deployed_envs": [env]}))
    store.commit(None, 0, [{"op": "append", "path": ["failed_steps"], "value": {"step_id": "env"}}])
    reverted = store.revert({"env", "v2"})
    assert {op["op"] for op in reverted} == {"put", "ensure", "set"}
    state = store.state()
    assert not state.get("deployed_envs") and set(state["metadata"]["verifications"]) == {"v1"}
    assert state["metadata"]["failed_steps"] == [{"step_id": "env"}]  # the run's own records stay


PLUGIN = """
from typing import ClassVar
from training_pipeline.tasks.step import TaskStep


class ReplyMentionsStep(TaskStep):
    type: ClassVar[str] = "reply_mentions"
    prompt_id: str
    text: str

    async def execute(self, context):
        reply = context.response(self.prompt_id)
        passed = self.text.lower() in reply.response.lower()
        context.verify(self.id, 1.0 if passed else 0.0, [{"criterion": self.text, "result": passed}])


class WaitAgain(TaskStep):
    type: ClassVar[str] = "wait"


class NoType(TaskStep):
    pass
"""


def _install_plugin(site: Path, entry_points: str) -> None:
    """A package installed the way pip leaves one: the module plus a dist-info with entry points."""
    site.mkdir()
    (site / "mycorp_steps.py").write_text(PLUGIN)
    info = site / "mycorp_steps-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mycorp-steps\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[training_pipeline.task_steps]\n{entry_points}\n")


def _validate(tmp_path: Path, site: Path, task: list[dict], config: str = "") -> subprocess.CompletedProcess:
    (tmp_path / "task.json").write_text(json.dumps(task))
    (tmp_path / "training_pipeline.toml").write_text(config)
    env = {**os.environ, "PYTHONPATH": str(site)}
    if config:
        env["TRAINING_PIPELINE_CONFIG"] = "training_pipeline.toml"
    command = [str(Path(sys.executable).parent / "training-pipeline"), "task", "validate", "task.json"]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path)


REPLY_CHECK = [{"id": "m", "type": "reply_mentions", "prompt_id": "reply", "text": "Thursday"}]


def test_an_installed_plugin_registers_a_step_type_by_entry_point(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _install_plugin(site, "reply_mentions = mycorp_steps:ReplyMentionsStep")
    done = _validate(tmp_path, site, REPLY_CHECK)
    assert done.returncode == 0, done.stderr
    assert "reply_mentions" in done.stdout
    # without the plugin, the same file names an unknown type
    done = _validate(tmp_path, tmp_path / "empty", REPLY_CHECK)
    assert done.returncode == 2 and "unknown type 'reply_mentions'" in done.stderr


def test_a_plugin_cannot_replace_a_built_in(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _install_plugin(site, "wait = mycorp_steps:WaitAgain")
    done = _validate(tmp_path, site, [_wait("a")])
    assert done.returncode == 2
    assert "step type 'wait' from entry point wait = 'mycorp_steps:WaitAgain' of mycorp-steps" in done.stderr
    assert "is already registered by the built-in steps" in done.stderr


def test_config_impls_come_after_entry_points_and_clash_with_a_clear_error(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _install_plugin(site, "reply_mentions = mycorp_steps:ReplyMentionsStep")
    done = _validate(
        tmp_path, site, REPLY_CHECK, '[task_steps]\nimpls = ["mycorp_steps:ReplyMentionsStep"]\n'
    )
    assert done.returncode == 2
    assert "[task_steps] impls 'mycorp_steps:ReplyMentionsStep' in training_pipeline.toml" in done.stderr
    assert "already registered by entry point reply_mentions" in done.stderr


def test_config_impls_register_and_report_bad_references(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "mycorp_steps.py").write_text(PLUGIN)
    config = '[task_steps]\nimpls = ["mycorp_steps:ReplyMentionsStep"]\n'
    assert _validate(tmp_path, site, REPLY_CHECK, config).returncode == 0
    done = _validate(tmp_path, site, REPLY_CHECK, '[task_steps]\nimpls = ["mycorp_steps:NoType"]\n')
    assert "NoType has no `type` class attribute" in done.stderr
    done = _validate(tmp_path, site, REPLY_CHECK, '[task_steps]\nimpls = ["mycorp_nowhere:X"]\n')
    assert "cannot import 'mycorp_nowhere:X'" in done.stderr


def test_a_config_file_in_the_working_directory_is_not_read_unasked(tmp_path: Path) -> None:
    """A `training_pipeline.toml` and the module it names, left where the CLI is run: nothing is
    imported, by the script or by `python -m` (which puts the working directory on sys.path)."""
    (tmp_path / "planted.py").write_text("open('imported.txt', 'w').write('ran')\n")
    (tmp_path / "json.py").write_text("open('imported.txt', 'w').write('ran')\n")  # shadows a stdlib module
    (tmp_path / "training_pipeline.toml").write_text('[task_steps]\nimpls = ["planted:Step"]\n')
    (tmp_path / "task.json").write_text(json.dumps([_wait("a")]))
    env = {k: v for k, v in os.environ.items() if k != "TRAINING_PIPELINE_CONFIG"}
    for command in (
        [str(Path(sys.executable).parent / "training-pipeline"), "task", "validate", "task.json"],
        [sys.executable, "-m", "training_pipeline", "task", "validate", "task.json"],
    ):
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert not (tmp_path / "imported.txt").exists(), command


def test_a_named_config_file_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(RegistryError, match="does not exist"):
        build_registry(tmp_path / "nowhere.toml")


def test_registry_errors_are_registry_errors(tmp_path: Path) -> None:
    config = tmp_path / "training_pipeline.toml"
    config.write_text('[task_steps]\nimpls = "not a list"\n')
    with pytest.raises(RegistryError, match="must be a list"):
        build_registry(config)


def test_a_path_that_escapes_through_a_symlink_is_refused(tmp_path: Path) -> None:
    from training_pipeline.tasks.step import resolve_inside

    base = tmp_path / "tasks"
    base.mkdir()
    (base / "link").symlink_to(tmp_path)
    (tmp_path / "secret.json").write_text("{}")
    with pytest.raises(ValueError, match="resolves outside"):
        resolve_inside(base, "link/secret.json")
    assert resolve_inside(base, "artifacts/x.json") == (base / "artifacts/x.json").resolve()


def test_the_cli_validates_a_file(tmp_path: Path) -> None:
    command = [str(Path(sys.executable).parent / "training-pipeline"), "task", "validate"]
    done = subprocess.run(
        [*command, str(EXAMPLE_TASKS / "inbox-triage.json")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "valid task 'inbox-triage' (11 steps, job task_inbox_triage)" in done.stdout
    bad = tmp_path / "bad.json"
    bad.write_text(textwrap.dedent('[{"id": "a", "type": "wait", "seconds": 1, "colour": "red"}]'))
    done = subprocess.run([*command, str(bad)], capture_output=True, text=True)
    assert done.returncode == 2 and "step 'a' (wait): unknown field 'colour'" in done.stderr


def test_a_step_whose_process_died_is_marked_lost_not_waited_for(tmp_path: Path, monkeypatch) -> None:
    import asyncio
    import time

    from training_pipeline.tasks import runner
    from training_pipeline.tasks.runtime import TaskRun

    monkeypatch.setattr(runner, "STALE_AFTER_SECONDS", 0.5)
    task = parse_task(
        [
            {"id": "crashed", "type": "wait", "seconds": 0, "depends_on": []},
            {"id": "bad", "type": "load_artifact", "env_name": "e", "path": "x.json", "depends_on": []},
        ],
        REGISTRY,
        name="t",
        base_dir=tmp_path,
    )
    run = TaskRun(task=task, run_id="r1", run_dir=tmp_path / "run")
    asyncio.run(runner.start_run(run))
    run.store.try_start("crashed")  # as if its process started it, then died with kill -9
    started = time.monotonic()
    outcome = asyncio.run(runner.run_step(run, "bad"))  # a fatal failure waits for running steps
    assert outcome.status == "failed" and time.monotonic() - started < 10
    assert run.store.statuses()["crashed"] == "lost"
    assert outcome.final_context is not None  # and the run still ends


def test_a_step_params_override_of_fail_task_on_error_decides_the_outcome(tmp_path: Path) -> None:
    import asyncio

    from training_pipeline.tasks import runner
    from training_pipeline.tasks.runtime import TaskRun

    task = parse_task(
        [{"id": "bad", "type": "load_artifact", "env_name": "e", "path": "missing.json"}],
        REGISTRY,
        name="t",
        base_dir=tmp_path,
    )
    run = TaskRun(task, "r1", tmp_path / "run", step_params={"bad": {"fail_task_on_error": False}})
    outcome = asyncio.run(runner.run_step(run, "bad"))
    assert outcome.status == "tolerated"
    [failure] = run.store.state()["metadata"]["failed_steps"]
    assert failure["is_fatal"] is False
