"""Stopping the processes the pipeline starts in their own session (envs, the local model)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time


def stop_process_group(pid: int, grace_seconds: float = 5.0) -> bool:
    """SIGTERM the group `pid` leads, SIGKILL after the grace period; False when it was already gone.
    A leader that is this process's child is reaped, so it does not linger as a zombie."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + grace_seconds
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:  # started by another process of the run: poll the group instead
            try:
                os.killpg(pid, 0)
            except ProcessLookupError:
                return True
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
    return True


async def astop_process_group(pid: int) -> bool:
    """`stop_process_group` off the event loop."""
    return await asyncio.to_thread(stop_process_group, pid)
