"""The earliest day a trajectory source holds: where the daily partitions start unless the deployment
says (`TRAINING_PIPELINE_START_DATE`).

A fixed first day made every new deployment show hundreds of empty days (and "materialise all" launch a
run for each); the first day of the data is what a user expects to see. It is found when the code
location loads, so it must stay cheap there:

- export files: the smallest `"startTime"` number in each file's bytes (no JSON is parsed), remembered
  per file by path, size and modification time in the cache folder, so a later load only `stat`s the
  files; a file with no start time counts as the day records of it are quarantined under
  (`files.fallback_day`);
- the task runs' folder: its day folders' names;
- a database: `MIN(start_time)` (a connection that fails or times out gives no day, with a warning).

Days before `EARLIEST_PLAUSIBLE` are taken for clock errors (a start time of 0 is 1970): they would
otherwise open twenty thousand partitions. Such records are still read by a deployment whose start
date includes them.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from training_pipeline.atomic import atomic_write_text
from training_pipeline.environment import cache_dir
from training_pipeline.trajectories.files import Refused, export_files, fallback_day

if TYPE_CHECKING:
    from training_pipeline.settings import Settings

__all__ = [
    "DEFAULT_FIRST_DAY",
    "EARLIEST_PLAUSIBLE",
    "earliest_day_in_files",
    "earliest_day_in_runs",
    "earliest_day_in_table",
    "earliest_of",
    "first_day",
]

log = logging.getLogger(__name__)

EARLIEST_PLAUSIBLE = date(2020, 1, 1)
#: the first day when neither the setting nor the source gives one (an empty source)
DEFAULT_FIRST_DAY = date(2025, 1, 1)
_EARLIEST_MS = int(datetime(2020, 1, 1, tzinfo=UTC).timestamp() * 1000)
#: a start time's number, whole: a number cut by a chunk's end is no match (it is read again next chunk)
_START_TIME = re.compile(rb'"startTime"\s*:\s*(\d{1,16})(?=\D)')
#: an OTLP/JSON span's start, in nanoseconds (a string, as int64s are in OTLP/JSON, or a number)
_SPAN_START = re.compile(rb'"startTimeUnixNano"\s*:\s*"?(\d{1,22})(?=\D)')
_CHUNK = 16 << 20
#: a match cut by a chunk's end is read again from the next chunk's start, which repeats this much
_OVERLAP = 64
_DAY_FOLDER = re.compile(r"\d{4}-\d{2}-\d{2}")


def first_day(settings: Settings) -> date:
    """The daily partitions' first day: `TRAINING_PIPELINE_START_DATE` when set, else the earliest day
    of the source (the bundled sample's when no source is configured) and of the task runs'
    trajectories, else `DEFAULT_FIRST_DAY`."""
    if settings.start_date:
        return date.fromisoformat(settings.start_date)
    from training_pipeline import SAMPLE_TRAJECTORIES

    if settings.trajectory_db_url:
        found = earliest_day_in_table(
            settings.trajectory_db_url.get_secret_value(), settings.trajectory_db_table
        )
    else:
        folder = _local_folder(settings.trajectory_dir) if settings.trajectory_dir else SAMPLE_TRAJECTORIES
        try:
            found = earliest_day_in_files(folder, cache_dir() / "first-days.json")
        except FileNotFoundError:  # the source's own check says so, where it is read
            found = None
        found = earliest_of([found, earliest_day_in_runs(Path(settings.data) / "agent_trajectories")])
    return found or DEFAULT_FIRST_DAY


def _local_folder(source: str) -> Path:
    """Where the source's files are on this machine: a URL's mirror as the last run left it (the code
    location never fetches while it loads: before the first run, a URL source has no first day here and
    `TRAINING_PIPELINE_START_DATE` is the way to set one)."""
    from training_pipeline.trajectories.remote import is_url, local_input, mirror_folder

    return mirror_folder(source) if is_url(source) else local_input(source)


def earliest_day_in_files(path: Path, cache_file: Path | None = None) -> date | None:
    """The earliest plausible day of the export files under `path` (None: no file, or no day)."""
    remembered = _read_cache(cache_file)
    seen: dict[str, list[int | None]] = {}
    days: list[date] = []
    for entry in export_files(path):
        if isinstance(entry, Refused):
            continue
        try:
            stat = entry.stat()
        except OSError:
            continue
        key = str(entry.resolve())
        signature = [stat.st_size, stat.st_mtime_ns]
        cached = remembered.get(key)
        unchanged = cached is not None and cached[:2] == signature
        smallest = cached[2] if unchanged else _smallest_start_ms(entry)
        seen[key] = [*signature, smallest]
        if smallest is not None:
            days.append(datetime.fromtimestamp(smallest / 1000, tz=UTC).date())
        elif (fallback := fallback_day(entry)) is not None and fallback >= EARLIEST_PLAUSIBLE:
            days.append(fallback)
    if cache_file is not None and seen != remembered:
        try:
            atomic_write_text(cache_file, json.dumps(seen, sort_keys=True))
        except OSError as err:  # only slower next time
            log.debug("could not remember the first days in %s: %s", cache_file, err)
    return min(days, default=None)


def earliest_day_in_runs(folder: Path) -> date | None:
    """The earliest day folder (`YYYY-MM-DD`) of the task runs' trajectories (None: none)."""
    if not folder.is_dir():
        return None
    days = []
    for child in folder.iterdir():
        if child.is_dir() and _DAY_FOLDER.fullmatch(child.name):
            try:
                days.append(date.fromisoformat(child.name))
            except ValueError:
                continue
    return min((day for day in days if day >= EARLIEST_PLAUSIBLE), default=None)


def earliest_day_in_table(url: str, table: str) -> date | None:
    """The earliest plausible day of a trajectories table (None: empty, or the database did not answer
    within a few seconds: the caller's default then holds, and a warning says so)."""
    import sqlalchemy as sa

    from training_pipeline.trajectories.database import first_start_ms

    connect_args = {"connect_timeout": 5} if url.startswith("postgresql") else {}
    engine = sa.create_engine(url, connect_args=connect_args)
    try:
        smallest = first_start_ms(engine, table, _EARLIEST_MS)
    except sa.exc.SQLAlchemyError as err:
        log.warning(
            "could not read the first day of %s (%s); the partitions start on the default day",
            engine.url.render_as_string(hide_password=True),
            type(err).__name__,
        )
        return None
    finally:
        engine.dispose()
    return None if smallest is None else datetime.fromtimestamp(smallest / 1000, tz=UTC).date()


def earliest_of(days: Iterable[date | None]) -> date | None:
    """The earliest of the days found (None: none was)."""
    return min((day for day in days if day is not None), default=None)


def _smallest_start_ms(file: Path) -> int | None:
    """The smallest plausible `"startTime"` number in `file` (or an OTLP/JSON span's start), read in
    chunks. A protobuf or compressed trace file has none to read: its day is its name's or mtime's."""
    smallest: int | None = None
    try:
        with file.open("rb") as handle:
            tail = b""
            while chunk := handle.read(_CHUNK):
                data = tail + chunk
                starts = [int(match[1]) for match in _START_TIME.finditer(data)]
                starts += [int(match[1]) // 1_000_000 for match in _SPAN_START.finditer(data)]
                for value in starts:
                    if value >= _EARLIEST_MS and (smallest is None or value < smallest):
                        smallest = value
                tail = data[-_OVERLAP:]
    except OSError:
        return None
    return smallest


def _read_cache(cache_file: Path | None) -> dict[str, list[int | None]]:
    if cache_file is None:
        return {}
    try:
        loaded = json.loads(cache_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}
