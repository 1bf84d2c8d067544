"""Per-task JSONL datasets in elizaOS's format, written as trajectories stream by.

Examples are written as they are built (memory does not grow with the input) to staged files that are
published together once the summary is complete, so a reader sees the old set or the new one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from training_pipeline import jscompat
from training_pipeline.atomic import StagedFiles
from training_pipeline.datasets.training_tasks import (
    PROVENANCE_FILE_NAMES,
    SUMMARY_FILE_NAME,
    TASK_FILE_NAMES,
    TASKS,
    Task,
    build_example,
    infer_tasks,
)
from training_pipeline.datasets.validate import (
    INSPECTION_FILE_NAME,
    FileInspection,
    LineInspection,
    NotableLine,
    inspect_record,
    inspection_record,
    scanner_for,
)
from training_pipeline.seen_ids import TasksPerId
from training_pipeline.trajectories.models import iter_llm_calls

#: (trajectory id, LLM call count, [(task, JSONL line as UTF-8)]) — one trajectory's examples, in
#: elizaOS's order. Bytes, because they are written to binary files, maybe after crossing processes.
Prepared = tuple[Any, int, list[tuple[Task, bytes]]]
_BUFFER = 1 << 20
#: how many bytes of examples a writer writes between syncs of its files (`DatasetWriter.add_batch`)
_SYNC_EVERY = 32 << 20


def prepare(trajectory: dict[str, Any]) -> Prepared:
    """The examples of one filtered trajectory, built and serialised: pure, so any process can do it."""
    return _prepared(trajectory)[0]


def _prepared(trajectory: dict[str, Any]) -> tuple[Prepared, list[tuple[Task, dict[str, Any]]]]:
    """`prepare`, and the examples its lines were serialised from."""
    examples = []
    llm_calls = 0
    for call in iter_llm_calls(trajectory):
        llm_calls += 1
        for task in infer_tasks(call):
            example = build_example(call, task)
            if example is not None:
                examples.append((task, example))
    lines = [(task, jscompat.dumpb(example) + b"\n") for task, example in examples]
    return (trajectory.get("trajectoryId"), llm_calls, lines), examples


_BIT: dict[Task, int] = {task: 1 << index for index, task in enumerate(TASKS)}


@dataclass(frozen=True)
class ExampleBatch:
    """The examples of consecutive trajectories, each task's lines joined into one piece: what a worker
    sends back. Written with a call per task, not per line, and pickled as a few large objects: the
    parent that writes them shares the cores with the workers, and writing line by line cost it a tenth
    of the build (and a fifth of the daily pass's CPU, with its sidecars and inspections)."""

    #: (trajectory id, LLM call count, the tasks it gave examples to as `_BIT`s), in input order
    trajectories: list[tuple[Any, int, int]]
    #: each task's lines
    lines: dict[Task, bytes]
    counts: dict[Task, int]
    #: each task's provenance sidecar lines (the id of the trajectory of each line), when kept
    provenance: dict[Task, bytes] | None = None
    #: each task's lines' inspections, when made: messages scanned, and the lines with something to say
    inspections: dict[Task, tuple[int, list[NotableLine]]] | None = None

    @classmethod
    def of(
        cls,
        prepared: list[Prepared],
        provenance: bool = False,
        inspections: list[list[LineInspection]] | None = None,
    ) -> ExampleBatch:
        """`prepared` joined per task; with `provenance`, the sidecars' lines too; with `inspections`
        (each trajectory's lines'), those gathered per task."""
        parts: dict[Task, list[bytes]] = {task: [] for task in TASKS}
        ids: dict[Task, list[bytes]] = {task: [] for task in TASKS}
        scanned: dict[Task, int] = dict.fromkeys(TASKS, 0)
        notable: dict[Task, list[NotableLine]] = {task: [] for task in TASKS}
        trajectories = []
        for index, (trajectory_id, llm_calls, rows) in enumerate(prepared):
            bits = 0
            sidecar = jscompat.dumpb(trajectory_id) + b"\n" if provenance else b""
            for line, (task, row) in enumerate(rows):
                if inspections is not None:
                    texts, problem, hits = inspections[index][line]
                    scanned[task] += texts
                    if problem or hits:
                        notable[task].append((len(parts[task]), problem, hits))
                parts[task].append(row)
                if provenance:
                    ids[task].append(sidecar)
                bits |= _BIT[task]
            trajectories.append((trajectory_id, llm_calls, bits))
        lines = {task: b"".join(part) for task, part in parts.items() if part}
        return cls(
            trajectories,
            lines,
            {task: len(parts[task]) for task in lines},
            {task: b"".join(ids[task]) for task in lines} if provenance else None,
            {task: (scanned[task], notable[task]) for task in lines} if inspections is not None else None,
        )


@dataclass(frozen=True)
class DailyExamples:
    """A `Derive` for the fused daily pass: a trajectory's examples with their provenance, each line
    inspected as the dataset checks inspect a file (`validate.inspect_line`) when `scanner_secrets` is
    set, where it is made (a worker of the pool); a share's gathered into one `ExampleBatch`."""

    #: the secret values the checks' scanner looks for (crosses to the workers as the filter's do);
    #: None: the lines are not inspected
    scanner_secrets: tuple[str, ...] | None
    #: the kinds of personal data the scanner looks for (`SecretScanner.find_personal`)
    personal_kinds: frozenset[str] = frozenset()

    def __call__(self, trajectory: dict[str, Any]) -> tuple[Prepared, list[LineInspection] | None]:
        prepared, examples = _prepared(trajectory)
        if self.scanner_secrets is None:
            return prepared, None
        scanner = scanner_for(self.scanner_secrets, self.personal_kinds)
        # each line inspected from the object it was made from (`inspect_record`): what reading it gives
        return prepared, [inspect_record(example, scanner) for _, example in examples]

    def gather(self, made: list[tuple[Prepared, list[LineInspection] | None]]) -> ExampleBatch:
        inspections = None if self.scanner_secrets is None else [lines or [] for _, lines in made]
        return ExampleBatch.of([prepared for prepared, _ in made], True, inspections)


class DatasetWriter:
    """Feed the examples of validated, privacy-filtered trajectories with `add_batch`; `close`
    publishes the files."""

    def __init__(
        self,
        out_dir: Path,
        preview_rows: int = 0,
        provenance: bool = False,
        inspected: bool = False,
        distinct_ids: bool = False,
    ) -> None:
        """With `provenance`, each task file gets a sidecar (`PROVENANCE_FILE_NAMES`) holding, line for
        line, the id of the trajectory each example came from: what a leakage-safe split needs. It is
        off for `build-datasets`, whose file set is elizaOS's.

        `inspected`: each line comes inspected by the dataset checks' scanner (`DailyExamples`, in
        `add_batch`); the inspections and each file's SHA-256 are written beside the files
        (`INSPECTION_FILE_NAME`) with the scanner's fingerprint given to `close`, so the dataset checks
        need not read the files again.

        `distinct_ids`: no trajectory id comes twice (the daily pass's, whose ingest quarantines a
        repeated one), so none is remembered to count each once."""
        self.out_dir = out_dir
        self._inspected = inspected
        self._inspections = {t: FileInspection() for t in TASKS}
        self._digests = {t: hashlib.sha256() for t in TASKS}
        self._staged = StagedFiles(out_dir)
        # examples run to kilobytes each: a large buffer turns thousands of writes into a few
        self._files: dict[Task, IO[bytes]] = {
            t: self._staged.open(TASK_FILE_NAMES[t], "wb", _BUFFER) for t in TASKS
        }
        self._provenance: dict[Task, IO[bytes]] = (
            {t: self._staged.open(PROVENANCE_FILE_NAMES[t], "wb") for t in TASKS} if provenance else {}
        )
        self.counts: dict[Task, int] = dict.fromkeys(TASKS, 0)
        # elizaOS counts the distinct trajectory ids behind each task's examples
        self._tasks_of = TasksPerId(distinct_ids)
        self.trajectory_count = 0
        self.llm_call_count = 0
        self._preview_rows = preview_rows
        self.previews: dict[Task, list[dict[str, Any]]] = {t: [] for t in TASKS}
        self.last_summary: dict[str, Any] | None = None
        self._unsynced = 0  # bytes of examples written since the files were last synced

    def add_batch(self, batch: ExampleBatch) -> None:
        """Write the examples of a batch of trajectories (`ExampleBatch`), with their sidecars and
        inspections when this writer keeps them (a batch without them cannot be written by a writer
        that keeps provenance; one without inspections leaves the files without a record)."""
        if self._provenance and batch.provenance is None:
            raise ValueError("a batch without the trajectory id of each line, to a writer that keeps them")
        if batch.inspections is None:
            self._inspected = False
        for task, lines in batch.lines.items():
            self._files[task].write(lines)
            self._looked_at(task, lines)
            if batch.provenance is not None and self._provenance:
                self._provenance[task].write(batch.provenance[task])
            if batch.inspections is not None:
                self._inspections[task].extend(batch.counts[task], *batch.inspections[task])
            self.counts[task] += batch.counts[task]
        self.trajectory_count += len(batch.trajectories)
        self.llm_call_count += sum(llm_calls for _, llm_calls, _ in batch.trajectories)
        self._tasks_of.add((trajectory_id, bits) for trajectory_id, _, bits in batch.trajectories)
        self._unsynced += sum(map(len, batch.lines.values()))
        if self._unsynced >= _SYNC_EVERY:
            # to disk as it comes, while the workers make the next batches: what publishing the files
            # waits for at the end is only the last of them
            for handle in (*self._files.values(), *self._provenance.values()):
                handle.flush()
            self._staged.sync()
            self._unsynced = 0

    def _looked_at(self, task: Task, lines: bytes) -> None:
        if self._inspected:
            self._digests[task].update(lines)
        start = 0
        while len(self.previews[task]) < self._preview_rows and start < len(lines):
            end = lines.find(b"\n", start) + 1 or len(lines)
            self.previews[task].append(json.loads(lines[start:end]))
            start = end

    def summary(self, generated_at: datetime | None = None) -> dict[str, Any]:
        """elizaOS's `trajectory_dataset_summary.json` fields."""
        stamp = (generated_at or datetime.now(UTC)).isoformat(timespec="milliseconds")
        return {
            "generatedAt": stamp.replace("+00:00", "Z"),
            "trajectoryCount": self.trajectory_count,
            "llmCallCount": self.llm_call_count,
            "counts": dict(self.counts),
            "tasks": list(TASKS),
            "taskMetrics": {
                task: {
                    "exampleCount": self.counts[task],
                    "sourceCallCount": self.counts[task],
                    "sourceTrajectoryCount": self._tasks_of.count(_BIT[task]),
                }
                for task in TASKS
            },
        }

    def close(self, inspected_by: str | None = None, publish: Collection[Task] = TASKS) -> dict[str, Any]:
        """Write the summary and publish the files of the tasks in `publish` (all by default) with it,
        at once; returns the summary. `inspected_by`: the fingerprint of the scanner that inspected
        every line, when the writer was made `inspected`."""
        try:
            for handle in (*self._files.values(), *self._provenance.values()):
                handle.close()
            for task in set(TASKS) - set(publish):
                self._staged.drop(TASK_FILE_NAMES[task])
                if self._provenance:
                    self._staged.drop(PROVENANCE_FILE_NAMES[task])
            summary = self.last_summary = self.summary()
            if self._inspected and inspected_by is not None:
                record = inspection_record(
                    inspected_by,
                    {TASK_FILE_NAMES[t]: (self._digests[t].hexdigest(), self._inspections[t]) for t in TASKS},
                )
                with self._staged.open(INSPECTION_FILE_NAME) as handle:
                    handle.write(record)
            else:  # an older record would not match these files; it goes with them
                (self.out_dir / INSPECTION_FILE_NAME).unlink(missing_ok=True)
            with self._staged.open(SUMMARY_FILE_NAME) as handle:
                handle.write(json.dumps(summary, indent=2, ensure_ascii=False))
            self._staged.publish()
        except BaseException:
            self.abort()
            raise
        self._tasks_of.close()
        return summary

    def abort(self) -> None:
        for handle in (*self._files.values(), *self._provenance.values()):
            handle.close()
        self._tasks_of.close()
        self._staged.discard()
