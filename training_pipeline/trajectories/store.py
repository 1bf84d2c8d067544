"""Trajectories at rest: Parquet files of one row per trajectory.

A few columns are typed for querying (id, agent, start time, call count, origin); the trajectory itself
is kept whole as JSON text in `raw`, because its shape is open-ended (unknown fields are kept) and the
next stage needs it exactly as it was.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from training_pipeline import jscompat
from training_pipeline.atomic import TempFile, publish
from training_pipeline.trajectories.models import iter_llm_calls

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
_BATCH_ROWS = 1024


class TrajectoryParquetWriter:
    """Buffered rows written in bounded row groups to a temp file, renamed into place on a clean exit."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._temp = TempFile(path)
        os.close(self._temp.fd)  # Parquet opens it by name; the lock stays with the temp's other handle
        self._tmp = self._temp.path
        self._writer = pq.ParquetWriter(self._tmp, SCHEMA, compression="zstd")
        self._rows: dict[str, list[Any]] = {name: [] for name in SCHEMA.names}
        self.count = 0
        self.llm_call_count = 0

    def add(self, trajectory: dict[str, Any], origin: str, text: str | None = None) -> None:
        calls = sum(1 for _ in iter_llm_calls(trajectory))
        rows = self._rows
        rows["trajectory_id"].append(trajectory["trajectoryId"])
        agent = trajectory.get("agentId")
        rows["agent_id"].append(agent if isinstance(agent, str) else None)
        rows["start_time_ms"].append(float(trajectory["startTime"]))
        rows["llm_call_count"].append(calls)
        rows["origin"].append(origin)
        rows["raw"].append(text.rstrip("\r\n") if text is not None else jscompat.dumps(trajectory))
        self.count += 1
        self.llm_call_count += calls
        if len(rows["raw"]) >= _BATCH_ROWS:
            self._flush()

    def _flush(self) -> None:
        if self._rows["raw"]:
            self._writer.write_table(pa.table(self._rows, schema=SCHEMA))
            self._rows = {name: [] for name in SCHEMA.names}

    def __enter__(self) -> TrajectoryParquetWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if kind is None:
                self._flush()
            self._writer.close()
            if kind is None:
                publish(self._tmp, self.path)
        finally:
            self._tmp.unlink(missing_ok=True)
            self._temp.release()


def iter_trajectories(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(origin, trajectory) pairs of a store file, one row group at a time."""
    parquet = pq.ParquetFile(path)
    for batch in parquet.iter_batches(columns=["origin", "raw"], batch_size=_BATCH_ROWS):
        for origin, raw in zip(
            batch.column("origin").to_pylist(), batch.column("raw").to_pylist(), strict=True
        ):
            yield origin, jscompat.loads(raw)


def row_count(path: Path) -> int:
    return pq.ParquetFile(path).metadata.num_rows


def day_profile(path: Path) -> dict[str, Any]:
    """Who produced a stored day and how big its trajectories are: for the asset's metadata."""
    import pandas as pd  # here, not at the top: it costs a third of a second of CLI start-up

    frame = pq.read_table(path, columns=["agent_id", "llm_call_count", "start_time_ms"]).to_pandas()
    if frame.empty:
        return {"agents": {}, "calls_per_trajectory": None, "first_start": None, "last_start": None}
    starts = pd.to_datetime(frame["start_time_ms"], unit="ms", utc=True)
    calls = frame["llm_call_count"]
    return {
        "agents": {
            str(k): int(v) for k, v in frame["agent_id"].fillna("(none)").value_counts().head(20).items()
        },
        "calls_per_trajectory": {"mean": round(float(calls.mean()), 2), "max": int(calls.max())},
        "first_start": starts.min().isoformat(),
        "last_start": starts.max().isoformat(),
    }
