"""The privacy-filtered layer of a stored day: trajectories in, filtered trajectories and a report out.

Normally the filter runs while the day is ingested (one parse per trajectory): the ingest writes a
*staged* filtered day beside the filtered layer, stamped with the ingest it came from and the filter's
fingerprint. The `filtered_trajectories` asset adopts it when both still hold (the same stored day, a
filter that would do exactly the same), and otherwise filters the stored day again (`filter_store`), as
after a change of entity directory or profile.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from training_pipeline import jscompat
from training_pipeline.atomic import atomic_write_text, publish
from training_pipeline.privacy.filter import PrivacyFilter
from training_pipeline.trajectories.store import TrajectoryParquetWriter, iter_stored


@dataclass(frozen=True)
class FilteredDay:
    """Where a filtered day lives: the store and its privacy report."""

    store: Path
    report: Path

    def staged(self) -> FilteredDay:
        return FilteredDay(_staged(self.store), _staged(self.report))

    @property
    def stamp(self) -> Path:
        """The staged day's stamp: which ingest and which filter made it (written last)."""
        return self.store.with_name(self.store.name + ".staged-by.json")


def _staged(path: Path) -> Path:
    return path.with_name(f".staged.{path.name}")


def report_of(privacy: PrivacyFilter, redacted_at_ingest: Mapping[str, int] | None = None) -> dict[str, Any]:
    privacy.stats.redactions.update(redacted_at_ingest or {})
    return {"profile": privacy.profile, **privacy.stats.as_report()}


def stage(day: FilteredDay, report: dict[str, Any], ingest_id: str, fingerprint: str) -> None:
    """Seal a staged day (its store already written by the ingest) with its report and stamp."""
    staged = day.staged()
    atomic_write_text(staged.report, json.dumps(report, indent=2) + "\n")
    atomic_write_text(day.stamp, json.dumps({"ingest_id": ingest_id, "fingerprint": fingerprint}) + "\n")


def adopt_staged(day: FilteredDay, ingest_id: str, fingerprint: str) -> dict[str, Any] | None:
    """The staged day made into the filtered layer (renamed into place) when it came from `ingest_id`
    with a filter of `fingerprint`; None (and nothing changed) otherwise."""
    staged = day.staged()
    try:
        stamp = json.loads(day.stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if stamp != {"ingest_id": ingest_id, "fingerprint": fingerprint}:
        return None
    if not (staged.store.is_file() and staged.report.is_file()):
        return None
    report = json.loads(staged.report.read_text(encoding="utf-8"))
    day.stamp.unlink()  # first: a stamp never outlives the files it vouches for
    publish(staged.store, day.store)
    publish(staged.report, day.report)
    return report


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
