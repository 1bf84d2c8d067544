"""Control groups for a sandbox: one `pids` and one `memory` group per confined process tree, so the
limits hold for the whole tree (every process, and the `/dev/shm` pages it fills), not per process.
Each group is named after the PID of the sandbox's first process, so whichever process sees the
sandbox end (the one that started it, or a later step of the run) can remove it.

Only root can make them, and only where the host lets it: cgroup v1's `pids` and `memory` hierarchies,
or v2 with the controllers enabled for the pipeline's own group. Elsewhere the per-process limits
(`inside.py`: `RLIMIT_AS`, `RLIMIT_NPROC`) are what holds, and the code location warns when it loads
as root without them. A group is removed when its process tree has ended (`release`); groups left by a
pipeline that was killed are swept once empty (`sweep`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shlex
import time
from pathlib import Path

__all__ = ["available", "join_steps", "release", "sweep"]

PREFIX = "training_pipeline-"
#: an empty group older than this is left over (a new one is filled within milliseconds of being made)
_STALE_SECONDS = 10
_MB = 1024 * 1024


@functools.cache
def _roots() -> dict[str, Path]:
    """Controller → the folder where this process may make groups with it."""
    if os.geteuid() != 0:
        return {}
    candidates = [Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup/memory")]
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                candidates.append(Path("/sys/fs/cgroup") / line[3:].lstrip("/"))
    found: dict[str, Path] = {}
    for candidate in candidates:
        probe = candidate / f"{PREFIX}probe-{os.getpid()}"
        try:
            probe.mkdir()
        except OSError:
            continue
        try:
            if "pids" not in found and (probe / "pids.max").exists():
                found["pids"] = candidate
            if "memory" not in found and any(
                (probe / name).exists() for name in ("memory.max", "memory.limit_in_bytes")
            ):
                found["memory"] = candidate
        finally:
            with contextlib.suppress(OSError):
                probe.rmdir()
    return found


def available() -> frozenset[str]:
    """The controllers a sandbox gets a group of (`pids`, `memory`), here and now."""
    return frozenset(_roots())


def join_steps(processes: int, memory_mb: int) -> list[str]:
    """Shell steps that make the groups of the shell's own process (named after its PID, `$$`), set
    these limits (0: that controller is not limited) and move the shell into them; the shell then
    becomes the sandbox (`exec`), so the groups are found again from the sandbox's PID (`release`),
    by whichever process sees it end."""
    sweep()
    wanted = {"pids": processes, "memory": memory_mb}
    steps: list[str] = []
    made: set[Path] = set()
    for controller, root in _roots().items():
        if not wanted[controller]:
            continue
        group = f"{shlex.quote(str(root))}/{PREFIX}$$"  # `$$` left for the shell
        if root not in made:
            made.add(root)
            steps.append(f"mkdir {group}")
        if controller == "pids":
            steps.append(f"echo {processes} > {group}/pids.max")
        else:
            steps += _memory_steps(root, group, memory_mb * _MB)
    for root in made:
        steps.append(f"echo $$ > {shlex.quote(str(root))}/{PREFIX}$$/cgroup.procs")
    return steps


def _memory_steps(root: Path, group: str, limit: int) -> list[str]:
    if (root / "memory.max").exists() or not (root / "memory.limit_in_bytes").exists():  # v2
        return [f"echo {limit} > {group}/memory.max", f"{{ echo 0 > {group}/memory.swap.max || true; }}"]
    return [  # v1: memory and swap together, where the kernel accounts swap
        f"echo {limit} > {group}/memory.limit_in_bytes",
        f"{{ echo {limit} > {group}/memory.memsw.limit_in_bytes 2>/dev/null || true; }}",
    ]


def release(pid: int) -> None:
    """Remove the groups of the sandbox whose first process was `pid`, once it has ended (a group
    still in use stays, and is swept later)."""
    for root in set(_roots().values()):
        with contextlib.suppress(OSError):
            (root / f"{PREFIX}{pid}").rmdir()


def sweep() -> None:
    """Remove empty groups left by sandboxes whose pipeline process was killed."""
    now = time.time()
    for root in set(_roots().values()):
        for group in root.glob(f"{PREFIX}*"):
            with contextlib.suppress(OSError):
                if now - group.stat().st_mtime > _STALE_SECONDS:
                    group.rmdir()
