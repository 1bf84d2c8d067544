"""A stored day's rows, gathered where trajectories are filtered, as the buffers of Arrow's columns.

A worker of the pool builds a share's rows and the step's process writes them (`store.batch_of` wraps
the buffers as Arrow arrays without copying them). The buffers are made with the standard library:
importing Arrow and numpy was a third of the pool's fork server start (0.14-0.18 s of 0.45-0.6 s before
any worker could work), and 20 MB of every worker.
"""

from __future__ import annotations

import os
import tempfile
from array import array
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any, Literal

from training_pipeline import jscompat
from training_pipeline.trajectories.models import iter_llm_calls

Kind = Literal["string", "large_string", "float64", "int32"]
#: the stored day's columns, in order, and their Arrow types (`store.SCHEMA` is made of these)
COLUMNS: tuple[tuple[str, Kind], ...] = (
    ("trajectory_id", "string"),
    ("agent_id", "string"),
    ("start_time_ms", "float64"),
    ("llm_call_count", "int32"),
    ("origin", "string"),
    ("raw", "large_string"),
)
#: `array` type codes of Arrow's fixed-width layouts: offsets of a string column (32 and 64 bits), values
#: of a number one
_CODES: dict[Kind, str] = {"string": "i", "large_string": "q", "float64": "d", "int32": "i"}


@dataclass(frozen=True)
class Rows:
    """Rows of the stored day: each column's Arrow buffers (validity bitmap or None, then offsets and
    UTF-8 data for a string column, the values for a number one) and its count of missing values."""

    count: int
    buffers: dict[str, tuple[list[bytes | None], int]]

    def spill(self, folder: Path) -> SpilledRows:
        """These rows with their buffers left in a file in `folder`, for a worker to send back instead of
        the bytes (a share's are a megabyte of JSON): the step's process maps the file and Arrow reads
        the buffers from the map (`store.batch_of`), so they never pass through the pool's pipe."""
        fd, name = tempfile.mkstemp(prefix="rows-", dir=folder)
        layout: dict[str, tuple[list[tuple[int, int] | None], int]] = {}
        position = 0
        with os.fdopen(fd, "wb") as handle:
            for column, (buffers, missing) in self.buffers.items():
                spans: list[tuple[int, int] | None] = []
                for buffer in buffers:
                    if buffer is None:
                        spans.append(None)
                        continue
                    handle.write(buffer)
                    spans.append((position, len(buffer)))
                    position += len(buffer)
                layout[column] = (spans, missing)
        return SpilledRows(self.count, Path(name), layout)


@dataclass(frozen=True)
class SpilledRows:
    """`Rows` left in a file: where each buffer lies in it (offset, length; None for a missing bitmap)."""

    count: int
    path: Path
    layout: dict[str, tuple[list[tuple[int, int] | None], int]]


class StoreRows:
    """Stored trajectories' columns, gathered row by row and taken as `Rows`. A worker of the pool fills
    one per share, so the step's process only writes them (buffers cross processes far cheaper than
    rows)."""

    def __init__(self) -> None:
        self._columns: dict[str, list[Any]] = {name: [] for name, _ in COLUMNS}

    def add(self, trajectory: dict[str, Any], origin: str, text: str | bytes | None = None) -> str | bytes:
        """`text`: the trajectory's JSON as it came (text, or UTF-8 bytes), when unchanged (stored as it
        is). Returns the JSON stored."""
        columns = self._columns
        agent = trajectory.get("agentId")
        columns["trajectory_id"].append(trajectory["trajectoryId"])
        columns["agent_id"].append(agent if isinstance(agent, str) else None)
        columns["start_time_ms"].append(float(trajectory["startTime"]))
        columns["llm_call_count"].append(sum(1 for _ in iter_llm_calls(trajectory)))
        columns["origin"].append(origin)
        if text is None:  # serialised as UTF-8 bytes, which the column takes as they are
            raw: str | bytes = jscompat.dumpb(trajectory)
        else:
            raw = text.rstrip(b"\r\n") if isinstance(text, bytes) else text.rstrip("\r\n")
        columns["raw"].append(raw)
        return raw

    def copy_rows(self, other: StoreRows, indices: list[int]) -> None:
        """`other`'s rows at `indices` added here, as they are."""
        for name, values in self._columns.items():
            source = other._columns[name]
            values.extend(source[index] for index in indices)

    def __len__(self) -> int:
        return len(self._columns["raw"])

    def take(self) -> Rows:
        """The rows so far; the buffer starts again empty."""
        columns, self._columns = self._columns, {name: [] for name, _ in COLUMNS}
        buffers = {
            name: _strings(columns[name], kind) if kind.endswith("string") else _numbers(columns[name], kind)
            for name, kind in COLUMNS
        }
        return Rows(len(columns["raw"]), buffers)


def _numbers(values: list[float], kind: Kind) -> tuple[list[bytes | None], int]:
    return [None, array(_CODES[kind], values).tobytes()], 0


def _strings(values: list[str | bytes | None], kind: Kind) -> tuple[list[bytes | None], int]:
    """A string column's validity bitmap (None when nothing is missing), offsets and UTF-8 bytes (values
    that are bytes already are)."""
    encoded = [
        b"" if value is None else value if isinstance(value, bytes) else value.encode("utf-8")
        for value in values
    ]
    offsets = array(_CODES[kind], accumulate(map(len, encoded), initial=0)).tobytes()
    missing = values.count(None)
    validity = None
    if missing:
        bitmap = bytearray((len(values) + 7) // 8)
        for index, value in enumerate(values):
            if value is not None:
                bitmap[index >> 3] |= 1 << (index & 7)
        validity = bytes(bitmap)
    return [validity, offsets, b"".join(encoded)], missing
