"""A directory of elizaOS trajectory exports: `.jsonl` (one trajectory a line) or `.json` arrays."""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import BinaryIO, TypeGuard, TypeVar

from training_pipeline import jscompat
from training_pipeline.jscompat import js_trim
from training_pipeline.trajectories.day_index import DayIndex
from training_pipeline.trajectories.parsing import ParsedRecord, RawRecord, oversized, parse_record

_Item = TypeVar("_Item")
_DATE_IN_NAME = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
EXPORT_SUFFIXES = (".jsonl", ".json")
#: names of files that may hold OTLP traces besides `.json`/`.jsonl` (`traces.otlp.trace_kind` reads
#: their content to tell): protobuf, and any of them gzip'd
TRACE_SUFFIXES = (".pb", ".binpb", ".protobuf", ".otlp", ".gz")
#: Lines are read in pieces of this size, so a line over the cap is measured, never held.
_PIECE = 1 << 20


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
                    elif followed is not None and _listed(entry):
                        entries.append(entry if followed.is_file() else _not_regular(entry, followed))
                elif item.is_dir(follow_symlinks=False):
                    folders.append(entry)
                elif _listed(entry):
                    regular = item.is_file(follow_symlinks=False)
                    entries.append(entry if regular else _not_regular(entry, entry))
    return sorted(entries, key=lambda e: str(e.path if isinstance(e, Refused) else e))


def _listed(entry: Path) -> bool:
    return entry.suffix in EXPORT_SUFFIXES or entry.suffix in TRACE_SUFFIXES


def _not_regular(entry: Path, target: Path) -> Refused:
    """An export's name on something that is not a file: a FIFO would hold the reader for ever."""
    try:
        kind = _KINDS.get(stat.S_IFMT(target.stat().st_mode), "not a regular file")
    except OSError as err:
        return Refused(entry, f"unreadable: {err.strerror}")
    return Refused(entry, f"{kind}, not a regular file: not read")


_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
}


def open_export(path: Path) -> BinaryIO:
    """An export file open for reading, if it is still a regular file: opened without blocking (a FIFO
    put in its place since it was listed cannot hold the reader), then checked."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def unreadable(origin: str, err: OSError) -> RawRecord:
    """A file that vanished, or changed into something else, after it was listed: one quarantined
    record naming it, and the day goes on."""
    reason = f"unreadable: {err.strerror or err} (it vanished or changed while the day was read)"
    return RawRecord(origin, b"", reason)


def _follow(link: Path, base: Path, seen: set[Path]) -> Path | Refused | None:
    """Where a symlink leads if it may be followed; None for one that is no export and no folder."""
    looks_like_export = _listed(link)
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
    """Raw records of one file, streamed: a `.jsonl` file line by line, a `.json` array element by
    element (`json_array_records`); the record cap applies to each record."""
    if isinstance(file, Refused):
        yield from file.records()
        return
    limit = max_bytes or _record_cap()
    try:
        handle = open_export(file)
    except OSError as err:
        yield unreadable(str(file), err)
        return
    with handle:
        if file.suffix == ".json":
            yield from json_array_records(file, handle, limit)
        else:
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
        origin = f"{self.file}:{self.first_line}"
        try:
            handle = open_export(self.file)
        except OSError as err:
            yield unreadable(origin, err)
            return
        with handle:
            handle.seek(self.start)
            if length <= self.max_bytes:
                data = handle.read(length)
                lines: Iterable[bytes | int] = _cut_lines(data)
                short = length - len(data)
            else:
                lines = _bounded_lines(handle, self.max_bytes, length)
                short = max(0, self.end - os.fstat(handle.fileno()).st_size)
            yield from _line_records(self.file, lines, self.first_line, self.max_bytes)
            if short:
                problem = f"the file changed while it was read: the last {short} bytes of this share are gone"
                yield RawRecord(origin, b"", problem)


def line_spans(file: Path, size: int, max_bytes: int | None = None) -> Iterator[LineSpan | Refused]:
    """`file` cut into spans of about `size` bytes, each ending at the end of a line; a file that cannot
    be opened (it vanished since it was listed) is one `Refused` entry instead.

    The file is read a piece at a time to find each span's end and count its lines (`bytes.count` and
    `find`), never held whole, and never mapped: a file truncated while mapped kills the reader with
    SIGBUS, where a read just comes back short."""
    limit = max_bytes or _record_cap()
    try:
        handle = open_export(file)
    except OSError as err:
        yield Refused(file, unreadable(str(file), err).problem or "unreadable")
        return
    with handle:
        fd = handle.fileno()
        start, line, length = 0, 1, os.fstat(fd).st_size
        while start < length:
            end = _line_end(fd, min(start + size, length) - 1, length)
            yield LineSpan(file, start, end, line, limit)
            line += _newlines(fd, start, end)
            start = end


def _line_end(fd: int, position: int, length: int) -> int:
    """Just past the first newline at or after `position`, or `length` when there is none."""
    while position < length:
        piece = os.pread(fd, _PIECE, position)
        if not piece:
            return length  # the file shrank: the span ends where it does now
        found = piece.find(b"\n")
        if found >= 0:
            return position + found + 1
        position += len(piece)
    return length


def _newlines(fd: int, start: int, end: int) -> int:
    """Newlines in the file's bytes `start` to `end`, read a piece at a time."""
    count = 0
    while start < end:
        piece = os.pread(fd, min(_PIECE, end - start), start)
        if not piece:
            break
        count += piece.count(b"\n")
        start += len(piece)
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


