"""File operations on a folder that confined code can change while the pipeline works in it.

A sandbox's folder belongs to the code inside: between any check the pipeline makes and its use of a
path, that code may replace a folder on the way by a symlink to the host. So nothing here resolves a
path string: each path is walked one component at a time through directory descriptors, every folder
opened with `O_DIRECTORY | O_NOFOLLOW` relative to the one before it (`openat`), the last component
with `O_NOFOLLOW`. A component swapped for a link at any moment makes the operation fail with
`EscapeRefused`; it can never lead out of the folder.

Writes go to a fresh name made with `O_EXCL` and are renamed into place within the same folder
descriptor, so a hard link planted at the destination is replaced, never written through. Reads accept
regular files only, opened with `O_NONBLOCK` so a FIFO cannot hold the pipeline.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

__all__ = [
    "EscapeRefused",
    "FileEntry",
    "find_files",
    "is_regular_file",
    "open_in",
    "open_regular",
    "parts_of",
    "write_from",
]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
#: a walk of a sandbox's folder stops after this many entries: the folder is the task's to fill
WALK_LIMIT = 100_000
#: and goes no deeper than this (each level holds a descriptor open)
DEPTH_LIMIT = 64


class EscapeRefused(ValueError):
    """A path that is not a plain relative path inside the folder, or that passes through a link."""


def parts_of(relative: str) -> list[str]:
    """The components of a path relative to a sandbox's folder; refused when it could leave it."""
    if not relative or "\x00" in relative or os.path.isabs(relative) or "\\" in relative:
        raise EscapeRefused(f"{relative!r} is not a relative path inside the sandbox")
    parts = [part for part in PurePosixPath(relative).parts if part != "."]
    if not parts or ".." in parts:
        raise EscapeRefused(f"{relative!r} is not a relative path inside the sandbox")
    return parts


@contextlib.contextmanager
def _folder(root: Path) -> Iterator[int]:
    fd = os.open(root, _DIR_FLAGS)
    try:
        yield fd
    finally:
        os.close(fd)


def _open_dir(parent: int, name: str, relative: str, create: bool) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise FileNotFoundError(errno.ENOENT, f"{relative!r}: no such folder in the sandbox") from None
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o755, dir_fd=parent)
        return _open_dir(parent, name, relative, create=False)
    except OSError as err:
        if err.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        # a link opened with O_DIRECTORY | O_NOFOLLOW fails with either; say which it was, if still there
        with contextlib.suppress(OSError):
            if not stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
                raise EscapeRefused(
                    f"{relative!r} passes through a file, not a folder, in the sandbox"
                ) from None
        raise EscapeRefused(f"{relative!r} passes through a symlink in the sandbox; refused") from None


@contextlib.contextmanager
def _parent(root: Path, parts: list[str], relative: str, create: bool = False) -> Iterator[int]:
    """A descriptor of the folder holding `parts[-1]`, reached without following any link."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for name in parts[:-1]:
            child = _open_dir(fd, name, relative, create)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def open_regular(root: Path, relative: str) -> BinaryIO:
    """`relative` under `root` open for reading, if it is a regular file reached without a link."""
    parts = parts_of(relative)
    with _parent(root, parts, relative) as folder:
        return open_in(folder, parts[-1], relative)


def open_in(folder: int, name: str, shown: str | None = None) -> BinaryIO:
    """`name` in the folder open as `folder`, for reading, if it is a regular file and not a link
    (opened without blocking, so a FIFO cannot hold the caller). `shown`: the path errors name."""
    shown = shown or name
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=folder)
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, f"{shown!r}: no such file in the sandbox") from None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise EscapeRefused(f"{shown!r} is a symlink in the sandbox; refused") from None
        raise
    handle = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        handle.close()
        raise EscapeRefused(f"{shown!r} is not a regular file")
    os.set_blocking(fd, True)
    return handle


def is_regular_file(root: Path, relative: str) -> bool:
    """Whether `relative` is a regular file reached without a link (a link anywhere: no)."""
    try:
        open_regular(root, relative).close()
    except (OSError, EscapeRefused):
        return False
    return True


def write_from(root: Path, relative: str, source: BinaryIO, limit: int) -> int:
    """Write `source` to `relative` under `root`, making missing folders; at most `limit` bytes.

    The data goes to a new file (`O_EXCL`) that is renamed over the destination inside the same folder
    descriptor: whatever the destination was (a link, a hard link to a file elsewhere), it is replaced,
    not written through. Returns the bytes written."""
    parts = parts_of(relative)
    with _parent(root, parts, relative, create=True) as folder:
        temporary = f".{parts[-1][:100]}.{secrets.token_hex(6)}.upload"
        fd = os.open(
            temporary,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o644,
            dir_fd=folder,
        )
        written = 0
        try:
            with os.fdopen(fd, "wb") as out:
                while chunk := source.read(1024 * 1024):
                    written += len(chunk)
                    if written > limit:
                        raise ValueError(f"{relative!r} is over the {limit}-byte limit")
                    out.write(chunk)
            os.replace(temporary, parts[-1], src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=folder)
            raise
    return written


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One entry met by `find_files`: its relative path and what it is (`file`, `link`, `other`)."""

    relative: str
    kind: str


def _matches(pattern: list[str], parts: list[str]) -> bool:
    """Glob matching of path components, `**` standing for any number of folders (none included)."""
    if not pattern:
        return not parts
    if pattern[0] == "**":
        return any(_matches(pattern[1:], parts[i:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], pattern[0]) and _matches(pattern[1:], parts[1:])


def find_files(root: Path, patterns: list[str], limit: int = WALK_LIMIT) -> list[FileEntry]:
    """Every entry under `root` matching one of the glob `patterns` (`*`, `?`, `[…]`, `**`), found by
    walking the folder through descriptors: a link is reported as a `link`, never followed, whatever
    the pattern says; folders are descended, not reported. Sorted by path."""
    compiled = [parts_of(pattern) for pattern in patterns]
    found: list[FileEntry] = []
    seen = 0

    def walk(fd: int, prefix: list[str]) -> None:
        nonlocal seen
        with os.scandir(fd) as entries:
            listing = sorted(
                (entry.name, entry.is_dir(follow_symlinks=False), entry.is_symlink()) for entry in entries
            )
        for name, is_dir, is_link in listing:
            seen += 1
            if seen > limit:
                raise ValueError(f"the sandbox holds more than {limit} entries; collecting stopped")
            parts = [*prefix, name]
            if is_dir and len(parts) > DEPTH_LIMIT:
                found.append(FileEntry("/".join(parts), "other"))  # too deep to walk: named, skipped
                continue
            if is_dir:
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError:
                    found.append(FileEntry("/".join(parts), "link"))  # swapped while listed
                    continue
                try:
                    walk(child, parts)
                finally:
                    os.close(child)
                continue
            if any(_matches(pattern, parts) for pattern in compiled):
                kind = "link" if is_link else "file"
                if kind == "file":
                    with contextlib.suppress(OSError):
                        if not stat.S_ISREG(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                            kind = "other"
                found.append(FileEntry("/".join(parts), kind))

    with _folder(root) as top:
        walk(top, [])
    return found
