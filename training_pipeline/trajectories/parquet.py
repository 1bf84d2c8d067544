"""Trajectories at rest: Parquet files of one row per trajectory.

A few columns are typed for querying (id, agent, start time, call count, origin); the trajectory itself
is kept whole as JSON text in `raw`, because its shape is open-ended (unknown fields are kept) and the
next stage needs it exactly as it was.

`pyarrow.parquet` is imported where files are written and read, not by the pool's workers, which only
gather rows (`rows.StoreRows`).
"""

from __future__ import annotations

import os
import queue
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import pyarrow as pa

from training_pipeline import jscompat
from training_pipeline.atomic import TempFile, publish
from training_pipeline.trajectories.rows import SCHEMA, StoreRows

_BATCH_ROWS = 1024
#: the columns a reader filters on get dictionaries and min/max statistics; `raw` (kilobytes of JSON per
#: row, all distinct) gets neither: building them was a sixth of the writer's time, for no use
_QUERIED = [name for name in SCHEMA.names if name != "raw"]


def rows_of(batch: pa.RecordBatch, indices: list[int]) -> pa.RecordBatch:
    """The rows of `batch` at `indices`, in that order."""
    return batch.take(pa.array(indices, pa.int64()))


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
        self.profile = DayProfile()
        self._batches: queue.Queue[pa.RecordBatch | None] = queue.Queue(maxsize=2)
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._drain, name=f"parquet:{path.name}", daemon=True)
        self._thread.start()

    def add(self, trajectory: dict[str, Any], origin: str, text: str | bytes | None = None) -> None:
        self._rows.add(trajectory, origin, text)
        if len(self._rows) >= _BATCH_ROWS:
            self._flush()

    def add_batch(self, batch: pa.RecordBatch) -> None:
        """Rows gathered elsewhere (a worker's `StoreRows`); written after the rows added before."""
        self._flush()
        if batch.num_rows:
            self._write(batch)

    def _flush(self) -> None:
        if len(self._rows):
            self._write(self._rows.take())

    def _write(self, batch: pa.RecordBatch) -> None:
        if self._failure is not None:
            raise self._failure
        self._batches.put(batch)
        self.count += batch.num_rows
        self.profile.add(batch)

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
    for group in iter_row_groups(path, ["origin", "raw"]):
        yield from zip(group.column("origin").to_pylist(), group.column("raw").to_pylist(), strict=True)


def iter_row_groups(path: Path, columns: list[str] | None = None) -> Iterator[pa.Table]:
    """The `columns` of a Parquet file, a row group at a time, read on this thread: memory is bounded
    by the largest row group (ours are a share or `_BATCH_ROWS` rows). Arrow's batch reader reads ahead
    on its own threads, and the allocator kept what they used, growing with the file."""
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(path)
    for index in range(parquet.num_row_groups):
        yield parquet.read_row_group(index, columns=columns, use_threads=False)


def row_count(path: Path) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows


class DayProfile:
    """Who produced a stored day and how big its trajectories are (the asset's metadata), gathered from
    the batches as they are written rather than read back from the file afterwards."""

    def __init__(self) -> None:
        self.agents: Counter[str | None] = Counter()
        self.trajectories = 0
        self.llm_calls = 0
        self.most_calls = 0
        self.first_start = float("inf")
        self.last_start = float("-inf")

    def add(self, batch: pa.RecordBatch) -> None:
        if not batch.num_rows:
            return
        self.agents.update(batch.column("agent_id").to_pylist())
        # as lists: `to_numpy` imports pandas where it is installed (see `rows._array`)
        calls = batch.column("llm_call_count").to_pylist()
        starts = batch.column("start_time_ms").to_pylist()
        self.trajectories += batch.num_rows
        self.llm_calls += sum(calls)
        self.most_calls = max(self.most_calls, max(calls))
        self.first_start = min(self.first_start, min(starts))
        self.last_start = max(self.last_start, max(starts))

    def summary(self) -> dict[str, Any]:
        """The 20 agents with most trajectories (most first, then by name; `(none)` for a trajectory
        without one), calls per trajectory and the first and last start."""
        if not self.trajectories:
            return {"agents": {}, "calls_per_trajectory": None, "first_start": None, "last_start": None}
        named = sorted(
            (("(none)" if agent is None else agent, count) for agent, count in self.agents.items()),
            key=lambda entry: (-entry[1], entry[0]),
        )
        return {
            "agents": dict(named[:20]),
            "calls_per_trajectory": {
                "mean": round(self.llm_calls / self.trajectories, 2),
                "max": self.most_calls,
            },
            "first_start": _utc(self.first_start),
            "last_start": _utc(self.last_start),
        }


def _utc(milliseconds: float) -> str:
    return datetime.fromtimestamp(milliseconds / 1000, tz=UTC).isoformat()
