"""The privacy filter over a stored day: trajectories in, filtered trajectories and a report out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from training_pipeline.atomic import atomic_write_text
from training_pipeline.privacy.filter import PrivacyFilter
from training_pipeline.trajectories.store import TrajectoryParquetWriter, iter_trajectories


def filter_store(source: Path, target: Path, report_path: Path, privacy: PrivacyFilter) -> dict[str, Any]:
    """Returns the report (also written to `report_path`): counts by rule, anonymisations, drops."""
    with TrajectoryParquetWriter(target) as out:
        for origin, trajectory in iter_trajectories(source):
            if privacy.apply(trajectory, origin):
                out.add(trajectory, origin)
    report = {"profile": privacy.profile, **privacy.stats.as_report()}
    atomic_write_text(report_path, json.dumps(report, indent=2) + "\n")
    return report
