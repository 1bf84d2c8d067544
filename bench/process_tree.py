"""The memory of a process and everything it started, for the benchmarks: summed RSS from /proc."""

from __future__ import annotations

from pathlib import Path


def tree(pid: int) -> list[int]:
    """`pid` and its descendants (workers of a pool, a fork server's children), alive now."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [pid, *(p for child in children for p in tree(int(child)))]


def rss_kb(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)


def tree_rss_kb(pid: int) -> int:
    return sum(rss_kb(p) for p in tree(pid))


def pss_kb(pid: int) -> int:
    """Proportional set size: shared pages (a fork server's imports, copy-on-write after fork) split
    between the processes sharing them, so a tree's sum counts each page once."""
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:")), 0)


def tree_pss_kb(pid: int) -> int:
    return sum(pss_kb(p) for p in tree(pid))
