"""The privacy-filtered layer of a stored day: trajectories in, filtered trajectories and a report out.

Normally the filter runs while the day is ingested (one parse per trajectory, `intake.ingest`), which
writes this layer itself; `filter_store` filters a stored day again, as after a change of entity
directory or profile (materialising `filtered_trajectories` without `trajectories`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from training_pipeline import jscompat
from training_pipeline.atomic import atomic_write_text
from training_pipeline.privacy.filter import PrivacyFilter
from training_pipeline.trajectories.parquet import TrajectoryParquetWriter, iter_stored


@dataclass(frozen=True)
class FilteredDay:
    """Where a filtered day lives: the store and its privacy report."""

    store: Path
    report: Path

    def write_report(self, report: dict[str, Any]) -> None:
        atomic_write_text(self.report, json.dumps(report, indent=2) + "\n")


def report_of(privacy: PrivacyFilter, redacted_at_ingest: Mapping[str, int] | None = None) -> dict[str, Any]:
    privacy.stats.redactions.update(redacted_at_ingest or {})
    return {"profile": privacy.profile, **privacy.stats.as_report()}


def filter_store(
    source: Path,
    target: Path,
    report_path: Path,
    privacy: PrivacyFilter,
    redacted_at_ingest: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Returns the report (also written to `report_path`): counts by rule (those the store was
    redacted with when it was written, plus any more), anonymisations, drops."""
    stats = privacy.stats
    with TrajectoryParquetWriter(target) as out:
        for origin, raw in iter_stored(source):
            trajectory = jscompat.loads(raw)
            before = stats.redaction_count, stats.anonymization_count
            if privacy.apply(trajectory, origin):
                # a row the filter left as it was is stored as it was (as the ingest's fused pass does)
                changed = (stats.redaction_count, stats.anonymization_count) != before
                out.add(trajectory, origin, None if changed else raw)
    report = report_of(privacy, redacted_at_ingest)
    atomic_write_text(report_path, json.dumps(report, indent=2) + "\n")
    return report
