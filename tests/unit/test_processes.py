"""Stopping a process group the pipeline started: the whole group, not only its leader."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path

from tests.helpers import until_gone
from training_pipeline.processes import stop_process_group


def test_stopping_a_group_ends_a_member_that_outlives_its_leader(tmp_path: Path) -> None:
    """A leader that exits at SIGTERM at once (the sandbox's launcher does) and a member that ignores
    it (a server slow to stop, or task code): once the grace period is over, nothing of the group is
    left."""
    marker = f"stubborn-{uuid.uuid4().hex}"
    ready = tmp_path / "ignoring"
    member = (
        "import pathlib, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        f"pathlib.Path({str(ready)!r}).touch(); time.sleep(60)  # {marker}"
    )
    leader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, subprocess, sys, time\n"
            f"subprocess.Popen([sys.executable, '-c', {member!r}])\n"
            "signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))\n"
            "time.sleep(60)\n",
        ],
        start_new_session=True,
    )
    deadline = time.monotonic() + 20
    while not ready.exists():  # the member ignores SIGTERM from here on
        assert time.monotonic() < deadline
        time.sleep(0.05)
    started = time.monotonic()
    assert stop_process_group(leader.pid, grace_seconds=1)
    assert time.monotonic() - started < 10
    assert leader.poll() is not None
    until_gone(marker, seconds=5)  # SIGKILLed: gone once the kernel has torn it down
