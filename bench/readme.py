"""A bench's figures in bench/README.md: each bench owns the text between its two markers and rewrites
it with `--write`, so the README holds the current figures and git holds their history."""

from __future__ import annotations

import os
import platform
import statistics
from datetime import date
from pathlib import Path

README = Path(__file__).with_name("README.md")


def machine() -> str:
    """The machine a figure was measured on, said the same way in every table."""
    return f"{os.cpu_count()} cores, Python {platform.python_version()}, {date.today().isoformat()}"


def spread(values: list[float]) -> str:
    """Seconds as the tables give them: the median, then (min–max)."""
    return f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})"


def _bounds(readme: str, name: str) -> tuple[int, int]:
    """Where the text between `<!-- name:begin -->` and `<!-- name:end -->` starts and stops."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    if begin not in readme or end not in readme:
        raise SystemExit(f"bench/README.md has no {begin} … {end} section")
    return readme.index(begin) + len(begin), readme.index(end)


def read_section(name: str) -> str:
    """What stands between the markers of `name` now ("" when the section is empty)."""
    readme = README.read_text(encoding="utf-8")
    start, stop = _bounds(readme, name)
    return readme[start:stop].strip()


def write_section(name: str, text: str) -> None:
    """Replace what stands between `<!-- name:begin -->` and `<!-- name:end -->`."""
    readme = README.read_text(encoding="utf-8")
    start, stop = _bounds(readme, name)
    README.write_text(readme[:start] + "\n" + text.strip() + "\n" + readme[stop:], encoding="utf-8")
