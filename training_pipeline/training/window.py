"""The dataset a training run uses: one dataset's examples over a window of days, in day order: an
elizaOS task's (`{"messages": [system, user, model]}`) or a trace dataset's (OpenAI chat, multi-turn,
with tools), each in the format it was built in; the backends take either (`DispatchRequest.format`)."""

from __future__ import annotations

import json
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from training_pipeline.atomic import atomic_open
from training_pipeline.backends.base import ExampleFormat
from training_pipeline.datasets.trace_datasets import TRACE_SUMMARY_FILE_NAME
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
    #: the day's trace datasets (`<name>.jsonl` and their summary), for a trace dataset's window
    trace_dir: Path | None = None


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
    format: ExampleFormat = "elizaos"


def assemble_window(task: str, days: list[DayFiles], target: Path) -> WindowDataset:
    """Concatenate `task`'s file of each day into `target` and add up the days' counts; days whose
    files are missing are left out (and not listed in `days`). `task` is one of elizaOS's five, or
    else a trace dataset (`assemble_trace_window`)."""
    if task not in TASKS:
        return assemble_trace_window(task, days, target)
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
            for name, count in summary["counts"].items():
                window.per_task_counts[name] = window.per_task_counts.get(name, 0) + count
            _add_day(window, day)
    return window


def assemble_trace_window(name: str, days: list[DayFiles], target: Path) -> WindowDataset:
    """`assemble_window` of the trace dataset `name`: each day's `<name>.jsonl` from its trace folder.
    A day whose traces fed other datasets only is in the window with no examples; a day without its
    trace summary (not built) is left out. Each line is its own group for the bootstrap: a trace
    dataset's lines are whole conversations already."""
    window = WindowDataset(target, per_task_counts={name: 0}, format="openai-chat")
    with atomic_open(target, "wb") as out, atomic_open(ids_path(target), "wb") as ids:
        for day in sorted(days, key=lambda d: d.day):
            summary_path = day.trace_dir / TRACE_SUMMARY_FILE_NAME if day.trace_dir else None
            if summary_path is None or not summary_path.is_file() or not day.privacy_report.is_file():
                continue
            dataset = summary_path.parent / f"{name}.jsonl"
            if dataset.is_file():
                with dataset.open("rb") as handle:
                    for number, line in enumerate(handle, start=1):
                        out.write(line)
                        ids.write(json.dumps(f"{day.day}:{number}").encode() + b"\n")
                        window.size += 1
            _add_day(window, day)  # the day's privacy counts, as an elizaOS task's window has them
    window.per_task_counts[name] = window.size
    return window


def _add_day(window: WindowDataset, day: DayFiles) -> None:
    """The day in the window: its privacy report's counts added, its name listed."""
    report = json.loads(day.privacy_report.read_text(encoding="utf-8"))
    window.pulled_trajectories += report["trajectoriesIn"]
    window.filtered_trajectories += report["kept"]
    window.redaction_count += report["redactionCount"]
    window.anonymization_count += report["anonymizationCount"]
    window.days.append(day.day)
