"""How far a long build has gone, on stderr: the input read of its total, the records done, the rate and
the time left. On a terminal one line redrawn in place; in a log, a line every `every` seconds. Stdout
keeps only the result (the CLI's last line is JSON a script reads)."""

from __future__ import annotations

import threading
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    def __init__(self, total_bytes: int, stream: TextIO, every: float | None = None) -> None:
        self.total = max(total_bytes, 1)
        self.stream = stream
        self.terminal = stream.isatty()
        self.every = every if every is not None else (0.5 if self.terminal else 10.0)
        self.read_bytes = 0
        self.records = 0
        self._started = time.monotonic()
        self._shown = self._started  # nothing before the first interval: a short build says it once
        self._lock = threading.Lock()  # the input may be read on another thread than the results

    def read(self, size: int) -> None:
        """`size` more bytes of the input handed to the build."""
        with self._lock:
            self.read_bytes = min(self.total, self.read_bytes + size)
            self._maybe_show()

    def done(self, records: int) -> None:
        """`records` more records through the build (in a dataset, the quarantine or dropped)."""
        with self._lock:
            self.records += records
            self._maybe_show()

    def finish(self) -> None:
        with self._lock:
            self.read_bytes = self.total
            self._show(final=True)

    def _maybe_show(self) -> None:
        now = time.monotonic()
        if now - self._shown >= self.every:
            self._shown = now
            self._show()

    def _show(self, final: bool = False) -> None:
        elapsed = max(time.monotonic() - self._started, 1e-6)
        share = self.read_bytes / self.total
        line = (
            f"{self.read_bytes / 2**20:,.0f} of {self.total / 2**20:,.0f} MB read ({share:.0%}), "
            f"{self.records:,} records, {self.records / elapsed:,.0f}/s"
        )
        if final:
            line += f", done in {elapsed:,.1f} s"
        elif 0 < share < 1:  # the input's end, not the build's: the last records are still to go through
            line += f", the rest of the input read in about {elapsed * (1 - share) / share:,.0f} s"
        if self.terminal:
            self.stream.write(f"\r\x1b[K{line}" + ("\n" if final else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
