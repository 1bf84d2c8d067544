"""Atomic file writes: a crash leaves the old file or the new one, never half of one.

Each write goes to `.<name>.<random>.tmp` beside its target, locked (`flock`) while it is written. A
write that was killed leaves its temp file unlocked; the next write of the same target removes it.
"""

from __future__ import annotations

import contextlib
import errno
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
    """`target` made a copy of `source`, atomically (as `atomic_open` writes), copied by the kernel."""
    with atomic_open(target, "wb") as out, source.open("rb") as data:
        kernel_copy(data, out)


def kernel_copy(source: IO[bytes], target: IO[bytes]) -> None:
    """The rest of `source` appended to `target`, copied by the kernel (`copy_file_range`) where it can,
    without the bytes passing through this process; through user space where it cannot."""
    target.flush()
    left = os.fstat(source.fileno()).st_size - source.tell()
    try:
        while left > 0:
            copied = os.copy_file_range(source.fileno(), target.fileno(), left)
            if not copied:
                break
            left -= copied
    except OSError as err:  # a file system or kernel without it (EXDEV, ENOSYS, EOPNOTSUPP...)
        if err.errno not in (errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL, errno.EBADF):
            raise
    shutil.copyfileobj(source, target, 1 << 20)  # the rest, if any


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

    def publish(self) -> None:
        for temp in self._staged.values():
            with temp.path.open("rb") as handle:
                _datasync(handle.fileno())
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


class ScratchFolder:
    """A private folder in `parent` for files handed from one process to another (the build's workers
    leave each share's examples there for the parent to append), removed by `close`.

    It is locked (`flock` on the folder) while in use, so one left by a process that died is told from
    one in use and removed by the next `ScratchFolder` made in the same place."""

    def __init__(self, parent: Path) -> None:
        parent.mkdir(parents=True, exist_ok=True)
        for stale in parent.glob(".scratch-*"):
            with contextlib.suppress(OSError):
                _remove_if_unlocked(stale)
        while True:
            self.path = Path(tempfile.mkdtemp(prefix=".scratch-", dir=parent))
            self._lock = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)
            fcntl.flock(self._lock, fcntl.LOCK_EX)
            if os.fstat(self._lock).st_nlink:  # not taken for stale by another process before the lock
                break
            os.close(self._lock)

    def close(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        os.close(self._lock)


def _remove_if_unlocked(folder: Path) -> None:
    """Removed holding its lock: a process that made it a moment ago and locks it now finds it gone
    (`ScratchFolder` then makes another)."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        shutil.rmtree(folder, ignore_errors=True)
    except BlockingIOError:
        pass  # in use
    finally:
        os.close(fd)
