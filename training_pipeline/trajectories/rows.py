"""A stored day's rows, gathered where trajectories are filtered (a worker of the pool, or the step's
process) and taken as an Arrow batch, which crosses the pool's pipe as Arrow pickles it (its buffers)."""

from __future__ import annotations

from array import array
from itertools import accumulate
from typing import Any

import numpy as np
import pyarrow as pa

from training_pipeline import jscompat
from training_pipeline.trajectories.models import iter_llm_calls

#: the stored day's columns: a few typed for querying, the trajectory itself whole as JSON in `raw`
SCHEMA = pa.schema(
    [
        ("trajectory_id", pa.string()),
        ("agent_id", pa.string()),
        ("start_time_ms", pa.float64()),
        ("llm_call_count", pa.int32()),
        ("origin", pa.string()),
        ("raw", pa.large_string()),
    ]
)


class StoreRows:
    """Stored trajectories' columns, gathered row by row and taken as an Arrow batch."""

    def __init__(self) -> None:
        self._columns: dict[str, list[Any]] = {name: [] for name in SCHEMA.names}

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

    def take(self) -> pa.RecordBatch:
        """The rows so far; the buffer starts again empty."""
        columns, self._columns = self._columns, {name: [] for name in SCHEMA.names}
        return pa.RecordBatch.from_arrays(
            [_array(columns[field.name], field.type) for field in SCHEMA], schema=SCHEMA
        )


def _array(values: list[Any], kind: pa.DataType) -> pa.Array:
    """`values` as an Arrow array, made from its buffers. `pa.array` of a Python list asks pandas whether
    the list is one of its arrays, importing it wherever it is installed (most Dagster projects): half
    a second and 40 MB in every worker of the pool, for nothing. Text is encoded strictly, as `pa.array`
    encodes it (a lone surrogate raises)."""
    if kind == pa.float64():
        return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(array("d", values))])
    if kind == pa.int32():
        return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(array("i", values))])
    encoded = [v if isinstance(v, bytes) else b"" if v is None else v.encode("utf-8") for v in values]
    offsets = array("q" if kind == pa.large_string() else "i", [0])
    offsets.extend(accumulate(map(len, encoded)))
    validity = None
    if None in values:
        valid = np.fromiter((v is not None for v in values), dtype=bool, count=len(values))
        validity = pa.py_buffer(np.packbits(valid, bitorder="little").tobytes())
    return pa.Array.from_buffers(
        kind, len(values), [validity, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    )
