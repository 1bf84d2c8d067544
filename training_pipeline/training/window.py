"""The dataset a training run uses: one task's examples over a window of days, in day order."""

from __future__ import annotations

import json
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from training_pipeline.atomic import atomic_open
from training_pipeline.datasets.training_tasks import (
    PROVENANCE_FILE_NAMES,
    SUMMARY_FILE_NAME,
    TASK_FILE_NAMES,
    TASKS,
    ids_path,
)


@dataclass(frozen=True)
class DayFiles:
    day: str
    datasets_dir: Path  # the day's five JSONL files and summary
    privacy_report: Path


@dataclass
class WindowDataset:
    path: Path
    size: int = 0
    days: list[str] = field(default_factory=list)
    per_task_counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TASKS, 0))
    pulled_trajectories: int = 0
    filtered_trajectories: int = 0
    redaction_count: int = 0
    anonymization_count: int = 0


def assemble_window(task: str, days: list[DayFiles], target: Path) -> WindowDataset:
    """Concatenate `task`'s file of each day into `target` and add up the days' counts; days whose
    files are missing are left out (and not listed in `days`)."""
    window = WindowDataset(target)
    with atomic_open(target, "wb") as out, atomic_open(ids_path(target), "wb") as ids:
        for day in sorted(days, key=lambda d: d.day):
            dataset = day.datasets_dir / TASK_FILE_NAMES[task]
            summary_path = day.datasets_dir / SUMMARY_FILE_NAME
            if not (dataset.is_file() and summary_path.is_file() and day.privacy_report.is_file()):
                continue
            provenance = day.datasets_dir / PROVENANCE_FILE_NAMES[task]
            with dataset.open("rb") as handle, ExitStack() as stack:
                sources = stack.enter_context(provenance.open("rb")) if provenance.is_file() else None
                for number, line in enumerate(handle, start=1):
                    out.write(line)
                    # without provenance (older days) each row is its own group
                    ids.write(
                        next(sources) if sources else json.dumps(f"{day.day}:{number}").encode() + b"\n"
                    )
                    window.size += 1
            summary = json.loads(summary_path.read_text(encoding="utf-8"))
            report = json.loads(day.privacy_report.read_text(encoding="utf-8"))
            for name, count in summary["counts"].items():
                window.per_task_counts[name] = window.per_task_counts.get(name, 0) + count
            window.pulled_trajectories += report["trajectoriesIn"]
            window.filtered_trajectories += report["kept"]
            window.redaction_count += report["redactionCount"]
            window.anonymization_count += report["anonymizationCount"]
            window.days.append(day.day)
    return window