#: what the array splitter stops at: outside a string, a whole string (one search, however long), a
#: bracket, brace or comma, or a lone quote (a string that goes on into the next piece); inside such a
#: string, its closing quote or an escape
_STRUCTURE = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},"]')
_IN_STRING = re.compile(rb'["\\]')


def json_array_records(file: Path, handle: BinaryIO, limit: int) -> Iterator[RawRecord]:
    """The elements of a `.json` array, one record each, read a piece at a time: a day exported as one
    array of a hundred thousand trajectories is that many records, each under the cap on its own.

    A file that is not an array (one trajectory as an object) is one record, under the same cap. An
    element is cut out by its brackets, braces and strings (escapes respected), then parsed and written
    again compactly, as a record of a `.jsonl` file would be stored; one that does not parse stays as
    its bytes, for `parse_record` to report."""
    splitter = _ArraySplitter(limit)
    index = 0
    while True:
        piece = handle.read(_PIECE)
        for element in splitter.feed(piece) if piece else splitter.finish():
            origin = f"{file}:[{index}]" if splitter.is_array else str(file)
            index += 1
            if isinstance(element, int):
                yield oversized(origin, element, limit)
            elif isinstance(element, str):
                yield RawRecord(origin, b"", element)
            else:
                yield _element_record(origin, element)
        if not piece:
            return


def _element_record(origin: str, data: bytes) -> RawRecord:
    try:
        return RawRecord(origin, jscompat.dumps(jscompat.loads(data)))
    except ValueError:
        return RawRecord(origin, data)  # parse_record says what is wrong with it


_QUOTE, _BACKSLASH, _COMMA = ord('"'), ord("\\"), ord(",")
_OPENING, _CLOSING = (ord("["), ord("{")), (ord("]"), ord("}"))


