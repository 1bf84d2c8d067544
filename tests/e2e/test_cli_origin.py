"""Runs the CLI starts go through the deployment: while one is up, through its daemon; with none up, on
the project's own instance, through a daemon the CLI starts for the command. Either way they carry the
code location's origin, so the webserver re-executes them (all steps, and from failure) like runs
launched from the UI. A real `dagster-webserver` and `dagster-daemon` on 127.0.0.1 over this repository's
`dagster.yaml`."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.dagster_servers import DagsterServers, instance_at, pipeline_free_env
from tests.helpers import CLI, REPO, cli, command_lines, until_gone

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


def _project(tmp_path: Path, tasks: dict[str, str]) -> tuple[Path, Path, dict[str, str]]:
    """A project folder with this repository's `dagster.yaml` and `workspace.yaml` and nothing exported
    (its own instance: `var/dagster_home`, as `make demo` uses), and a tasks folder holding `tasks`
    (file name → text): (project, its Dagster home, the CLI's environment)."""
    project, folder = tmp_path / "project", tmp_path / "tasks"
    for made in (project, folder):
        made.mkdir()
    for name in ("dagster.yaml", "workspace.yaml"):
        shutil.copy(REPO / name, project / name)
    for name, text in tasks.items():
        (folder / name).write_text(text)
    env = {
        **pipeline_free_env(),
        "DAGSTER_DISABLE_TELEMETRY": "1",
        "TRAINING_PIPELINE_TASKS_DIR": str(folder),
    }
    env.pop("DAGSTER_HOME", None)
    return project, project / "var" / "dagster_home", env


def test_cli_runs_re_execute_from_the_ui_with_or_without_a_deployment_up(tmp_path: Path) -> None:
    """From the project's folder, as a user runs it. With no `make ui` up (as `make demo` runs), the
    run goes through a daemon the CLI starts and stops, leaving no process and no report that would
    make the next command take it for a deployment. With the servers up, runs go through their daemon.
    Either way they carry the code location's origin: the webserver lists them under it and
    re-executes them, all steps and from failure."""
    failing = {"failing.json": json.dumps(FAILING_TASK), "fail.py": "import sys\nsys.exit(3)\n"}
    project, home, env = _project(tmp_path, failing)

    alone = cli(env, "materialize", "--start", "2026-11-24", cwd=project)
    assert alone.returncode == 0, alone.stderr[-3000:]
    assert "ran in this process" not in alone.stderr
    [first] = [json.loads(text) for text in alone.stdout.splitlines() if text.startswith("{")]
    assert first["status"] == "ok" and first["examples"]["response"] > 0
    assert (home / "cli-daemon.log").is_file()
    assert not command_lines(str(project / "workspace.yaml"))  # the daemon has gone
    until_gone(str(project), seconds=30)  # and its code server, once idle
    with instance_at(home) as instance:
        assert instance.get_daemon_heartbeats() == {}

    (tmp_path / "logs").mkdir()
    served = {**env, "DAGSTER_HOME": str(home), "TRAINING_PIPELINE_DATA": str(project / "var" / "data")}
    with DagsterServers(home, served, tmp_path / "logs") as servers:
        _wait_for_daemon(home)
        run = _finished(servers, first["run_id"])
        assert run["repositoryOrigin"]["repositoryLocationName"] == "training_pipeline"
        assert _reexecute(servers, first["run_id"], "ALL_STEPS")["status"] == "SUCCESS"

        day = cli(env, "materialize", "--start", "2026-11-25", cwd=project)
        assert day.returncode == 0, day.stderr[-3000:]
        assert "ran in this process" not in day.stderr
        [line] = [json.loads(text) for text in day.stdout.splitlines() if text.startswith("{")]
        assert line["status"] == "ok" and line["examples"]["response"] > 0
        assert _finished(servers, line["run_id"])["repositoryOrigin"] is not None

        failed = cli(env, "task", "run", "failing", cwd=project)
        assert failed.returncode == 1, failed.stderr[-3000:]
        summary = json.loads(failed.stdout[failed.stdout.index("{") :])
        assert summary["status"] == "failed" and summary["failed_steps"][0]["step_id"] == "bad"
        assert _finished(servers, summary["run_id"])["repositoryOrigin"] is not None
        retry = _reexecute(servers, summary["run_id"], "FROM_FAILURE")
        tags = {tag["key"]: tag["value"] for tag in retry["tags"]}
        assert tags["dagster/parent_run_id"] == summary["run_id"]
        assert retry["stepKeysToExecute"] == ["bad"]  # only what failed, on the envs the first run left


@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupting_the_cli_cancels_the_run_of_the_daemon_it_started(
    tmp_path: Path, signal_number: int
) -> None:
    """Ctrl-C (or SIGTERM) while a run of the CLI's own daemon is going: nothing else would stop that
    run, so the CLI cancels it as the UI's Terminate does. The step is waiting on task code for two
    minutes; it sees its run terminated, stops its sandbox and what the run started, and the run ends
    CANCELED before the CLI returns, with nothing the CLI started left running."""
    slow = [{**FAILING_TASK[0]}, {**FAILING_TASK[1], "id": "slow", "script": "slow.py"}]
    script = tmp_path / "tasks" / "slow.py"
    project, home, env = _project(
        tmp_path, {"slow.json": json.dumps(slow), script.name: "import time\ntime.sleep(120)\n"}
    )
    command = subprocess.Popen(
        [str(CLI), "task", "run", "slow"],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while not command_lines(str(script)):  # the script is running, in its sandbox
            assert command.poll() is None and time.monotonic() < deadline, command.communicate()
            time.sleep(0.5)
        runs = _started_runs(home)
        command.send_signal(signal_number)
        _, stderr = command.communicate(timeout=60)
    finally:
        command.kill()
    assert command.returncode == 130
    said = stderr.decode().strip().splitlines()
    assert said[-1] == "training-pipeline: interrupted"
    assert not any("is cancelling" in line for line in said)  # it had ended when the CLI returned
    with instance_at(home) as instance:
        assert instance.get_run_by_id(runs[0]).status.value == "CANCELED"
    until_gone(str(tmp_path), seconds=30)


def _started_runs(home: Path) -> list[str]:
    if not (home / "dagster.yaml").exists():
        return []
    with instance_at(home) as instance:
        return [run.run_id for run in instance.get_runs() if run.status.value == "STARTED"]


def test_on_an_instance_not_the_projects_the_cli_starts_no_daemon_and_says_so(tmp_path: Path) -> None:
    """A deployment's own instance (DAGSTER_HOME elsewhere) with its daemon down: the CLI does not start
    one there; the run executes in its process and the CLI says the UI cannot re-execute it."""
    home, env = _deployment(tmp_path)
    done = cli(env, "materialize", "--start", "2026-11-24", cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    [note] = [text for text in done.stderr.splitlines() if "ran in this process" in text]
    assert "the CLI starts one only on the project's own instance" in note
    assert not (home / "cli-daemon.log").exists()
