"""A day's layers: the stored day (with its quarantine), the privacy-filtered day and the five datasets.

`build_day` makes whichever layers are asked for, and reads the others as they are on disk. Asked for
all three (a nightly run, a backfill), it is one pass: each trajectory is parsed once, validated,
redacted and stored, filtered, and exported, all as it streams by. Asked for the filtered layer
without the stored one (a new entity directory), it filters the stored day again; asked for datasets
alone, it exports the filtered day again.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from training_pipeline.datasets.export import DailyExamples, DatasetWriter, ExampleBatch, prepare
from training_pipeline.datasets.training_tasks import TASKS, Task
from training_pipeline.datasets.validate import scanner_for
from training_pipeline.intake.filtered import FilteredDay, filter_store
from training_pipeline.intake.ingest import IngestManifest, ingest_records, manifest_path
from training_pipeline.privacy.filter import PrivacyFilter
from training_pipeline.trajectories.parquet import iter_trajectories
from training_pipeline.trajectories.parsing import ParsedRecord

#: trajectories whose examples `export_store` joins per write (as a worker of the pass joins a share's)
_EXPORT_BATCH = 256


@dataclass(frozen=True)
class DayFiles:
    """Where one day's layers live."""

    stored: Path
    quarantine: Path
    filtered: FilteredDay
    datasets: Path


@dataclass(frozen=True)
class DayBuilt:
    """What `build_day` made: None for a layer it was not asked for."""

    manifest: IngestManifest | None
    #: the privacy report (`filtered_trajectories`)
    report: dict[str, Any] | None
    #: the datasets' summary and a few rows of each
    summary: dict[str, Any] | None
    previews: dict[Task, list[dict[str, Any]]] | None


class LayerMissing(Exception):
    """A layer the asked-for layers are made from is not on disk (it was never materialised)."""

    def __init__(self, layer: str, path: Path) -> None:
        super().__init__(f"{layer} is not materialised ({path} is missing); materialise it first")
        self.layer, self.path = layer, path


def build_day(
    files: DayFiles,
    privacy: Callable[[], PrivacyFilter],
    *,
    records: Callable[[], Iterable[ParsedRecord]] | None = None,
    source: str = "",
    filtered: bool = True,
    datasets: Collection[Task] = TASKS,
    workers: int = 1,
    scanner_secrets: tuple[str, ...] | None = None,
    personal_kinds: frozenset[str] = frozenset(),
    preview_rows: int = 3,
) -> DayBuilt:
    """The layers asked for: the stored day when `records` is given (read from `source`), the
    filtered day when `filtered`, the `datasets` named (all five are built, only those are published,
    with the summary). `privacy` makes a fresh filter (its counts are per pass). With `workers` > 1 the
    pass runs on that many processes. With `scanner_secrets`, each example is inspected as the dataset
    checks' scanner (with those secret values, looking for `personal_kinds`) inspects it, where it is
    made, and the inspections are written beside the datasets (`validate.INSPECTION_FILE_NAME`): a cache
    of the checks' scan."""
    manifest = report = None
    writer: DatasetWriter | None = None
    if records is not None:
        fused_export = filtered and bool(datasets)
        if fused_export:
            writer = _writer(files.datasets, preview_rows, scanner_secrets is not None)
        try:
            manifest = ingest_records(
                records(),
                files.stored,
                files.quarantine,
                source,
                privacy(),
                files.filtered if filtered else None,
                DailyExamples(scanner_secrets, personal_kinds) if fused_export else None,
                writer.add_batch if writer is not None else None,
                workers,
            )
        except BaseException:
            if writer is not None:
                writer.abort()
            raise
        if filtered:
            report = _read_report(files.filtered)
    elif filtered:
        _require(files.stored, "trajectories")
        ingested = IngestManifest.read(manifest_path(files.stored))
        report = filter_store(
            files.stored, files.filtered.store, files.filtered.report, privacy(), ingested.redactions_by_rule
        )
    if not datasets:
        return DayBuilt(manifest, report, None, None)
    if writer is None:  # the filtered day on disk, exported again
        _require(files.filtered.store, "filtered_trajectories")
        writer = export_store(files.filtered.store, files.datasets, preview_rows, publish=datasets)
    else:
        inspected_by = (
            scanner_for(scanner_secrets, personal_kinds).fingerprint()
            if scanner_secrets is not None
            else None
        )
        writer.close(inspected_by, publish=datasets)
    return DayBuilt(manifest, report, writer.last_summary, writer.previews)


def export_store(
    filtered: Path, out_dir: Path, preview_rows: int = 3, publish: Collection[Task] = TASKS
) -> DatasetWriter:
    """Build the five datasets of a stored day of filtered trajectories and publish those named in
    `publish` with the summary; returns the closed writer (its `counts`, `previews` and summary)."""
    writer = _writer(out_dir, preview_rows, inspected=False)
    trajectories = iter_trajectories(filtered)
    try:
        while prepared := [
            prepare(trajectory) for _, trajectory in itertools.islice(trajectories, _EXPORT_BATCH)
        ]:
            writer.add_batch(ExampleBatch.of(prepared, provenance=True))
    except BaseException:
        writer.abort()
        raise
    writer.close(publish=publish)
    return writer


def _writer(out_dir: Path, preview_rows: int, inspected: bool) -> DatasetWriter:
    return DatasetWriter(
        out_dir, preview_rows=preview_rows, provenance=True, inspected=inspected, distinct_ids=True
    )


def _read_report(day: FilteredDay) -> dict[str, Any]:
    return json.loads(day.report.read_text(encoding="utf-8"))


def _require(path: Path, layer: str) -> None:
    if not path.exists():
        raise LayerMissing(layer, path)
