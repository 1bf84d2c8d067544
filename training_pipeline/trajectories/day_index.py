"""Which days an export file's records can belong to, so that a day's pass opens only the files that can
hold that day.

Without it every day's pass reads every export file and keeps its own day's records: a folder that
keeps a year of daily exports costs each nightly run a year of parsing, and a backfill over it the
square of that. A record's day is the UTC day of its top-level `"startTime"` number, or its file's
fallback day (`files.fallback_day`) when it has none that parses; so a file's days are read from its
bytes without parsing JSON: the day of every `"startTime"` number in it, and its fallback day.

The set must never miss a day a record is kept under, so the scan gives up (the file is read for every
day) wherever its bytes could say something the parser reads differently: a `"startTime"` key not
followed by a plain decimal number (a string, an exponent, a sign, `Infinity`), or any `\\u` escape of
a letter of `startTime` (a key spelled with escapes is the same key to the parser). Extra days (a
nested `startTime`, one quoted inside a prompt) only cost a read. A fraction of a millisecond can round
a start time into the next day, so a number with one counts both days.

What a scan found is remembered per file by path, size and modification time in the cache folder, as
`earliest.py` remembers first days, so a file is scanned once until it changes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import mmap
import re
from datetime import date
from pathlib import Path

from training_pipeline.atomic import atomic_write_text
from training_pipeline.environment import cache_dir
from training_pipeline.trajectories.models import start_day

__all__ = ["DayIndex", "days_in_file"]

log = logging.getLogger(__name__)

_KEY = re.compile(rb'"startTime"\s*:\s*')
#: a plain decimal number, ended as JSON ends a value
_NUMBER = re.compile(rb"(\d{1,16})(\.\d+)?(?=[\s,}\]])")
#: `\uXXXX` of s, t, a, r, T, i, m or e (hex in either case)
_ESCAPED_LETTER = re.compile(rb"\\u00(?:7[234]|6[159dD]|54)")


def days_in_file(path: Path) -> frozenset[date] | None:
    """The days of the `"startTime"` numbers in `path`'s bytes (without its fallback day), or None
    when the bytes cannot tell (see the module's docstring) or the file cannot be read."""
    try:
        with path.open("rb") as handle:
            if path.stat().st_size == 0:
                return frozenset()
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                if _ESCAPED_LETTER.search(data):
                    return None
                days: set[date] = set()
                for key in _KEY.finditer(data):
                    number = _NUMBER.match(data, key.end())
                    if number is None:
                        return None
                    milliseconds = int(number[1])
                    for value in (milliseconds, milliseconds + 1) if number[2] else (milliseconds,):
                        # no day: such a record goes to the fallback day
                        with contextlib.suppress(OverflowError, OSError, ValueError):
                            days.add(start_day(value))
                return frozenset(days)
    except (OSError, ValueError):
        return None


class DayIndex:
    """The remembered days of export files, read from and written back to one cache file."""

    def __init__(self, cache_file: Path | None = None) -> None:
        self.cache_file = cache_file if cache_file is not None else cache_dir() / "export-days.json"
        self._remembered = self._read()
        self._seen: dict[str, list] = {}

    def may_hold(self, path: Path, day: date, fallback: date | None) -> bool:
        """False only when no record of `path` can belong to `day`."""
        if fallback is None or fallback == day:
            return True
        try:
            stat = path.stat()
            key = str(path.resolve())
        except OSError:
            return True  # the pass reports what went wrong with it
        signature = [stat.st_size, stat.st_mtime_ns]
        cached = self._remembered.get(key)
        if cached is not None and cached[:2] == signature:
            ordinals = cached[2]
        else:
            days = days_in_file(path)
            ordinals = None if days is None else sorted(d.toordinal() for d in days)
        self._seen[key] = [*signature, ordinals]
        return ordinals is None or day.toordinal() in ordinals

    def save(self) -> None:
        """Remembers what this pass scanned, and what it did not look at this time unless the file
        is gone."""
        merged = {
            key: value
            for key, value in {**self._remembered, **self._seen}.items()
            if key in self._seen or Path(key).exists()
        }
        if merged == self._remembered:
            return
        try:
            atomic_write_text(self.cache_file, json.dumps(merged, sort_keys=True))
        except OSError as err:  # only slower next time
            log.debug("could not remember the days of export files in %s: %s", self.cache_file, err)

    def _read(self) -> dict[str, list]:
        try:
            loaded = json.loads(self.cache_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return loaded if isinstance(loaded, dict) else {}
