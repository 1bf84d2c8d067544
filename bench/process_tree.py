"""The memory of a process and everything it started, for the benchmarks: summed RSS or PSS from /proc;
and a command timed with it. A tree's memory is its PSS summed: forked workers share their parent's (or
fork server's) pages, which summed RSS would count once per process."""

from __future__ import annotations

import ctypes
import os
import resource
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

#: prctl(2): this process adopts its descendants' orphans instead of init
_PR_SET_CHILD_SUBREAPER = 36


def tree(pid: int) -> list[int]:
    """`pid` and its descendants (workers of a pool, a fork server's children), alive now."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [pid, *(p for child in children for p in tree(int(child)))]


def _field_kb(path: str, field: str) -> int:
    """A `field:  N kB` line of a /proc file, 0 when the process has gone."""
    try:
        text = Path(path).read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in text.splitlines() if line.startswith(field)), 0)


def rss_kb(pid: int) -> int:
    return _field_kb(f"/proc/{pid}/status", "VmRSS:")


def pss_kb(pid: int) -> int:
    """Proportional set size: shared pages (a fork server's imports, copy-on-write after fork) split
    between the processes sharing them, so a tree's sum counts each page once."""
    return _field_kb(f"/proc/{pid}/smaps_rollup", "Pss:")


@dataclass
class Peaks:
    """The peaks of a process tree's memory, in kB, as often as `sample` is called: summed RSS and the
    largest process's RSS each time; summed PSS every `pss_interval` seconds, and sooner when the summed
    RSS has grown by a twentieth since the last PSS read (a short peak). Reading a process's
    `smaps_rollup` costs milliseconds of CPU, which reading it every 50 ms would take from the command
    measured, on the same cores."""

    pid: int
    pss_interval: float = 0.5
    rss_kb: int = 0
    largest_kb: int = 0
    pss_kb: int = 0
    _next_pss: float = 0.0
    _rss_at_pss: int = 0

    def sample(self) -> None:
        processes = tree(self.pid)
        sizes = [rss_kb(p) for p in processes]
        total = sum(sizes)
        self.rss_kb = max(self.rss_kb, total)
        self.largest_kb = max(self.largest_kb, *sizes, 0)
        now = time.monotonic()
        if now >= self._next_pss or total > self._rss_at_pss * 1.05:
            self.pss_kb = max(self.pss_kb, sum(pss_kb(p) for p in processes))
            self._next_pss = now + self.pss_interval
            self._rss_at_pss = total


def timed(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system of the process and of every descendant: a fork server's
    workers, reaped by it after the process has gone, are adopted and reaped here) and the peak PSS in
    MB of the process tree, sampled every 50 ms."""
    adopt_orphans()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peaks = Peaks(proc.pid)
    while True:
        pid, status, _ = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        peaks.sample()
        time.sleep(0.05)
    wall = time.perf_counter() - started
    reap_orphans()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{' '.join(command)} in {cwd} failed: {proc.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
    return wall, cpu, peaks.pss_kb / 1024


def adopt_orphans() -> None:
    """Make this process the reaper of its descendants' orphans (Linux). A pool's fork server outlives
    the process that started it by a moment, and it, not that process, reaps the workers: without this,
    their CPU time is in no one's `RUSAGE_CHILDREN` here. With it, `reap_orphans` collects them."""
    if ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def reap_orphans() -> None:
    """Wait for every child of this process (orphans adopted by `adopt_orphans` included) to end."""
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return
