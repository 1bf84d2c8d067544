"""How the CLI runs a job of this code location.

When the CLI runs from the project's folder (`workspace.yaml`), the run is submitted with Dagster's
`dagster job launch`: it carries the code location's origin, so the UI lists it on the job's page and
re-executes it (all steps, or from failure), and it waits in the instance's run queue like any launched
run. If a daemon of the instance has reported within the last minute (as under `make ui`), that daemon
takes it. If none is up and the instance is the project's own (`var/dagster_home`, what `make demo`
uses), the CLI starts Dagster's daemon for the length of the command, on the code location loaded
without its sensors and automation (`RUNS_ONLY`), so that it takes the queued run and starts nothing
else; then stops it. On any other instance (a user's deployment) the CLI starts no daemon there: the
run executes in this process (`execute_job`), recorded and shown but, like any run of Dagster's own
`dagster job execute`, without an origin the UI could re-execute from. The CLI says which.

Either way the CLI waits for the run and reads its results from the instance's event log.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from training_pipeline.environment import runs_only_environment

__all__ = [
    "Finished",
    "LaunchFailed",
    "RunProgress",
    "RunsOnlyDaemon",
    "deployment_is_up",
    "run_job",
]

#: the tag that lets `RunProgress` find the run it follows, before the run has an id it knows
PROGRESS_TAG = "training_pipeline/cli_progress"

#: a daemon whose last heartbeat is older than this is taken for stopped
_HEARTBEAT_SECONDS = 60.0

#: how long a daemon the CLI starts may take to report before the CLI gives up on it
_START_SECONDS = 120.0
#: how long an interrupted CLI waits for its daemon's run to take the cancellation before stopping it
_CANCEL_SECONDS = 10.0


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
    start_daemon: bool = False,
) -> Finished:
    """`job_name` with `tags` and `run_config`: through the deployment when `workspace` is given and a
    daemon is up, or, with `start_daemon` (the instance is the project's own), through a daemon started
    for it (`RunsOnlyDaemon`); else by `in_process()`, which executes the run here and returns its id."""
    if workspace is None or not workspace.is_file():
        return _finished(instance, in_process(), launched=False)
    if deployment_is_up(instance):
        return _finished(instance, _launch(instance, job_name, tags, run_config, workspace), launched=True)
    if not start_daemon:
        return _finished(instance, in_process(), launched=False)
    with RunsOnlyDaemon(instance, workspace) as daemon:
        run_id = _launch(instance, job_name, tags, run_config, workspace, daemon)
    return _finished(instance, run_id, launched=True)


def _launch(
    instance: Any,
    job_name: str,
    tags: Mapping[str, str],
    run_config: Mapping[str, Any],
    workspace: Path,
    daemon: RunsOnlyDaemon | None = None,
) -> str:
    """Submits the run with `dagster job launch` and waits until it has finished; its id. A daemon the
    CLI started loads the code location while the launch does (each is seconds of start-up); if it
    fails to start, or the CLI is interrupted, the run is cancelled (nothing else would take or stop
    it)."""
    run_id = str(uuid.uuid4())
    try:
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
            env=daemon.environment if daemon is not None else None,
        )
        if launch.returncode != 0:
            last = (launch.stderr.strip() or launch.stdout.strip() or "no output").splitlines()[-1]
            raise LaunchFailed(f"dagster job launch {job_name} failed: {last}")
        if daemon is not None:
            daemon.wait_until_reporting()
        _wait_for(instance, run_id)
    except BaseException:
        if daemon is not None and not daemon.cancel(run_id):  # nothing else would take or stop it
            print(
                f"training-pipeline: run {run_id} is cancelling: it stops when its current step returns "
                "(the run's page in the UI shows when)",
                file=sys.stderr,
            )
        raise
    return run_id


class RunsOnlyDaemon:
    """Dagster's `dagster-daemon run` on the workspace, for the length of a `with`, loading the code
    location without sensors and automation (`RUNS_ONLY`): it takes the runs queued on the instance and
    starts nothing of its own. On leaving, the daemon is stopped (`_stop`) and, unless another daemon
    has reported meanwhile, its reports are wiped, so the next command does not take a stopped daemon
    for a running deployment. Its log goes to `$DAGSTER_HOME/cli-daemon.log` (`logs/` there is
    Dagster's telemetry queue); its last line is the error when the daemon fails to start."""

    def __init__(self, instance: Any, workspace: Path) -> None:
        self.instance = instance
        self.workspace = workspace
        self.environment = runs_only_environment()
        self.log_path = Path(instance.root_directory) / "cli-daemon.log"
        self._process: subprocess.Popen[bytes] | None = None
        self._started = 0.0
        self._ours: set[str] = set()
        self._handlers: dict[int, Any] = {}

    def __enter__(self) -> RunsOnlyDaemon:
        """Starts the daemon; `wait_until_reporting` waits for it. Until leaving, SIGTERM and SIGHUP
        (a closed terminal) end the command as Ctrl-C does, so the daemon is not left running."""
        if threading.current_thread() is threading.main_thread():
            for number in (signal.SIGTERM, signal.SIGHUP):
                self._handlers[number] = signal.signal(number, _interrupt)
        self._started = time.time()
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(
                [str(Path(sys.executable).parent / "dagster-daemon"), "run", "-w", str(self.workspace)],
                env=self.environment,
                cwd=self.workspace.parent,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C in the terminal reaches the CLI, which stops it
            )
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._stop()
            beats = self.instance.get_daemon_heartbeats().values()
            if beats and all(beat.daemon_id in self._ours for beat in beats):
                self.instance.wipe_daemon_heartbeats()
        finally:
            for number, handler in self._handlers.items():
                signal.signal(number, handler)

    def cancel(self, run_id: str) -> bool:
        """Cancels the run as the UI's Terminate does (out of the queue, or its launcher interrupts its
        worker) and waits a while for it to end: whether it has. One that has not (a step waiting on a
        subprocess takes the interrupt when it returns) ends on its own after the CLI has gone, with
        its own clean-up (its sandboxes and envs stopped): see `_stop`."""
        run = self.instance.get_run_by_id(run_id)
        if run is None or run.is_finished:
            return True
        self.instance.run_coordinator.cancel_run(run_id)
        deadline = time.monotonic() + _CANCEL_SECONDS
        while time.monotonic() < deadline:
            run = self.instance.get_run_by_id(run_id)
            if run is None or run.is_finished:
                return True
            time.sleep(0.5)
        return False

    def wait_until_reporting(self) -> None:
        """Until the daemon has reported; `LaunchFailed` if it stops first or takes too long."""
        assert self._process is not None
        deadline = time.monotonic() + _START_SECONDS
        while True:
            beats = self.instance.get_daemon_heartbeats().values()
            fresh = [beat for beat in beats if beat.timestamp >= self._started]
            if fresh:
                self._ours = {beat.daemon_id for beat in fresh}
                return
            if self._process.poll() is not None:
                raise LaunchFailed(f"the daemon this command started stopped: {self._last_log_line()}")
            if time.monotonic() > deadline:
                raise LaunchFailed(
                    f"the daemon this command started did not report within {_START_SECONDS:.0f} s "
                    f"(its log: {self.log_path})"
                )
            time.sleep(0.5)

    def _stop(self) -> None:
        """SIGTERM to the daemon alone (SIGKILL after half a minute). Its code server, as Dagster's do,
        stays until the runs it started have ended, then goes (the daemon's shutdown, or its own
        heartbeat timeout): a run still going, this command's cancelled one or another the queue held,
        finishes rather than being killed with a step half done."""
        if self._process is None or self._process.poll() is not None:
            return
        self._process.terminate()
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def _last_log_line(self) -> str:
        lines = self.log_path.read_text("utf-8", errors="replace").strip().splitlines()
        return lines[-1] if lines else f"no output (exit status {self._process.returncode})"


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


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
