"""`dagster-webserver` and `dagster-daemon` as real processes on 127.0.0.1 for end-to-end tests.

Each starts in its own session (a non-interactive shell's children ignore SIGINT/SIGTERM otherwise), and
stopping signals the whole process group: the daemon's and the webserver's own children go too.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
from dagster import DagsterInstance

from training_pipeline.processes import stop_process_group

BIN = Path(sys.executable).parent
WORKSPACE = Path(__file__).resolve().parents[1] / "workspace.yaml"
LOCATIONS = """{ workspaceOrError { ... on Workspace { locationEntries {
  loadStatus locationOrLoadError { __typename ... on PythonError { message } } } } } }"""


def pipeline_free_env(*more_prefixes: str) -> dict[str, str]:
    """This process's environment without the pipeline's own settings, so the processes a test starts
    see only what the test sets for them."""
    prefixes = ("TRAINING_PIPELINE_", "LLM_", "TRAJECTORY_", *more_prefixes)
    return {key: value for key, value in os.environ.items() if not key.startswith(prefixes)}


@contextlib.contextmanager
def instance_at(home: Path) -> Iterator[DagsterInstance]:
    """The instance the CLI and the servers use at `home`, opened as they open it (its dagster.yaml
    reads DAGSTER_HOME, set while it is open)."""
    previous = os.environ.get("DAGSTER_HOME")
    os.environ["DAGSTER_HOME"] = str(home)
    try:
        with DagsterInstance.get() as instance:
            yield instance
    finally:
        if previous is None:
            del os.environ["DAGSTER_HOME"]
        else:
            os.environ["DAGSTER_HOME"] = previous


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class DagsterServers:
    def __init__(self, home: Path, env: dict[str, str], logs: Path, webserver: bool = True) -> None:
        self.home = home
        self.env = {**env, "DAGSTER_HOME": str(home)}
        self.logs = logs
        self.port = free_port()
        self.webserver = webserver
        self.processes: list[subprocess.Popen[bytes]] = []
        self.daemon: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _start(self, name: str, *command: str) -> subprocess.Popen[bytes]:
        log = (self.logs / f"{name}.log").open("ab")
        process = subprocess.Popen(
            [str(BIN / command[0]), *command[1:]],
            env=self.env,
            cwd=self.home,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.processes.append(process)
        log.close()
        return process

    def _create_storage(self) -> None:
        """Open the instance once here before any server starts, so its SQLite schemas are created and
        stamped by one process: the daemon and the code server it starts (or the webserver) can
        otherwise create a fresh schema at once and both stamp its migration version, after which
        the instance refuses to load ("alembic_version has more than one head")."""
        with instance_at(self.home):
            pass

    def start(self, timeout: float = 120.0) -> DagsterServers:
        self.logs.mkdir(parents=True, exist_ok=True)
        self._create_storage()
        if not self.webserver:
            self.start_daemon()
            return self
        self._start(
            "webserver", "dagster-webserver", "-h", "127.0.0.1", "-p", str(self.port), "-w", str(WORKSPACE)
        )
        try:
            self._wait_for_location(timeout)
        except BaseException:
            self.stop()  # a server that failed to come up is still stopped, children included
            raise
        self.start_daemon()
        return self

    def _wait_for_location(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for process in self.processes:
                if process.poll() is not None:
                    raise RuntimeError(f"a Dagster server exited early; see {self.logs}")
            try:
                if self._location_loaded():
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"dagster-webserver did not answer within {timeout:.0f}s; see {self.logs}")

    def _location_loaded(self) -> bool:
        """True once the code location is loaded (the webserver answers well before that)."""
        answer = httpx.post(f"{self.url}/graphql", json={"query": LOCATIONS}, timeout=5)
        if not answer.is_success:
            return False
        entries = answer.json()["data"]["workspaceOrError"]["locationEntries"]
        for entry in entries:
            loaded = entry["locationOrLoadError"]
            if loaded and loaded["__typename"] == "PythonError":
                raise RuntimeError(f"the code location failed to load: {loaded['message']}")
        return bool(entries) and all(
            e["loadStatus"] == "LOADED" and e["locationOrLoadError"] for e in entries
        )

    def start_daemon(self) -> None:
        self.daemon = self._start("daemon", "dagster-daemon", "run", "-w", str(WORKSPACE))

    def restart_daemon(self) -> None:
        """Stop the daemon (its whole group) and start a new one on the same instance."""
        if self.daemon is not None:
            _stop([self.daemon])
            self.processes.remove(self.daemon)
        self.start_daemon()

    def graphql(self, query: str, variables: dict | None = None) -> dict:
        answer = httpx.post(
            f"{self.url}/graphql", json={"query": query, "variables": variables or {}}, timeout=30
        )
        if answer.status_code == 400:  # a query the schema refuses: say why
            raise RuntimeError(answer.text[:2000])
        answer.raise_for_status()
        payload = answer.json()
        if payload.get("errors"):
            raise RuntimeError(payload["errors"])
        return payload["data"]

    def stop(self) -> None:
        _stop(self.processes)
        self.processes.clear()

    def __enter__(self) -> DagsterServers:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        stop_process_group(process.pid, grace_seconds=20)
