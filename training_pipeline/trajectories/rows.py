"""A stored day's rows, gathered where trajectories are filtered (a worker of the pool, or the step's
process) and taken as an Arrow batch, which crosses the pool's pipe as Arrow pickles it (its buffers)."""

from __future__ import annotations

from typing import Any

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
            [pa.array(columns[field.name], field.type) for field in SCHEMA], schema=SCHEMA
        )
