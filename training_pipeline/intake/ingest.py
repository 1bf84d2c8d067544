"""One day of a source into the trajectory store, with a quarantine and a manifest whose counts add up."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from training_pipeline.atomic import atomic_write_text
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
) -> IngestManifest:
    """Valid records to `parquet`, the rest to `quarantine`; the manifest is written last, so its
    presence means both files are complete. With `privacy`, the day is stored with its credentials
    already redacted as that profile redacts them (nothing is kept in clear that the datasets would not
    show); handles and private people are the filter's business, downstream."""
    records_in = 0
    redactions: Counter[str] = Counter()
    with TrajectoryParquetWriter(parquet) as store, QuarantineWriter(quarantine) as bad:
        for parsed in records:
            records_in += 1
            if parsed.trajectory is None:
                bad.add(parsed)
                continue
            text = parsed.text
            if privacy is not None:
                privacy.stats.redactions.clear()
                if privacy.redact_credentials(parsed.trajectory):
                    redactions.update(privacy.stats.redactions)
                    text = None  # stored as re-serialised, not as it came
            store.add(parsed.trajectory, parsed.origin, text)
    manifest = IngestManifest(
        records_in,
        store.count,
        bad.count,
        store.llm_call_count,
        source,
        bad.reasons,
        dict(sorted(redactions.items())),
    )
    manifest.write(manifest_path(parquet))
    return manifest
