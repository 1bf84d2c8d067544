"""The privacy filter over a stored day: trajectories in, filtered trajectories and a report out."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from training_pipeline.atomic import atomic_write_text
from training_pipeline.privacy.filter import PrivacyFilter
from training_pipeline.trajectories.store import TrajectoryParquetWriter, iter_trajectories


def filter_store(
    source: Path,
    target: Path,
    report_path: Path,
    privacy: PrivacyFilter,
    redacted_at_ingest: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Returns the report (also written to `report_path`): counts by rule (those the store was
    redacted with when it was written, plus any more), anonymisations, drops."""
    with TrajectoryParquetWriter(target) as out:
        for origin, trajectory in iter_trajectories(source):
            if privacy.apply(trajectory, origin):
                out.add(trajectory, origin)
    privacy.stats.redactions.update(redacted_at_ingest or {})
    report = {"profile": privacy.profile, **privacy.stats.as_report()}
    atomic_write_text(report_path, json.dumps(report, indent=2) + "\n")
    return report
