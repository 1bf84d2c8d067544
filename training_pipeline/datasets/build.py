"""Filter and export in one streaming pass, outside Dagster: what `training-pipeline build-datasets` runs.

Output: elizaOS's five `*_trajectories.jsonl` files and `trajectory_dataset_summary.json`, plus
`quarantine.jsonl` (records that did not parse or validate) and `privacy_report.json`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from training_pipeline.atomic import atomic_write_text
from training_pipeline.datasets.export import DatasetWriter
from training_pipeline.privacy.filter import PrivacyFilter
from training_pipeline.trajectories.files import export_files, iter_file_records
from training_pipeline.trajectories.quarantine import QuarantineWriter
from training_pipeline.trajectories.records import parse_record

QUARANTINE_FILE_NAME = "quarantine.jsonl"
PRIVACY_REPORT_FILE_NAME = "privacy_report.json"


@dataclass(frozen=True)
class BuildResult:
    records_in: int
    quarantined: int
    privacy: dict[str, Any]
    summary: dict[str, Any]

    def as_line(self) -> dict[str, Any]:
        """The one-line JSON the CLI prints last."""
        return {
            "recordsIn": self.records_in,
            "quarantined": self.quarantined,
            "trajectories": self.privacy["trajectoriesIn"],
            "kept": self.privacy["kept"],
            "droppedPrivate": self.privacy["droppedPrivate"],
            "redactionCount": self.privacy["redactionCount"],
            "anonymizationCount": self.privacy["anonymizationCount"],
            "llmCallCount": self.summary["llmCallCount"],
            "counts": self.summary["counts"],
        }


def build_datasets(input_path: Path, out_dir: Path, privacy: PrivacyFilter) -> BuildResult:
    """Every record of `input_path` ends in a dataset, the quarantine or the privacy drop list."""
    records_in = 0
    writer = DatasetWriter(out_dir)
    try:
        with QuarantineWriter(out_dir / QUARANTINE_FILE_NAME) as quarantine:
            for file in export_files(input_path):
                for raw in iter_file_records(file):
                    records_in += 1
                    parsed = parse_record(raw)
                    if parsed.trajectory is None:
                        quarantine.add(parsed)
                    elif privacy.apply(parsed.trajectory, parsed.origin):
                        writer.add(parsed.trajectory)
    except BaseException:
        writer.abort()
        raise
    summary = writer.close()
    report = privacy.stats.as_report()
    atomic_write_text(out_dir / PRIVACY_REPORT_FILE_NAME, json.dumps(report, indent=2) + "\n")
    return BuildResult(records_in, quarantine.count, report, summary)
