"""Trajectories at rest: Parquet files of one row per trajectory.

A few columns are typed for querying (id, agent, start time, call count, origin); the trajectory itself
is kept whole as JSON text in `raw`, because its shape is open-ended (unknown fields are kept) and the
next stage needs it exactly as it was.

`pyarrow.parquet` and `pyarrow.compute` are imported where files are written and read: a worker of the
pool builds rows (`StoreRows`) and never a file, and its fork server starts 0.08 s sooner without them.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
import pyarrow as pa

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
#: the columns a reader filters on get dictionaries and min/max statistics; `raw` (kilobytes of JSON per
#: row, all distinct) gets neither: building them was a sixth of the writer's time, for no use
_QUERIED = [name for name in SCHEMA.names if name != "raw"]


class StoreRows:
    """Stored trajectories' columns, gathered row by row and taken as one Arrow batch. A worker of the
    pool fills one per share, so the parent only writes the batch (a batch crosses processes as Arrow
    buffers, far cheaper than rows)."""

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
        if text is None:
            raw: str | bytes = jscompat.dumps(trajectory)
        else:
            raw = text.rstrip(b"\r\n") if isinstance(text, bytes) else text.rstrip("\r\n")
        columns["raw"].append(raw)
        return raw

    def __len__(self) -> int:
        return len(self._columns["raw"])

    def take(self) -> pa.RecordBatch:
        """The rows so far as a batch; the buffer starts again empty.

        Arrays are assembled from their buffers: Arrow's conversion of Python lists imports pandas
        (half a second and 40 MB in every process that builds a batch)."""
        columns, self._columns = self._columns, {name: [] for name in SCHEMA.names}
        arrays = [
            _numbers(columns[field.name], field.type)
            if field.type in _NUMBERS
            else _strings(columns[field.name], field.type)
            for field in SCHEMA
        ]
        return pa.RecordBatch.from_arrays(arrays, schema=SCHEMA)


def rows_of(batch: pa.RecordBatch, indices: list[int]) -> pa.RecordBatch:
    """The rows of `batch` at `indices`, in that order (the index array built from its buffer: Arrow's
    conversion of a list or an ndarray imports pandas)."""
    return batch.take(_numbers(indices, pa.int64()))


#: the numeric columns' types, as numpy's
_NUMBERS = {pa.float64(): np.float64, pa.int32(): np.int32, pa.int64(): np.int64}


def _numbers(values: list[float], kind: pa.DataType) -> pa.Array:
    data = np.asarray(values, dtype=_NUMBERS[kind])
    return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(data)])


def _strings(values: list[str | bytes | None], kind: pa.DataType) -> pa.Array:
    """A string column from its UTF-8 bytes (values that are bytes already are), offsets and validity
    bitmap."""
    encoded = [
        b"" if value is None else value if isinstance(value, bytes) else value.encode("utf-8")
        for value in values
    ]
    offsets = np.zeros(len(values) + 1, dtype=np.int64 if pa.types.is_large_string(kind) else np.int32)
    np.cumsum([len(value) for value in encoded], out=offsets[1:])
    missing = np.fromiter((value is None for value in values), dtype=bool, count=len(values))
    validity = pa.py_buffer(np.packbits(~missing, bitorder="little")) if missing.any() else None
    buffers = [validity, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    return pa.Array.from_buffers(kind, len(values), buffers, null_count=int(missing.sum()))


class TrajectoryParquetWriter:
    """Rows or batches written in bounded row groups to a temp file, renamed into place on a clean exit.

    Batches are compressed and written on a thread of the writer's own (Arrow lets go of the GIL while
    it compresses), at most two waiting, so the producer goes on parsing and filtering meanwhile."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._temp = TempFile(path)
        os.close(self._temp.fd)  # Parquet opens it by name; the lock stays with the temp's other handle
        self._tmp = self._temp.path
        import pyarrow.parquet as pq

        self._writer = pq.ParquetWriter(
            self._tmp, SCHEMA, compression="zstd", use_dictionary=_QUERIED, write_statistics=_QUERIED
        )
        self._rows = StoreRows()
        self.count = 0
        self.llm_call_count = 0
        self._batches: queue.Queue[pa.RecordBatch | None] = queue.Queue(maxsize=2)
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._drain, name=f"parquet:{path.name}", daemon=True)
        self._thread.start()

    def add(self, trajectory: dict[str, Any], origin: str, text: str | bytes | None = None) -> None:
        self._rows.add(trajectory, origin, text)
        if len(self._rows) >= _BATCH_ROWS:
            self._flush()

    def add_batch(self, batch: pa.RecordBatch) -> None:
        """Rows a `StoreRows` gathered, maybe in another process; written after the rows added before."""
        self._flush()
        if batch.num_rows:
            self._write(batch)

    def _flush(self) -> None:
        if len(self._rows):
            self._write(self._rows.take())

    def _write(self, batch: pa.RecordBatch) -> None:
        import pyarrow.compute as pc

        if self._failure is not None:
            raise self._failure
        self._batches.put(batch)
        self.count += batch.num_rows
        self.llm_call_count += pc.sum(batch.column("llm_call_count")).as_py() or 0

    def _drain(self) -> None:
        while (batch := self._batches.get()) is not None:
            if self._failure is None:
                try:
                    self._writer.write_batch(batch)
                except BaseException as err:  # raised to the producer at its next write or the close
                    self._failure = err

    def __enter__(self) -> TrajectoryParquetWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            try:
                if kind is None:
                    self._flush()
            finally:
                self._batches.put(None)
                self._thread.join()
                self._writer.close()
            if kind is None:
                if self._failure is not None:
                    raise self._failure
                publish(self._tmp, self.path)
        finally:
            self._tmp.unlink(missing_ok=True)
            self._temp.release()


def iter_trajectories(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(origin, trajectory) pairs of a store file, one row group at a time."""
    for origin, raw in iter_stored(path):
        yield origin, jscompat.loads(raw)


def iter_stored(path: Path) -> Iterator[tuple[str, str]]:
    """(origin, the trajectory's JSON as stored) pairs of a store file, one row group at a time."""
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(path)
    for batch in parquet.iter_batches(columns=["origin", "raw"], batch_size=_BATCH_ROWS):
        yield from zip(batch.column("origin").to_pylist(), batch.column("raw").to_pylist(), strict=True)


def row_count(path: Path) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows


def day_profile(path: Path) -> dict[str, Any]:
    """Who produced a stored day and how big its trajectories are: for the asset's metadata."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.ParquetFile(path).read(columns=["agent_id", "llm_call_count", "start_time_ms"])
    if table.num_rows == 0:
        return {"agents": {}, "calls_per_trajectory": None, "first_start": None, "last_start": None}
    # no `pc.fill_null`: it imports pandas (half a second of every run's start)
    counted = pc.value_counts(table.column("agent_id"))
    agents = sorted(
        zip(
            counted.field("counts").to_pylist(),
            ["(none)" if agent is None else agent for agent in counted.field("values").to_pylist()],
            strict=True,
        ),
        key=lambda entry: (-entry[0], entry[1]),
    )
    calls = table.column("llm_call_count")
    starts = pc.min_max(table.column("start_time_ms")).as_py()
    return {
        "agents": {agent: count for count, agent in agents[:20]},
        "calls_per_trajectory": {"mean": round(pc.mean(calls).as_py(), 2), "max": pc.max(calls).as_py()},
        "first_start": _utc(starts["min"]),
        "last_start": _utc(starts["max"]),
    }


def _utc(milliseconds: float) -> str:
    return datetime.fromtimestamp(milliseconds / 1000, tz=UTC).isoformat()
