"""Stopping a process group the pipeline started: the whole group, not only its leader."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path

from tests.helpers import command_lines, until_gone
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


def test_a_sandbox_owned_by_the_run_outlives_the_step_that_started_it_and_ends_with_the_run(
    tmp_path: Path,
) -> None:
    """A step process of the multiprocess executor starts an env for later steps (`lifeline="parent"`)
    and exits: the env serves on while the run's process lives, and ends when that is killed."""
    marker = f"env-of-the-run-{uuid.uuid4().hex}"
    (tmp_path / "step.py").write_text(
        "import subprocess, sys\nfrom pathlib import Path\nfrom training_pipeline.sandbox import Sandbox\n"
        f"env = Sandbox(Path({str(tmp_path / 'env')!r})).spawn([sys.executable, '-c', "
        f"'import time; print(1, flush=True); time.sleep(120)  # {marker}'], lifeline='parent', "
        "stdout=subprocess.PIPE)\n"
        "env.stdout.readline()  # it serves, as `start_env` waits for\n"
    )
    (tmp_path / "run.py").write_text(
        "import subprocess, sys, time\n"
        f"subprocess.run([sys.executable, {str(tmp_path / 'step.py')!r}], check=True)\n"
        f"open({str(tmp_path / 'step-done')!r}, 'w').close()\ntime.sleep(120)\n"
    )
    run = subprocess.Popen([sys.executable, str(tmp_path / "run.py")])
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "step-done").exists() or not command_lines(marker):
            assert run.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        time.sleep(1)  # the step's process is gone: the env is not
        assert command_lines(marker)
    finally:
        run.kill()
        run.wait()
    until_gone(marker, seconds=10)
