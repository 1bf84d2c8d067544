"""Atomic file writes: a crash leaves the old file or the new one, never half of one.

Each write goes to `.<name>.<random>.tmp` beside its target, locked (`flock`) while it is written. A
write that was killed leaves its temp file unlocked; the next write of the same target removes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

# mkstemp creates 0600 files; published files get the permissions an ordinary open() would give.
_UMASK = os.umask(0)
os.umask(_UMASK)
_FILE_MODE = 0o666 & ~_UMASK
#: the data (and the size) of a file to disk; macOS has no `fdatasync`
_datasync = getattr(os, "fdatasync", os.fsync)


class TempFile:
    """A temp file beside `target`, locked until `release`, after stale ones of the same target
    (their writers died: nobody holds their lock) are removed."""

    def __init__(self, target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temps(target)
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        fcntl.flock(fd, fcntl.LOCK_EX)
        self.fd, self.path = fd, Path(name)
        self._lock = os.dup(fd)  # the lock lives on the open file, which this keeps open

    def sync(self) -> None:
        """What is written to the file so far, to disk (the data and the size)."""
        _datasync(self._lock)

    def release(self) -> None:
        os.close(self._lock)


def remove_stale_temps(target: Path) -> list[Path]:
    """Remove the temp files an interrupted write of `target` left behind; returns them."""
    pattern = re.compile(rf"\.{re.escape(target.name)}\.[A-Za-z0-9_]{{8}}\.tmp")
    removed = []
    with contextlib.suppress(FileNotFoundError), os.scandir(target.parent) as listing:
        candidates = [Path(e.path) for e in listing if pattern.fullmatch(e.name)]
    for candidate in candidates:
        try:
            fd = os.open(candidate, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue  # a live writer's
        finally:
            os.close(fd)
        candidate.unlink(missing_ok=True)
        removed.append(candidate)
    return removed


@contextmanager
def atomic_open(path: Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temp file beside `path`; on success it is fsynced and renamed over `path`."""
    temp = TempFile(path)
    try:
        with os.fdopen(temp.fd, mode, encoding=None if "b" in mode else encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp.path, _FILE_MODE)
        os.replace(temp.path, path)
    except BaseException:
        temp.path.unlink(missing_ok=True)
        raise
    finally:
        temp.release()


def publish(tmp: Path, target: Path) -> None:
    """Make a fully written temp file visible under its final name, durably."""
    with Path(tmp).open("rb") as handle:
        os.fsync(handle.fileno())
    os.chmod(tmp, _FILE_MODE)
    os.replace(tmp, target)


def atomic_copy(source: Path, target: Path) -> None:
    """`target` made a copy of `source`, atomically (as `atomic_open` writes)."""
    with atomic_open(target, "wb") as out, source.open("rb") as data:
        shutil.copyfileobj(data, out, 1 << 20)


def atomic_write_text(path: Path, text: str) -> None:
    with atomic_open(path) as handle:
        handle.write(text)


class StagedFiles:
    """Several files written side by side and published together: every file is synced to disk first,
    then each is renamed into place, so a disk error while syncing publishes none of them.

    Temp files carry a `.tmp` suffix and a leading dot, so no reader mistakes them for output.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._staged: dict[Path, TempFile] = {}

    def open(self, name: str, mode: str = "w", buffering: int = -1) -> IO:
        target = self.directory / name
        temp = TempFile(target)
        self._staged[target] = temp
        return os.fdopen(temp.fd, mode, buffering, encoding=None if "b" in mode else "utf-8")

    def sync(self) -> None:
        """What the staged files hold so far, to disk: a writer that syncs as it goes has the disk work
        while it does, and `publish` then waits only for the rest."""
        for temp in self._staged.values():
            temp.sync()

    def publish(self) -> None:
        self.sync()
        for target, temp in self._staged.items():
            os.chmod(temp.path, _FILE_MODE)
            os.replace(temp.path, target)
            temp.release()
        self._staged.clear()

    def drop(self, name: str) -> None:
        """The staged file `name` is not published (its temp file removed)."""
        temp = self._staged.pop(self.directory / name)
        temp.path.unlink(missing_ok=True)
        temp.release()

    def discard(self) -> None:
        for temp in self._staged.values():
            temp.path.unlink(missing_ok=True)
            temp.release()
        self._staged.clear()
        with contextlib.suppress(OSError):  # a folder left empty is left by nobody
            self.directory.rmdir()
