"""One day of a source into the trajectory store, with a quarantine and a manifest whose counts add up."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from training_pipeline.atomic import atomic_write_text
from training_pipeline.trajectories.quarantine import QuarantineWriter
from training_pipeline.trajectories.records import ParsedRecord
from training_pipeline.trajectories.store import TrajectoryParquetWriter


@dataclass(frozen=True)
class IngestManifest:
    """`records_in == kept + quarantined`, always."""

    records_in: int
    kept: int
    quarantined: int
    llm_call_count: int
    source: str
    quarantine_reasons: dict[str, int] = field(default_factory=dict)

    def write(self, path: Path) -> None:
        atomic_write_text(path, json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def read(cls, path: Path) -> IngestManifest:
        return cls(**json.loads(path.read_text(encoding="utf-8")))


def manifest_path(parquet: Path) -> Path:
    return parquet.with_suffix(".manifest.json")


def ingest_records(
    records: Iterable[ParsedRecord], parquet: Path, quarantine: Path, source: str
) -> IngestManifest:
    """Valid records to `parquet`, the rest to `quarantine`; the manifest is written last, so its
    presence means both files are complete."""
    records_in = 0
    with TrajectoryParquetWriter(parquet) as store, QuarantineWriter(quarantine) as bad:
        for parsed in records:
            records_in += 1
            if parsed.trajectory is None:
                bad.add(parsed)
            else:
                store.add(parsed.trajectory, parsed.origin, parsed.text)
    manifest = IngestManifest(records_in, store.count, bad.count, store.llm_call_count, source, bad.reasons)
    manifest.write(manifest_path(parquet))
    return manifest
