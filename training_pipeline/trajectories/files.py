"""A directory of elizaOS trajectory exports: `.jsonl` (one trajectory a line) or `.json` arrays."""

from __future__ import annotations

import errno
import mmap
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import BinaryIO, TypeGuard, TypeVar

from training_pipeline import jscompat
from training_pipeline.jscompat import js_trim
from training_pipeline.trajectories.records import ParsedRecord, RawRecord, oversized, parse_record

_Item = TypeVar("_Item")
_DATE_IN_NAME = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_SUFFIXES = (".jsonl", ".json")
#: Lines are read in pieces of this size, so a line over the cap is measured, never held.
_PIECE = 1 << 20
#: `line_spans` counts a span's lines one `find` at a time up to this many.
_FIND_LINES = 1024


@dataclass(frozen=True, slots=True)
class Refused:
    """Something in the input folder that is not read: a symlink out of the folder, a loop, a dangling
    link. It is reported as one quarantined record, so the counts still say it was there."""

    path: Path
    reason: str

    def records(self) -> Iterator[RawRecord]:
        yield RawRecord(str(self.path), b"", self.reason)


Entry = Path | Refused


def export_files(path: Path) -> list[Entry]:
    """The export files under `path` (a file or a folder, searched recursively) in a stable order.
    Symlinks are followed only to files and folders inside `path`, and each folder once; any other
    link that looks like an export (or leads to a folder) is `Refused`."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise FileNotFoundError(f"trajectory export path does not exist: {path}")
    base = path.resolve()
    entries: list[Entry] = []
    seen: set[Path] = set()
    folders = [path]
    while folders:
        folder = folders.pop()
        resolved = folder.resolve()
        if resolved in seen:  # reached through a link already: read once
            continue
        seen.add(resolved)
        with os.scandir(folder) as listing:
            for item in listing:
                entry = Path(item.path)
                if item.is_symlink():
                    followed = _follow(entry, base, seen)
                    if isinstance(followed, Refused):
                        entries.append(followed)
                    elif followed is not None and followed.is_dir():
                        folders.append(entry)
                    elif followed is not None and entry.suffix in _SUFFIXES:
                        entries.append(entry)
                elif item.is_dir(follow_symlinks=False):
                    folders.append(entry)
                elif entry.suffix in _SUFFIXES and item.is_file(follow_symlinks=False):
                    entries.append(entry)
    return sorted(entries, key=lambda e: str(e.path if isinstance(e, Refused) else e))


def _follow(link: Path, base: Path, seen: set[Path]) -> Path | Refused | None:
    """Where a symlink leads if it may be followed; None for one that is no export and no folder."""
    looks_like_export = link.suffix in _SUFFIXES
    try:
        target = link.resolve(strict=True)
    except (OSError, RuntimeError) as err:  # a loop of links, or a dangling one
        loop = isinstance(err, RuntimeError) or getattr(err, "errno", None) == errno.ELOOP
        if loop or looks_like_export:
            return Refused(link, f"unreadable symlink ({'a loop' if loop else 'its target is missing'})")
        return None
    if not target.is_relative_to(base):
        if target.is_dir() or looks_like_export:
            return Refused(link, f"symlink to {target}, outside the input folder: not followed")
        return None
    if target.is_dir() and (target in seen or link.parent.resolve().is_relative_to(target)):
        return Refused(link, f"symlink loop: {target} is already being read")
    return target


def in_lines(file: Entry) -> TypeGuard[Path]:
    """A `.jsonl` file (any export that is not a `.json` array): one record a line, so it can be cut
    into spans (`line_spans`) that other processes read themselves."""
    return not isinstance(file, Refused) and file.suffix != ".json"


def _record_cap() -> int:
    """The deployment's cap on a record's bytes, for a caller that gives none. The settings are imported
    here, not with the module: a pool's fork server imports this module for the workers, whose spans
    carry their cap, and the settings' model would bring pydantic into the server's start."""
    from training_pipeline.settings import settings

    return settings().max_record_bytes


def iter_file_records(file: Entry, max_bytes: int | None = None) -> Iterator[RawRecord]:
    """Raw records of one file, streamed for `.jsonl`; a `.json` array is read whole, unless it is
    larger than the record cap, when it is one oversized record (export big days as `.jsonl`)."""
    if isinstance(file, Refused):
        yield from file.records()
        return
    limit = max_bytes or _record_cap()
    if file.suffix == ".json":
        size = file.stat().st_size
        if size > limit:
            yield oversized(str(file), size, limit)
        else:
            yield from _json_array_records(file)
        return
    with file.open("rb") as handle:
        yield from _line_records(file, _bounded_lines(handle, limit), 1, limit)


@dataclass(frozen=True, slots=True)
class LineSpan:
    """The whole lines of a `.jsonl` file between two byte offsets, the first of them line `first_line`:
    a share of the file that a worker process reads itself, instead of being sent its bytes."""

    file: Path
    start: int
    end: int
    first_line: int
    max_bytes: int

    @property
    def size(self) -> int:
        return self.end - self.start

    def records(self) -> Iterator[RawRecord]:
        """The span read at once and cut at its newlines when no line in it can be over the cap (a
        line read by `readline` is copied for every 8 KiB buffer it spans); else line by line, bounded."""
        length = self.size
        with self.file.open("rb") as handle:
            handle.seek(self.start)
            if length <= self.max_bytes:
                lines: Iterable[bytes | int] = _cut_lines(handle.read(length))
            else:
                lines = _bounded_lines(handle, self.max_bytes, length)
            yield from _line_records(self.file, lines, self.first_line, self.max_bytes)


def line_spans(file: Path, size: int, max_bytes: int | None = None) -> Iterator[LineSpan]:
    """`file` cut into spans of about `size` bytes, each ending at the end of a line.

    The file is mapped, not read: a span's end and its lines are found by `memchr` (`find`), so the
    process that cuts the shares (the build's parent, beside its workers) neither copies the file nor
    holds it, and each span's pages are let go once it is cut."""
    limit = max_bytes or _record_cap()
    with file.open("rb") as handle:
        length = os.fstat(handle.fileno()).st_size
        if not length:
            return
        with mmap.mmap(handle.fileno(), length, access=mmap.ACCESS_READ) as view:
            start, line = 0, 1
            while start < length:
                newline = view.find(b"\n", min(start + size, length) - 1)
                end = length if newline == -1 else newline + 1
                yield LineSpan(file, start, end, line, limit)
                line += _newlines(view, start, end)
                page = start - start % mmap.PAGESIZE
                view.madvise(mmap.MADV_DONTNEED, page, end - page)  # off this process's RSS
                start = end


def _newlines(view: mmap.mmap, start: int, end: int) -> int:
    """Newlines in `view[start:end]`: one `find` per line while lines are long (most exports); once a
    span shows many short ones, a copy of the rest counted at once."""
    count, position = 0, view.find(b"\n", start, end)
    while position != -1:
        count += 1
        if count == _FIND_LINES:
            return count - 1 + view[position:end].count(b"\n")
        position = view.find(b"\n", position + 1, end)
    return count


def _cut_lines(data: bytes) -> Iterator[bytes]:
    """`data`'s lines, each with its newline (the last may have none), as `readline` gives them."""
    position, size = 0, len(data)
    while position < size:
        stop = data.find(b"\n", position) + 1 or size
        yield data[position:stop]
        position = stop


def _bounded_lines(handle: BinaryIO, limit: int, length: int | None = None) -> Iterator[bytes | int]:
    """The lines of `handle` (up to `length` bytes), each as bytes, or, when longer than `limit`, as
    its length alone: the line is read in pieces and dropped, so memory stays bounded."""
    left = length
    while left is None or left > 0:
        line = handle.readline(limit + 1 if left is None else min(limit + 1, left))
        if not line:
            return
        if left is not None:
            left -= len(line)
        if len(line) <= limit or line.endswith(b"\n"):
            yield line
            continue
        size = len(line)
        while (left is None or left > 0) and (
            piece := handle.readline(_PIECE if left is None else min(_PIECE, left))
        ):
            size += len(piece)
            if left is not None:
                left -= len(piece)
            if piece.endswith(b"\n"):
                break
        yield size


def _line_records(file: Path, lines: Iterable[bytes | int], first: int, limit: int) -> Iterator[RawRecord]:
    for number, line in enumerate(lines, start=first):
        if isinstance(line, int):
            yield oversized(f"{file}:{number}", line, limit)
        elif not _is_blank(line):
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
        try:
            yield RawRecord(f"{file}:[{index}]", jscompat.dumps(item))
        except ValueError as err:
            yield RawRecord(f"{file}:[{index}]", b"", f"cannot be serialised: {err}")


def fallback_day(file: Entry) -> date:
    """Where a record whose start time cannot be read is reported: the date in the file's name, else
    the UTC day the file was last modified. Each bad record is then quarantined in exactly one partition."""
    if isinstance(file, Refused):
        file = file.path
    match = _DATE_IN_NAME.search(file.name)
    if match:
        try:
            return date(int(match[1]), int(match[2]), int(match[3]))
        except ValueError:
            pass
    return datetime.fromtimestamp(file.lstat().st_mtime, tz=UTC).date()


@dataclass(frozen=True, slots=True)
class Unparsed:
    """A record read but not parsed yet, with what deciding its day needs: parsing can then happen
    where the work is (a worker of the pool), not where the file is read."""

    raw: RawRecord
    #: the day wanted (None: any)
    day: date | None
    #: where a record whose start time cannot be read belongs (`fallback_day` of its file)
    fallback: date | None

    def parse(self) -> ParsedRecord | None:
        """The parsed record, or None when it belongs to another day."""
        parsed = parse_record(self.raw)
        if self.day is None or (parsed.day or self.fallback) == self.day:
            return parsed
        return None


@dataclass(frozen=True, slots=True)
class UnparsedSpan:
    """The records of a share of a `.jsonl` file, not even read yet: a worker of the pool reads them
    itself (`LineSpan`), so the file's bytes never cross processes. To a share what `Unparsed` is to
    one record."""

    span: LineSpan
    day: date | None
    fallback: date | None

    def unparsed(self) -> Iterator[Unparsed]:
        for raw in self.span.records():
            yield Unparsed(raw, self.day, self.fallback)


def unparsed_shares(
    path: Path, day: date | None = None, span_bytes: int = 1 << 20, max_bytes: int | None = None
) -> Iterator[Unparsed | UnparsedSpan]:
    """The records under `path`, not parsed: `.jsonl` files in spans of about `span_bytes`, the rest
    (`.json` arrays, refused entries) record by record. `Unparsed.parse` keeps `day`'s."""
    for file in export_files(path):
        fallback = fallback_day(file) if day is not None else None
        if in_lines(file):
            for span in line_spans(file, span_bytes, max_bytes):
                yield UnparsedSpan(span, day, fallback)
        else:
            for raw in iter_file_records(file, max_bytes):
                yield Unparsed(raw, day, fallback)


def with_spans_read(items: Iterable[_Item | UnparsedSpan]) -> Iterator[_Item | Unparsed]:
    """`items` with each span read into its records (where it is processed: a worker of the pool)."""
    for item in items:
        if isinstance(item, UnparsedSpan):
            yield from item.unparsed()
        else:
            yield item


def unparsed_files(path: Path, day: date | None = None, max_bytes: int | None = None) -> Iterator[Unparsed]:
    """The records under `path`, read but not parsed; `Unparsed.parse` keeps `day`'s."""
    return with_spans_read(unparsed_shares(path, day, max_bytes=max_bytes))


def read_files(path: Path, day: date | None = None, max_bytes: int | None = None) -> Iterator[ParsedRecord]:
    """Parsed records under `path`; with `day`, only those that belong to that UTC day."""
    for unparsed in unparsed_files(path, day, max_bytes):
        parsed = unparsed.parse()
        if parsed is not None:
            yield parsed
