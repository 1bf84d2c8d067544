"""A day in one pass: each trajectory is parsed once, validated, redacted and stored, filtered into the
staged filtered day, and exported into staged datasets, all as it streams by.

The daily assets keep their layers (a day can be re-filtered or re-exported alone); what the pass
staged is adopted by the later layers only while it is still what they would make: the filtered day
while the stored day and the filter are unchanged (`intake.filtered`), the datasets while the filtered
day is byte for byte the one they were exported from (its SHA-256, stamped beside them).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from training_pipeline.atomic import atomic_write_text, publish
from training_pipeline.datasets.export import DailyExamples, DatasetWriter, ExampleBatch, prepare
from training_pipeline.datasets.tasks import SUMMARY_FILE_NAME
from training_pipeline.datasets.validate import file_sha256, scanner_for
from training_pipeline.intake.filtered import FilteredDay
from training_pipeline.intake.ingest import IngestManifest, ingest_records
from training_pipeline.privacy.filter import PrivacyFilter
from training_pipeline.trajectories.records import ParsedRecord
from training_pipeline.trajectories.store import iter_trajectories

#: trajectories whose examples `export_store` joins per write (as a worker of the pass joins a share's)
_EXPORT_BATCH = 256
#: written last into a staged datasets folder: what it was exported from, and its previews
STAMP_NAME = "staged-by.json"


@dataclass(frozen=True)
class StagedDatasets:
    summary: dict[str, Any]
    previews: dict[str, list[dict[str, Any]]]


def staged_dir(datasets: Path) -> Path:
    return datasets.with_name(f".staged.{datasets.name}")


def ingest_day(
    records: Iterable[ParsedRecord],
    parquet: Path,
    quarantine: Path,
    source: str,
    privacy: PrivacyFilter,
    filtered: FilteredDay,
    datasets: Path,
    preview_rows: int = 3,
    workers: int = 1,
    scanner_secrets: tuple[str, ...] | None = None,
) -> IngestManifest:
    """The stored day, its quarantine and manifest, the staged filtered day and the staged datasets;
    with `workers` > 1, filtered and exported on that many processes. With `scanner_secrets`, each
    example is also inspected as the dataset checks' scanner (with those secret values) inspects it,
    where it is made, and the inspections are staged with the datasets."""
    (staged_dir(datasets) / STAMP_NAME).unlink(missing_ok=True)  # nothing older adopted if this stops
    writer = DatasetWriter(
        staged_dir(datasets),
        preview_rows=preview_rows,
        provenance=True,
        inspected=scanner_secrets is not None,
    )
    try:
        manifest = ingest_records(
            records,
            parquet,
            quarantine,
            source,
            privacy,
            filtered,
            DailyExamples(scanner_secrets),
            writer.add_batch,
            workers,
        )
    except BaseException:
        writer.abort()
        raise
    # the scanner's fingerprint once the pass is done: made here first, it held up the pool's start
    # (importing detect-secrets), which the first share made here now overlaps
    writer.close(scanner_for(scanner_secrets).fingerprint() if scanner_secrets is not None else None)
    stamp = {"filtered_sha256": file_sha256(filtered.staged().store), "previews": writer.previews}
    atomic_write_text(staged_dir(datasets) / STAMP_NAME, json.dumps(stamp, ensure_ascii=False))
    return manifest


def adopt_datasets(datasets: Path, filtered_store: Path) -> StagedDatasets | None:
    """The staged datasets moved into `datasets` when they were exported from exactly the filtered day
    now in `filtered_store`; None (nothing changed) otherwise. The summary moves last, so a reader that
    finds it finds the whole day."""
    staged = staged_dir(datasets)
    try:
        stamp = json.loads((staged / STAMP_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not filtered_store.is_file() or stamp.get("filtered_sha256") != file_sha256(filtered_store):
        return None
    summary_file = staged / SUMMARY_FILE_NAME
    if not summary_file.is_file():
        return None
    summary = json.loads(summary_file.read_text(encoding="utf-8"))
    (staged / STAMP_NAME).unlink()  # first: a stamp never outlives the files it vouches for
    datasets.mkdir(parents=True, exist_ok=True)
    names = sorted(n for n in os.listdir(staged) if n != SUMMARY_FILE_NAME and not n.startswith("."))
    for name in [*names, SUMMARY_FILE_NAME]:
        publish(staged / name, datasets / name)
    with contextlib.suppress(OSError):
        staged.rmdir()
    return StagedDatasets(summary, stamp["previews"])


def export_store(filtered: Path, out_dir: Path, preview_rows: int = 3) -> DatasetWriter:
    """Build the five datasets of a stored day of filtered trajectories; returns the closed writer
    (its `counts`, `previews` and summary)."""
    writer = DatasetWriter(out_dir, preview_rows=preview_rows, provenance=True)
    trajectories = iter_trajectories(filtered)
    try:
        while prepared := [
            prepare(trajectory) for _, trajectory in itertools.islice(trajectories, _EXPORT_BATCH)
        ]:
            writer.add_batch(ExampleBatch.of(prepared, provenance=True))
    except BaseException:
        writer.abort()
        raise
    writer.close()
    return writer
