"""Runs the CLI starts while the deployment is up go through it: they carry the code location's
origin, so the webserver re-executes them (all steps, and from failure) like runs launched from the UI.
A real `dagster-webserver` and `dagster-daemon` on 127.0.0.1 over this repository's `dagster.yaml`."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from tests.dagster_servers import DagsterServers, instance_at, pipeline_free_env
from tests.helpers import REPO, cli

RUN = """
query($id: ID!) { runOrError(runId: $id) { ... on Run {
  status repositoryOrigin { repositoryLocationName } stepKeysToExecute tags { key value } } } }"""
REEXECUTE = """
mutation($params: ReexecutionParams!) { launchRunReexecution(reexecutionParams: $params) {
  __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } } }"""
FAILING_TASK = [
    {"id": "email", "type": "deploy_env", "env_type": "email", "env_name": "email"},
    {
        "id": "bad",
        "type": "run_code",
        "env_name": "email",
        "script": "fail.py",
        "depends_on": [{"task_step_id": "email"}],
    },
]


def _deployment(tmp_path: Path, **extra: str) -> tuple[Path, dict[str, str]]:
    """A Dagster home with this repository's `dagster.yaml`, and the environment of the servers and the
    CLI on it (`extra` added); the servers' logs go to `tmp_path / "logs"`."""
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    (tmp_path / "logs").mkdir()
    env = {
        **pipeline_free_env(),
        "DAGSTER_DISABLE_TELEMETRY": "1",
        "DAGSTER_HOME": str(home),
        "TRAINING_PIPELINE_DATA": str(tmp_path / "data"),
        **extra,
    }
    return home, env


def _wait_for_daemon(home: Path) -> None:
    """Until the daemon of the instance at `home` has reported (the CLI launches through it then)."""
    with instance_at(home) as instance:
        deadline = time.monotonic() + 60
        while not instance.get_daemon_heartbeats():
            assert time.monotonic() < deadline, "the daemon never reported"
            time.sleep(0.5)


def _finished(servers: DagsterServers, run_id: str) -> dict:
    deadline = time.monotonic() + 180
    while True:
        run = servers.graphql(RUN, {"id": run_id})["runOrError"]
        if run["status"] in ("SUCCESS", "FAILURE", "CANCELED"):
            return run
        assert time.monotonic() < deadline, run
        time.sleep(0.5)


def _reexecute(servers: DagsterServers, run_id: str, strategy: str) -> dict:
    launched = servers.graphql(REEXECUTE, {"params": {"parentRunId": run_id, "strategy": strategy}})
    answer = launched["launchRunReexecution"]
    assert answer["__typename"] == "LaunchRunSuccess", answer
    return _finished(servers, answer["run"]["runId"])


def test_cli_runs_launched_through_the_deployment_re_execute_from_the_ui(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "failing.json").write_text(json.dumps(FAILING_TASK))
    (tasks / "fail.py").write_text("import sys\nsys.exit(3)\n")
    home, env = _deployment(tmp_path, TRAINING_PIPELINE_TASKS_DIR=str(tasks))
    with DagsterServers(home, env, tmp_path / "logs") as servers:
        _wait_for_daemon(home)

        # from the project's folder, as a user runs it
        day = cli(env, "materialize", "--start", "2026-11-24", cwd=REPO)
        assert day.returncode == 0, day.stderr[-3000:]
        assert "ran in this process" not in day.stderr
        [line] = [json.loads(text) for text in day.stdout.splitlines() if text.startswith("{")]
        assert line["status"] == "ok" and line["examples"]["response"] > 0
        run = _finished(servers, line["run_id"])
        assert run["repositoryOrigin"]["repositoryLocationName"] == "training_pipeline"
        again = _reexecute(servers, line["run_id"], "ALL_STEPS")
        assert again["status"] == "SUCCESS"

        failed = cli(env, "task", "run", "failing", cwd=REPO)
        assert failed.returncode == 1, failed.stderr[-3000:]
        summary = json.loads(failed.stdout[failed.stdout.index("{") :])
        assert summary["status"] == "failed" and summary["failed_steps"][0]["step_id"] == "bad"
        assert _finished(servers, summary["run_id"])["repositoryOrigin"] is not None
        retry = _reexecute(servers, summary["run_id"], "FROM_FAILURE")
        tags = {tag["key"]: tag["value"] for tag in retry["tags"]}
        assert tags["dagster/parent_run_id"] == summary["run_id"]
        assert retry["stepKeysToExecute"] == ["bad"]  # only what failed, on the envs the first run left


def test_a_run_left_queued_by_a_daemon_that_stopped_is_one_error_line(tmp_path: Path) -> None:
    """The daemon reported a moment ago, so the CLI launches through the deployment; but it has stopped,
    and nothing will start the queued run: once its last report is a minute old the CLI says so and
    stops waiting."""
    home, env = _deployment(tmp_path)
    with DagsterServers(home, env, tmp_path / "logs", webserver=False):
        _wait_for_daemon(home)
    # the daemon is gone; its last report is still fresh, but 50 s old: the minute runs out in ten
    # seconds rather than sixty (the report the daemon left, with an earlier time)
    with instance_at(home) as instance:
        for beat in instance.get_daemon_heartbeats().values():
            instance.add_daemon_heartbeat(beat._replace(timestamp=time.time() - 50))
    done = cli(env, "materialize", "--start", "2026-11-24", cwd=REPO, timeout=240)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    [line] = [text for text in done.stderr.splitlines() if "error" in text]
    assert "is queued and no daemon of this instance is up to start it" in line
