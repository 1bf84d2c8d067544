"""Stopping the processes the pipeline starts in their own session (envs, the local model), and the
lifelines that end them with the process that started them.

A lifeline is a pipe whose writing end only the starting process holds (close-on-exec, so no other
child inherits it) and whose reading end the started process's launcher watches (`sandbox/inside.py`):
when the starter dies, however (`kill -9`, the OOM killer), the kernel closes the writing end, the
launcher sees the pipe hang up and ends its process group. Stopping the process cuts it too.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

#: a lifeline's reading end is moved at or above this, clear of the descriptors a launcher's shell
#: opens for itself (the sandbox's seccomp program is descriptor 3)
_LIFELINE_FLOOR = 10
#: started process -> the writing end of its lifeline, held until `cut_lifeline`
_LIFELINES: dict[int, int] = {}
_LIFELINES_LOCK = threading.Lock()


class _Started(Protocol):
    pid: int


_Process = TypeVar("_Process", bound=_Started)


@contextlib.contextmanager
def lifeline_for(
    wanted: bool, popen: dict[str, Any]
) -> Iterator[tuple[int | None, Callable[[_Process], _Process]]]:
    """For a process about to start with `popen` (its keyword arguments, given the reading end to pass
    on): the reading end's descriptor for its launcher's command line, and a function that keeps the
    writing end for the process it is given; (None, the identity) when no lifeline is wanted. When the
    process does not start, both ends are closed; the reading end always is, once the child has it."""
    if not wanted:
        yield None, lambda process: process
        return
    reading, writing = os.pipe()
    moved = fcntl.fcntl(reading, fcntl.F_DUPFD_CLOEXEC, _LIFELINE_FLOOR)
    os.close(reading)
    popen["pass_fds"] = (*popen.get("pass_fds", ()), moved)

    held: list[int] = []

    def hold(process: _Process) -> _Process:
        with _LIFELINES_LOCK:
            _LIFELINES[process.pid] = writing
        held.append(process.pid)
        return process

    try:
        yield moved, hold
    except BaseException:
        if not held:  # the process did not start: nothing holds the writing end for it
            os.close(writing)
        raise
    finally:
        os.close(moved)


def cut_lifeline(pid: int) -> None:
    """Close the lifeline of the process `pid`, if this process holds one: it ends (or has ended)."""
    with _LIFELINES_LOCK:
        writing = _LIFELINES.pop(pid, None)
    if writing is not None:
        os.close(writing)


def stop_process_group(pid: int, grace_seconds: float = 5.0) -> bool:
    """SIGTERM the group `pid` leads, SIGKILL after the grace period; False when it was already gone.
    A leader that is this process's child is reaped, so it does not linger as a zombie. Its lifeline,
    if it has one, is cut."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        cut_lifeline(pid)
        return False
    try:
        _wait_for_group(pid, grace_seconds)
    finally:
        cut_lifeline(pid)
    return True


def _wait_for_group(pid: int, grace_seconds: float) -> None:
    """Until every process of the group has gone (its leader reaped when it is this process's child),
    then SIGKILL what is left after the grace period. The whole group, not only its leader: a
    launcher that leads it (`sandbox/inside.py`) exits at SIGTERM at once, before what it runs."""
    deadline = time.monotonic() + grace_seconds
    reaped = False
    while time.monotonic() < deadline:
        if not reaped:
            try:
                reaped = os.waitpid(pid, os.WNOHANG)[0] == pid
            except ChildProcessError:  # started by another process of the run: only the group is seen
                reaped = True
        if reaped:
            try:
                os.killpg(pid, 0)
            except ProcessLookupError:
                return
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    if not reaped:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


async def astop_process_group(pid: int) -> bool:
    """`stop_process_group` off the event loop."""
    return await asyncio.to_thread(stop_process_group, pid)
