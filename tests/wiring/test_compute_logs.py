"""The instances' compute logs (`dagster.yaml`, `deploy/dagster.yaml`;
resources/instance_storage/compute_logs.py): a run's output is in the files the UI shows and on the
process's own output, to its last line, without a process started to mirror it."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from dagster import DagsterInstance

from resources.instance_storage import compute_logs
from resources.instance_storage.compute_logs import ThreadMirroredComputeLogManager, mirrored
from tests.helpers import REPO

_RUN = """
import os, sys
from pathlib import Path
from dagster import DagsterInstance, job, op

def children() -> list[str]:
    tasks = Path("/proc/self/task")
    return sorted(c for t in tasks.iterdir() for c in (t / "children").read_text().split())

@op
def talk() -> None:
    print("first line of the step", flush=True)
    print("children while captured:", len(children()), flush=True)
    os.system("echo a line from a child process")
    print("last line of the step", flush=True)

@job
def talking() -> None:
    talk()

result = talking.execute_in_process(instance=DagsterInstance.get())
print("RUN", result.run_id, flush=True)
"""


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_run_s_output_is_in_its_log_files_and_mirrored_to_its_last_line_by_no_process(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # the README's instance, or the production one (a DAGSTER_HOME and its variables set)
    home = request.getfixturevalue("home" if kind == "sqlite" else "production_home")
    done = subprocess.run(
        [sys.executable, "-c", _RUN],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=True,
    )
    lines = ("first line of the step", "a line from a child process", "last line of the step")
    for line in lines:
        assert done.stdout.count(line) == 1, done.stdout
    # Dagster's local manager has a `tail` and a Python watcher running for each stream by then
    assert "children while captured: 0" in done.stdout

    run_id = done.stdout.split("RUN ")[1].split()[0]
    instance = DagsterInstance.from_config(str(home))
    try:
        manager = instance.compute_log_manager
        assert isinstance(manager, ThreadMirroredComputeLogManager)
        folder = home / "storage" if kind == "sqlite" else tmp_path / "shared"
        (captured,) = [
            event.dagster_event.logs_captured_data
            for event in instance.all_logs(run_id)
            if event.dagster_event is not None and event.dagster_event.event_type_value == "LOGS_CAPTURED"
        ]
        log_key = manager.build_log_key_for_run(run_id, captured.file_key)
        assert manager.is_capture_complete(log_key)
        assert Path(manager.get_log_metadata(log_key).stdout_location or "").is_relative_to(folder)
        shown = (manager.get_log_data(log_key).stdout or b"").decode()  # what the UI shows
        for line in lines:
            assert shown.count(line) == 1, shown
    finally:
        instance.dispose()


def test_a_mirror_nobody_reads_does_not_hold_up_the_end_and_the_file_keeps_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(compute_logs, "FINISH_SECONDS", 0.3)
    read_end, write_end = os.pipe()  # its reader never reads until the capture is over
    stream = os.fdopen(write_end, "w")
    path = tmp_path / "out.log"
    lines = [f"line {n} " + "x" * 90 + "\n" for n in range(20_000)]  # 2 MB, far over a pipe's buffer
    started = time.monotonic()
    with mirrored(stream, str(path)):
        stream.writelines(lines)
    assert time.monotonic() - started < 10
    assert path.read_text() == "".join(lines)

    received = bytearray()
    reader = threading.Thread(target=lambda: received.extend(_read_all(read_end)))
    reader.start()
    stream.close()
    reader.join(30)
    assert received.decode() == "".join(lines)  # the mirror caught up once read, and then let go


def _read_all(descriptor: int) -> bytes:
    """Everything until every writer has closed the pipe (the mirror closes its copy when done)."""
    chunks = []
    while chunk := os.read(descriptor, 1 << 16):
        chunks.append(chunk)
    os.close(descriptor)
    return b"".join(chunks)
