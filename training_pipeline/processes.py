"""Stopping the processes the pipeline starts in their own session (envs, the local model), and the
lifelines that end them with the process that owns them.

A lifeline is a descriptor the started process's launcher watches (`sandbox/inside.py`), which ends its
process group when the descriptor reports its owner gone, however the owner died (`kill -9`, the OOM
killer): the kernel, not the owner, says so. Two owners (`Owner`):

- `"starter"`, the process that starts it: a pipe whose writing end only the starter holds
  (close-on-exec, so no other child inherits it); the kernel closes it when the starter dies and the
  pipe hangs up. Stopping the process cuts it too (`cut_lifeline`).
- `"parent"`, the starter's parent: a pidfd of it, readable once it has exited. For what a step
  process of Dagster's multiprocess executor starts for the rest of its run (envs, the local model):
  that process ends with its step, the run's process (its parent) with the run.
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
from typing import Any, Literal, Protocol, TypeVar

#: a lifeline's reading end is moved at or above this, clear of the descriptors a launcher's shell
#: opens for itself (the sandbox's seccomp program is descriptor 3)
_LIFELINE_FLOOR = 10
#: started process -> the writing end of its lifeline, held until `cut_lifeline`
_LIFELINES: dict[int, int] = {}
_LIFELINES_LOCK = threading.Lock()
#: whose death ends a started process (see the module's docstring)
Owner = Literal["starter", "parent"]


class _Started(Protocol):
    pid: int


_Process = TypeVar("_Process", bound=_Started)


@contextlib.contextmanager
def lifeline_for(
    owner: Owner | None, popen: dict[str, Any]
) -> Iterator[tuple[int | None, Callable[[_Process], _Process]]]:
    """For a process about to start with `popen` (its keyword arguments, given the descriptor to pass
    on): the descriptor's number for its launcher's command line, and a function to call with the
    started process (a starter's lifeline keeps the pipe's writing end for it); (None, the identity)
    when `owner` is None. When the process does not start, a starter's pipe is closed; the passed
    descriptor always is, once the child has it."""
    if owner is None:
        yield None, lambda process: process
        return
    if owner == "parent":
        with _passed(_parent_pidfd(), popen) as passed:
            yield passed, lambda process: process
        return
    reading, writing = os.pipe()
    held: list[int] = []

    def hold(process: _Process) -> _Process:
        with _LIFELINES_LOCK:
            _LIFELINES[process.pid] = writing
        held.append(process.pid)
        return process

    try:
        with _passed(reading, popen) as passed:
            yield passed, hold
    except BaseException:
        if not held:  # the process did not start: nothing holds the writing end for it
            os.close(writing)
        raise


@contextlib.contextmanager
def _passed(descriptor: int, popen: dict[str, Any]) -> Iterator[int]:
    """`descriptor` moved at or above `_LIFELINE_FLOOR` and added to `popen`'s `pass_fds`; closed here
    at the end (the child has its own copy)."""
    try:
        moved = fcntl.fcntl(descriptor, fcntl.F_DUPFD_CLOEXEC, _LIFELINE_FLOOR)
    finally:
        os.close(descriptor)
    popen["pass_fds"] = (*popen.get("pass_fds", ()), moved)
    try:
        yield moved
    finally:
        os.close(moved)


def _parent_pidfd() -> int:
    """A pidfd of this process's parent, which must still be the process that started this one."""
    parent = os.getppid()
    pidfd = os.pidfd_open(parent)
    if os.getppid() != parent:  # it died before the pidfd was made: the pid may be another's now
        os.close(pidfd)
        raise RuntimeError("the run's process has ended: nothing is started for it")
    return pidfd


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
