"""A directory of elizaOS trajectory exports: `.jsonl` (one trajectory a line) or `.json` arrays."""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

from training_pipeline import jscompat
from training_pipeline.jscompat import js_trim
from training_pipeline.trajectories.records import ParsedRecord, RawRecord, parse_record

_DATE_IN_NAME = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


def export_files(path: Path) -> list[Path]:
    """The export files under `path` (a file or a directory, searched recursively), in a stable order."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise FileNotFoundError(f"trajectory export path does not exist: {path}")
    return sorted(p for p in path.rglob("*") if p.suffix in (".jsonl", ".json") and p.is_file())


def iter_file_records(file: Path) -> Iterator[RawRecord]:
    """Raw records of one file, streamed for `.jsonl`; a `.json` array is read whole."""
    if file.suffix == ".json":
        yield from _json_array_records(file)
        return
    with file.open("rb") as handle:
        yield from _line_records(file, handle, 1)


@dataclass(frozen=True, slots=True)
class LineSpan:
    """The whole lines of a `.jsonl` file between two byte offsets, the first of them line `first_line`:
    a share of the file that a worker process reads itself, instead of being sent its bytes."""

    file: Path
    start: int
    end: int
    first_line: int

    def records(self) -> Iterator[RawRecord]:
        with self.file.open("rb") as handle:
            handle.seek(self.start)
            data = handle.read(self.end - self.start)
        return _line_records(self.file, io.BytesIO(data), self.first_line)


def line_spans(file: Path, size: int) -> Iterator[LineSpan]:
    """`file` cut into spans of about `size` bytes, each ending at the end of a line."""
    with file.open("rb") as handle:
        start, line = 0, 1
        while block := handle.read(size):
            rest = handle.readline()  # up to the end of the line the block stopped in
            end = start + len(block) + len(rest)
            yield LineSpan(file, start, end, line)
            start, line = end, line + block.count(b"\n") + rest.count(b"\n")


def _line_records(file: Path, lines: Iterable[bytes], first: int) -> Iterator[RawRecord]:
    for number, line in enumerate(lines, start=first):
        if not _is_blank(line):
            yield RawRecord(f"{file}:{number}", line)


def _is_blank(line: bytes) -> bool:
    """elizaOS skips lines that trim() to nothing (JavaScript's whitespace, which is not only ASCII's)."""
    if line[:1] == b"{":  # nearly every line: no copy of it, no decoding
        return False
    if not line.strip():
        return True
    if line.isascii():
        return False
    try:
        return not js_trim(line.decode("utf-8"))
    except UnicodeDecodeError:
        return False


def _json_array_records(file: Path) -> Iterator[RawRecord]:
    data = file.read_bytes()
    try:
        items = jscompat.loads(data)
    except ValueError:
        yield RawRecord(f"{file}", data)  # parse_record reports the error on the whole file
        return
    if not isinstance(items, list):
        yield RawRecord(f"{file}", data)
        return
    for index, item in enumerate(items):
        yield RawRecord(f"{file}:[{index}]", jscompat.dumps(item))


def fallback_day(file: Path) -> date:
    """Where a record whose start time cannot be read is reported: the date in the file's name, else
    the UTC day the file was last modified. Each bad record is then quarantined in exactly one partition."""
    match = _DATE_IN_NAME.search(file.name)
    if match:
        try:
            return date(int(match[1]), int(match[2]), int(match[3]))
        except ValueError:
            pass
    return datetime.fromtimestamp(file.stat().st_mtime, tz=UTC).date()


def read_files(path: Path, day: date | None = None) -> Iterator[ParsedRecord]:
    """Parsed records under `path`; with `day`, only those that belong to that UTC day."""
    for file in export_files(path):
        file_day: date | None = None
        for raw in iter_file_records(file):
            parsed = parse_record(raw)
            if day is None:
                yield parsed
                continue
            record_day = parsed.day
            if record_day is None:
                if file_day is None:
                    file_day = fallback_day(file)
                record_day = file_day
            if record_day == day:
                yield parsed
