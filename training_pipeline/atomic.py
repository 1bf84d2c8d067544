"""Atomic file writes: a crash leaves the old file or the new one, never half of one."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

# mkstemp creates 0600 files; published files get the permissions an ordinary open() would give.
_UMASK = os.umask(0)
os.umask(_UMASK)
_FILE_MODE = 0o666 & ~_UMASK


@contextmanager
def atomic_open(path: Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temp file beside `path`; on success it is fsynced and renamed over `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, _FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def publish(tmp: Path, target: Path) -> None:
    """Make a fully written temp file visible under its final name, durably."""
    with Path(tmp).open("rb") as handle:
        os.fsync(handle.fileno())
    os.chmod(tmp, _FILE_MODE)
    os.replace(tmp, target)


def atomic_write_text(path: Path, text: str) -> None:
    with atomic_open(path) as handle:
        handle.write(text)


class StagedFiles:
    """Several files written side by side and published together (each by an atomic rename).

    Temp files carry a `.tmp` suffix and a leading dot, so no reader mistakes them for output.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._staged: dict[Path, Path] = {}

    def open(self, name: str, mode: str = "w") -> IO:
        target = self.directory / name
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=self.directory)
        self._staged[target] = Path(tmp)
        return os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8")

    def publish(self) -> None:
        for target, tmp in self._staged.items():
            publish(tmp, target)
        self._staged.clear()

    def discard(self) -> None:
        for tmp in self._staged.values():
            tmp.unlink(missing_ok=True)
        self._staged.clear()