class _ArraySplitter:
    """Cuts a JSON array's bytes, fed in pieces, into its elements' bytes (or, for an element over
    `limit`, its size alone: its bytes are dropped as they come). Only structure is looked at: each
    search jumps to the next bracket, brace, comma or quote (inside a string, to its closing quote or
    an escape), and an element's bytes are copied once, when it ends or the piece does."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.is_array: bool | None = None
        self._buffer = bytearray()  # the current element's bytes, from its start
        self._size = 0  # the current element's size, when it is too large to keep
        self._depth = 0  # 1 inside the array
        self._string = False
        self._escape = False
        self._closed = False
        self._trailing = False

    def feed(self, piece: bytes) -> list[bytes | int | str]:
        out: list[bytes | int | str] = []
        if self.is_array is None:
            head = piece.lstrip()
            if not head:
                return out
            self.is_array = head[:1] == b"["
        if not self.is_array:
            self._append(piece)
            return out
        position, mark, length = 0, 0, len(piece)
        while position < length:
            if self._closed:
                self._trailing = self._trailing or bool(piece[position:].strip())
                return out
            if self._escape:  # the character after a backslash, whatever it is
                self._escape = False
                position += 1
                continue
            found = (_IN_STRING if self._string else _STRUCTURE).search(piece, position)
            if found is None:
                break
            at, char, position = found.start(), piece[found.start()], found.end()
            if char == _QUOTE and position - at > 1:
                continue  # a whole string: nothing in it is structure
            if self._string:
                self._escape = char == _BACKSLASH
                self._string = self._escape
            elif char == _QUOTE:
                self._string = True
            elif char in _OPENING:
                self._depth += 1
                if self._depth == 1:
                    mark = position  # the array's own bracket: its first element starts after it
            elif char in _CLOSING:
                self._depth -= 1
                if self._depth == 0:
                    self._append(piece[mark:at])
                    out += self._element()
                    self._closed = True
            elif char == _COMMA and self._depth == 1:
                self._append(piece[mark:at])
                out += self._element()
                mark = position
        if self._depth >= 1:
            self._append(piece[mark:])
        return out

    def finish(self) -> list[bytes | int | str]:
        if not self.is_array:
            if self._size:
                return [self._size]
            return [bytes(self._buffer)] if self._buffer.strip() else []
        if not self._closed:
            return [*self._element(), "not a complete JSON array: the file ends inside it"]
        if self._trailing:
            return ["content after the end of the JSON array: not read"]
        return []

    def _append(self, data: bytes) -> None:
        if self._size:
            self._size += len(data)
            return
        self._buffer += data
        if len(self._buffer) > self.limit:
            self._size = len(self._buffer)
            self._buffer = bytearray()

    def _element(self) -> list[bytes | int | str]:
        size, kept = self._size, self._buffer.strip()
        self._buffer, self._size = bytearray(), 0
        if size:
            return [size]
        return [bytes(kept)] if kept else []


def fallback_day(file: Entry) -> date | None:
    """Where a record whose start time cannot be read is reported: the date in the file's name, else
    the UTC day the file was last modified (None: the file is gone; the caller's day then). Each bad
    record is then quarantined in exactly one partition."""
    if isinstance(file, Refused):
        file = file.path
    match = _DATE_IN_NAME.search(file.name)
    if match:
        try:
            return date(int(match[1]), int(match[2]), int(match[3]))
        except ValueError:
            pass
    try:
        return datetime.fromtimestamp(file.lstat().st_mtime, tz=UTC).date()
    except OSError:
        return None


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
    return unparsed_shares_of(export_files(path), day, span_bytes, max_bytes)


def unparsed_shares_of(
    files: list[Entry], day: date | None = None, span_bytes: int = 1 << 20, max_bytes: int | None = None
) -> Iterator[Unparsed | UnparsedSpan]:
    """`unparsed_shares` of the export files listed (`export_files`); for a day, only the files that
    can hold it (`day_index`)."""
    index = DayIndex() if day is not None else None
    for file in files:
        own = fallback_day(file) if day is not None else None
        if (
            index is not None
            and day is not None
            and not isinstance(file, Refused)
            and not index.may_hold(file, day, own)
        ):
            continue  # no record of it can be the day's
        fallback = (own or day) if day is not None else None
        if in_lines(file):
            for span in line_spans(file, span_bytes, max_bytes):
                if isinstance(span, Refused):
                    yield from (Unparsed(raw, day, fallback) for raw in span.records())
                else:
                    yield UnparsedSpan(span, day, fallback)
        else:
            for raw in iter_file_records(file, max_bytes):
                yield Unparsed(raw, day, fallback)
    if index is not None:
        index.save()


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
