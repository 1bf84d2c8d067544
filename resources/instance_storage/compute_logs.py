"""The instances' compute logs (`dagster.yaml`, `deploy/dagster.yaml`): Dagster's local files, read by
the UI as it reads `LocalComputeLogManager`'s, mirrored to the process's own stdout and stderr by a
thread rather than by processes.

To mirror a captured stream, Dagster's local manager starts a `tail -F` of its file and a Python
interpreter that kills the `tail` if the process dies: four processes for every run (every step under
the multiprocess or Celery executor), started on the cores the run is using and waited for when it
ends, ~30 ms of waiting in each run's process on this machine besides two interpreters' start-up. A
thread in the process follows the file instead: it cannot outlive the process, and it copies the file
to its end before the capture is over (a `tail` is stopped where it stands, so a step's last lines
could go unmirrored: dagster-io/dagster#23336).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

from dagster import Field, StringSource
from dagster._core.execution.compute_logs import redirect_to_file
from dagster._core.instance.ref import compute_logs_directory
from dagster._core.storage.compute_log_manager import CapturedLogContext, ComputeIOType
from dagster._core.storage.local_compute_log_manager import IO_TYPE_EXTENSION, LocalComputeLogManager
from dagster._serdes import ConfigurableClassData
from dagster._utils import ensure_file, touch_file

from training_pipeline.environment import dagster_home

#: how often the mirror looks for new output (`tail -F` looks every second)
POLL_SECONDS = 0.1
#: how long the end of a capture waits for the mirror to catch up with a stream nobody reads
FINISH_SECONDS = 5.0


class ThreadMirroredComputeLogManager(LocalComputeLogManager):
    """`LocalComputeLogManager`, its files and configuration, mirroring on a thread. Without a
    `base_dir`, the files go where Dagster's default puts them: `$DAGSTER_HOME/storage`."""

    @classmethod
    def config_type(cls) -> dict[str, Any]:
        return {**super().config_type(), "base_dir": Field(StringSource, is_required=False)}

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: dict[str, Any]
    ) -> ThreadMirroredComputeLogManager:
        config = dict(config_value)
        if "base_dir" not in config:
            home = dagster_home()
            if home is None:
                raise ValueError("compute_logs: set base_dir, or DAGSTER_HOME for its default")
            config["base_dir"] = compute_logs_directory(home)
        return cls(inst_data=inst_data, **config)

    @contextlib.contextmanager
    def capture_logs(self, log_key: Sequence[str]) -> Iterator[CapturedLogContext]:
        out = self.get_captured_local_path(log_key, IO_TYPE_EXTENSION[ComputeIOType.STDOUT])
        err = self.get_captured_local_path(log_key, IO_TYPE_EXTENSION[ComputeIOType.STDERR])
        with mirrored(sys.stdout, out), mirrored(sys.stderr, err):
            yield CapturedLogContext(log_key)
        touch_file(self.complete_artifact_path(log_key))  # as Dagster's: the capture is complete


@contextlib.contextmanager
def mirrored(stream: TextIO, path: str) -> Iterator[None]:
    """While the block runs, what the process writes to `stream` (at its file descriptor, so its
    children's output too) goes to the file at `path`, and a thread copies it on to where the stream
    pointed before."""
    ensure_file(path)
    try:
        target = os.dup(stream.fileno())
    except (AttributeError, OSError, io.UnsupportedOperation):
        # no descriptor (a test's captured stream): Dagster's redirect leaves such a stream alone too
        with redirect_to_file(stream, path):
            yield
        return
    follower = _Follower(path, target)
    try:
        with redirect_to_file(stream, path):
            follower.start()
            yield
    finally:
        follower.finish()


class _Follower(threading.Thread):
    """Copies what is appended to a file to a descriptor it owns (and closes when done)."""

    def __init__(self, path: str, target: int) -> None:
        super().__init__(name="compute-log-mirror", daemon=True)
        self._path = path
        self._target = target
        self._start_at = os.path.getsize(path)  # what this capture writes; not an earlier one's
        self._done = threading.Event()

    def run(self) -> None:
        try:
            with open(self._path, "rb") as source:
                source.seek(self._start_at)
                while True:
                    finishing = self._done.wait(POLL_SECONDS)
                    if not self._copy(source) or finishing:
                        return
        finally:
            os.close(self._target)

    def _copy(self, source: io.BufferedReader) -> bool:
        """The file's new bytes to the target; False once the target no longer takes them (a closed
        terminal): the file still has everything."""
        while chunk := source.read(1 << 16):
            view = memoryview(chunk)
            while view:
                try:
                    written = os.write(self._target, view)
                except OSError:
                    return False
                view = view[written:]
        return True

    def finish(self) -> None:
        """Once the stream writes to where it did before: the rest copied, then the thread ends."""
        if self.ident is None:  # never started (the redirect failed)
            os.close(self._target)
            return
        self._done.set()
        self.join(FINISH_SECONDS)  # a stream nobody reads may block it: the run does not wait for that
