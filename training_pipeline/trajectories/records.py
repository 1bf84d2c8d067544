"""From raw bytes to validated trajectory dicts, with a reason for everything that does not make it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from training_pipeline import jscompat
from training_pipeline.trajectories.models import start_day, validation_reason


@dataclass(frozen=True, slots=True)
class RawRecord:
    """One record as a source delivered it; `origin` says where (file:line or table:row id).

    `problem` is set (and `data` empty) for what the source refused to read: a record over the size
    cap (`size` then says how big, measured without holding it), or a symlink out of the input folder."""

    origin: str
    data: bytes | str
    problem: str | None = None
    size: int | None = None


def oversized(origin: str, size: int, limit: int) -> RawRecord:
    return RawRecord(origin, b"", f"record too large: {size} bytes, over the {limit}-byte cap", size)


@dataclass(frozen=True, slots=True)
class ParsedRecord:
    """A raw record after parsing: exactly one of `trajectory` and `reason` is set.

    `day` is the UTC start day when it could be read, even for a quarantined record, so a bad record
    still lands in the partition it belongs to. `undecodable` keeps the bytes that were not UTF-8, so the
    quarantine can keep them too.
    """

    origin: str
    text: str | None
    trajectory: dict[str, Any] | None
    reason: str | None
    day: date | None
    undecodable: bytes | None = None
    size: int | None = None


def parse_record(raw: RawRecord) -> ParsedRecord:
    if raw.problem is not None:
        return ParsedRecord(raw.origin, None, None, raw.problem, None, size=raw.size)
    text = raw.data
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as err:
            return ParsedRecord(raw.origin, None, None, f"invalid UTF-8 at byte {err.start}", None, text)
    try:
        record = jscompat.loads(text)
    except ValueError as err:
        return ParsedRecord(raw.origin, text, None, f"invalid JSON: {err}", None)
    day = _day_of(record)
    reason = validation_reason(record)
    if reason is not None:
        return ParsedRecord(raw.origin, text, None, reason, day)
    return ParsedRecord(raw.origin, text, record, None, day)


def _day_of(record: Any) -> date | None:
    if not isinstance(record, dict):
        return None
    start = record.get("startTime")
    if isinstance(start, bool) or not isinstance(start, int | float):
        return None
    try:
        return start_day(start)
    except (OverflowError, OSError, ValueError):
        return None
