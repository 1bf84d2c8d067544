"""One day of a source into the trajectory store, with a quarantine and a manifest whose counts add up."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from training_pipeline.atomic import atomic_write_text
from training_pipeline.intake.filtered import FilteredDay, report_of, stage
from training_pipeline.intake.quarantine import QuarantineWriter
from training_pipeline.privacy.filter import PrivacyFilter
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
    #: credentials redacted before the day was stored, by rule (the privacy report adds them in)
    redactions_by_rule: dict[str, int] = field(default_factory=dict)
    #: names this ingest: a filtered day staged by it is adopted only while the store is this one
    ingest_id: str = ""

    def write(self, path: Path) -> None:
        atomic_write_text(path, json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def read(cls, path: Path) -> IngestManifest:
        return cls(**json.loads(path.read_text(encoding="utf-8")))


def manifest_path(parquet: Path) -> Path:
    return parquet.with_suffix(".manifest.json")


def ingest_records(
    records: Iterable[ParsedRecord],
    parquet: Path,
    quarantine: Path,
    source: str,
    privacy: PrivacyFilter | None = None,
    filtered: FilteredDay | None = None,
    each_filtered: Callable[[dict[str, Any]], None] | None = None,
) -> IngestManifest:
    """Valid records to `parquet`, the rest to `quarantine`; the manifest is written last, so its
    presence means both files are complete. With `privacy`, the day is stored with its credentials
    already redacted as that profile redacts them (nothing is kept in clear that the datasets would not
    show). With `filtered` too, the same pass applies the rest of the filter (handles, private people)
    and stages the filtered day for `filtered_trajectories` to adopt: one parse per trajectory; each
    trajectory the filter keeps is also handed to `each_filtered` (the datasets' staged export)."""
    records_in = 0
    ingest_id = uuid.uuid4().hex
    fused = privacy is not None and filtered is not None
    if filtered is not None:  # an older staged day must not be adopted if this pass stops half-way
        filtered.stamp.unlink(missing_ok=True)
    with contextlib.ExitStack() as stack:
        store = stack.enter_context(TrajectoryParquetWriter(parquet))
        bad = stack.enter_context(QuarantineWriter(quarantine))
        staged = stack.enter_context(TrajectoryParquetWriter(filtered.staged().store)) if fused else None
        for parsed in records:
            records_in += 1
            if parsed.trajectory is None:
                bad.add(parsed)
                continue
            text = parsed.text
            if privacy is not None and privacy.redact_credentials(parsed.trajectory):
                text = None  # stored as re-serialised, not as it came
            store.add(parsed.trajectory, parsed.origin, text)  # serialised now: the filter may go on
            if staged is not None and privacy.apply(parsed.trajectory, parsed.origin, redacted=True):
                staged.add(parsed.trajectory, parsed.origin)
                if each_filtered is not None:
                    each_filtered(parsed.trajectory)
    redactions = dict(sorted(privacy.stats.redactions.items())) if privacy is not None else {}
    manifest = IngestManifest(
        records_in, store.count, bad.count, store.llm_call_count, source, bad.reasons, redactions, ingest_id
    )
    if fused:
        stage(filtered, report_of(privacy), ingest_id, privacy.fingerprint())
    manifest.write(manifest_path(parquet))
    return manifest
