"""From raw bytes to validated trajectory dicts, with a reason for everything that does not make it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

import orjson

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
    #: the record's JSON as it came: UTF-8 bytes (a valid record from a file), else text
    text: str | bytes | None
    trajectory: dict[str, Any] | None
    reason: str | None
    day: date | None
    undecodable: bytes | None = None
    size: int | None = None


def duplicate(origin: str, text: str | bytes | None, trajectory_id: str, first: str) -> ParsedRecord:
    """A record whose trajectory id the day has already read, for the quarantine, with its text."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    reason = f"duplicate trajectory id: {trajectory_id!r} was first read at {first}; kept once"
    return ParsedRecord(origin, text, None, reason, None)


def over_budget(origin: str, text: str | bytes | None, err: Exception) -> ParsedRecord:
    """A record whose redaction ran past its budget (`privacy.budget`), for the quarantine: by origin
    and size only, as an oversized record is (its text could not be redacted in time to be stored)."""
    return _unredacted(origin, text, f"redaction-budget: {err}")


def redaction_failed(origin: str, text: str | bytes | None, err: Exception) -> ParsedRecord:
    """A record whose redaction raised, for the quarantine: by origin, size and the error's type only
    (its message may quote the record), so one record's fault quarantines it and not its day."""
    return _unredacted(origin, text, f"redaction-error: {type(err).__name__}")


def _unredacted(origin: str, text: str | bytes | None, reason: str) -> ParsedRecord:
    """A record its redaction did not finish, for the quarantine by origin and size: its text is not
    stored."""
    if isinstance(text, str):
        text = text.encode("utf-8", "surrogatepass")
    return ParsedRecord(origin, None, None, reason, None, size=len(text) if text is not None else None)


def parse_record(raw: RawRecord) -> ParsedRecord:
    if raw.problem is not None:
        return ParsedRecord(raw.origin, None, None, raw.problem, None, size=raw.size)
    data = raw.data
    if isinstance(data, bytes):
        # bytes are parsed as they came (orjson checks their UTF-8): parsing them decoded, orjson encoded
        # every text outside ASCII again, and a valid record is stored as these bytes anyway
        try:
            return _checked(raw.origin, data, orjson.loads(data))
        except orjson.JSONDecodeError:
            pass  # not UTF-8, not JSON, or JSON only the standard library reads: told apart below
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as err:
            return ParsedRecord(raw.origin, None, None, f"invalid UTF-8 at byte {err.start}", None, data)
    try:
        record = jscompat.loads(data)
    except ValueError as err:
        return ParsedRecord(raw.origin, data, None, f"invalid JSON: {err}", None)
    return _checked(raw.origin, data, record)


def _checked(origin: str, data: str | bytes, record: Any) -> ParsedRecord:
    """The parsed record validated; a record that fails keeps its JSON as text for the quarantine."""
    day = _day_of(record)
    reason = validation_reason(record)
    if reason is not None:
        return ParsedRecord(
            origin, data.decode("utf-8") if isinstance(data, bytes) else data, None, reason, day
        )
    return ParsedRecord(origin, data, record, None, day)


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
