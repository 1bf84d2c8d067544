"""How the CLI runs a job of this code location.

When the deployment is up (a daemon of this instance has reported within the last minute, as under
`make ui`) and the CLI runs from the project's folder (`workspace.yaml`), the run is submitted through
it with Dagster's `dagster job launch`: it carries the code location's origin, so the UI lists it on
the job's page and re-executes it (all steps, or from failure), and it waits in the instance's run
queue like any launched run. Otherwise the run executes in this process (`execute_job`): it is recorded
in the instance and shown, but, like any run of Dagster's own `dagster job execute`, without an origin
the UI could re-execute from. The CLI says which.

Either way the CLI waits for the run and reads its results from the instance's event log.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Finished", "LaunchFailed", "RunProgress", "deployment_is_up", "run_job"]

#: the tag that lets `RunProgress` find the run it follows, before the run has an id it knows
PROGRESS_TAG = "training_pipeline/cli_progress"

#: a daemon whose last heartbeat is older than this is taken for stopped
_HEARTBEAT_SECONDS = 60.0


class LaunchFailed(RuntimeError):
    """The deployment did not take or start the run (the CLI says so in one line)."""


@dataclass(frozen=True)
class Finished:
    run_id: str
    success: bool
    #: the run's asset materialisations and check evaluations (`AssetMaterialization`,
    #: `AssetCheckEvaluation`), in the order they were recorded
    materializations: list[Any]
    check_evaluations: list[Any]
    #: whether the run went through the deployment (it has the code location's origin)
    launched: bool
    #: what made the run fail, in one line: the first failed step and its error's root cause (None: it
    #: did not fail, or the log says nothing)
    failure: str | None = None


def deployment_is_up(instance: Any) -> bool:
    heartbeats = instance.get_daemon_heartbeats()
    newest = max((beat.timestamp for beat in heartbeats.values()), default=0.0)
    return time.time() - newest < _HEARTBEAT_SECONDS


def run_job(
    instance: Any,
    job_name: str,
    *,
    tags: Mapping[str, str],
    run_config: Mapping[str, Any],
    workspace: Path | None,
    in_process: Any,
) -> Finished:
    """`job_name` with `tags` and `run_config`: through the deployment when it is up and `workspace`
    is given, else by `in_process()` (which executes the run here and returns its run id)."""
    if workspace is not None and workspace.is_file() and deployment_is_up(instance):
        run_id = str(uuid.uuid4())
        launch = subprocess.run(
            [
                str(Path(sys.executable).parent / "dagster"),
                "job",
                "launch",
                "-w",
                str(workspace),
                "-j",
                job_name,
                "--tags",
                json.dumps(dict(tags)),
                "--config-json",
                json.dumps(dict(run_config)),
                "--run-id",
                run_id,
            ],
            capture_output=True,
            text=True,
        )
        if launch.returncode != 0:
            last = (launch.stderr.strip() or launch.stdout.strip() or "no output").splitlines()[-1]
            raise LaunchFailed(f"dagster job launch {job_name} failed: {last}")
        _wait_for(instance, run_id)
        launched = True
    else:
        run_id = in_process()
        launched = False
    return _finished(instance, run_id, launched)


def _wait_for(instance: Any, run_id: str) -> None:
    """Until the run has finished; a run left in the queue by a daemon that stopped reporting is an
    error, not a wait without end."""
    from dagster import DagsterRunStatus

    while not (run := instance.get_run_by_id(run_id)) or not run.is_finished:
        if run is not None and run.status == DagsterRunStatus.QUEUED and not deployment_is_up(instance):
            raise LaunchFailed(
                f"run {run_id} is queued and no daemon of this instance is up to start it; start one "
                "(`make ui`) and it runs, or cancel it in the UI"
            )
        time.sleep(0.5)


class RunProgress(threading.Thread):
    """Prints what a run says as it goes: its steps' own log lines (the day built, the round scored,
    the step of a task run), one line each, as they land in the instance's event log; Dagster's
    events and tracebacks are left to the run's page (and `--verbose`). Follows the run tagged
    `PROGRESS_TAG: key`, however it was started (in this process or through the deployment), on an
    instance of its own (the caller's is busy in another thread)."""

    def __init__(self, key: str, write: Any = None, interval: float = 0.5) -> None:
        super().__init__(name="run-progress", daemon=True)
        self.key = key
        self.interval = interval
        self._write = write or (lambda line: print(line, file=sys.stderr, flush=True))
        self._done = threading.Event()

    def __enter__(self) -> RunProgress:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self.join(timeout=10)

    def run(self) -> None:
        from dagster import DagsterInstance, RunsFilter

        try:
            with DagsterInstance.get() as instance:
                run_id: str | None = None
                cursor: str | None = None
                while True:
                    stopping = self._done.is_set()  # read first: a last pass after the run ended
                    if run_id is None:
                        runs = instance.get_runs(filters=RunsFilter(tags={PROGRESS_TAG: self.key}), limit=1)
                        run_id = runs[0].run_id if runs else None
                    if run_id is not None:
                        page = instance.get_records_for_run(run_id, cursor=cursor)
                        cursor = page.cursor
                        for record in page.records:
                            entry = record.event_log_entry
                            if _said_by_the_run(entry):
                                where = f"{entry.step_key}: " if entry.step_key else ""
                                self._write(f"  {where}{entry.user_message.strip().splitlines()[0]}")
                    if stopping:
                        return
                    self._done.wait(self.interval)
        except Exception as err:  # progress is a courtesy: the run's result is read elsewhere
            self._write(f"  (progress stopped: {type(err).__name__})")


#: what Dagster itself logs about a range run whose checks are reported per day (`AssetCheckEvaluation`
#: with a partition, not as outputs): true of every such run, and nothing for a user to act on
_CHECKS_AS_EVALUATIONS = re.compile(r"^op '[^']+' did not yield or return expected outputs")


def _said_by_the_run(entry: Any) -> bool:
    """A log line of the run's own (INFO or more), not one of Dagster's events."""
    if entry.dagster_event is not None or entry.level < 20 or not entry.user_message:
        return False
    return _CHECKS_AS_EVALUATIONS.match(entry.user_message) is None


def _finished(instance: Any, run_id: str, launched: bool) -> Finished:
    from dagster import DagsterEventType, DagsterRunStatus

    run = instance.get_run_by_id(run_id)
    materializations, evaluations = [], []
    for entry in instance.all_logs(
        run_id, of_type={DagsterEventType.ASSET_MATERIALIZATION, DagsterEventType.ASSET_CHECK_EVALUATION}
    ):
        event = entry.dagster_event
        if event.event_type == DagsterEventType.ASSET_MATERIALIZATION:
            materializations.append(entry.asset_materialization)
        else:
            evaluations.append(event.event_specific_data)
    success = run is not None and run.status == DagsterRunStatus.SUCCESS
    failure = None if success else _failure(instance, run_id)
    return Finished(run_id, success, materializations, evaluations, launched, failure)


def _failure(instance: Any, run_id: str) -> str | None:
    """The first step failure's root cause (`step: Type: message`), else the run failure's message."""
    from dagster import DagsterEventType

    for entry in instance.all_logs(
        run_id, of_type={DagsterEventType.STEP_FAILURE, DagsterEventType.RUN_FAILURE}
    ):
        event = entry.dagster_event
        error = getattr(event.event_specific_data, "error", None)
        if error is not None:
            while error.cause is not None:  # Dagster wraps what the step raised; say what it raised
                error = error.cause
            text = error.message.strip().splitlines()[0] if error.message.strip() else error.cls_name
            text = text.removeprefix("dagster._core.definitions.events.")
            return f"{event.step_key}: {text}" if event.step_key else text
        if event.event_type == DagsterEventType.RUN_FAILURE and entry.message:
            return entry.message.strip().splitlines()[0]
    return None
