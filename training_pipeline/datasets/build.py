"""Filter and export in one streaming pass, outside Dagster: what `training-pipeline build-datasets` runs.

Output: elizaOS's five `*_trajectories.jsonl` files and `trajectory_dataset_summary.json`, plus
`quarantine.jsonl` (records that did not parse or validate) and `privacy_report.json`. Where the input
holds OpenTelemetry traces (told by content: `traces.source`), their datasets too, in OpenAI's chat
format (`trace_datasets`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from training_pipeline.atomic import atomic_write_text
from training_pipeline.datasets.export import DatasetWriter, ExampleBatch, prepare
from training_pipeline.datasets.trace_datasets import TraceDatasetWriter, trace_examples
from training_pipeline.intake.quarantine import QuarantineWriter, quarantine_line
from training_pipeline.privacy.budget import OverBudget
from training_pipeline.privacy.filter import FilterStats, PrivacyFilter, start_worker_filter, worker_filter
from training_pipeline.progress import Progress
from training_pipeline.traces.routes import TraceRouting
from training_pipeline.traces.source import TraceFiles, split_traces
from training_pipeline.trajectories.files import (
    LineSpan,
    export_files,
    in_lines,
    iter_file_records,
    line_spans,
)
from training_pipeline.trajectories.models import is_trace
from training_pipeline.trajectories.parsing import RawRecord, over_budget, parse_record
from training_pipeline.workers import ordered_map

QUARANTINE_FILE_NAME = "quarantine.jsonl"
#: from this much input, what the workers' filter builds on its first window of personal data (Presidio's
#: analyzer, the largest part of a worker) is built before they are forked, once for all: a smaller
#: input's workers may meet no window, and would wait for it
SHARED_FILTER_FROM_BYTES = 16 << 20
PRIVACY_REPORT_FILE_NAME = "privacy_report.json"


@dataclass(frozen=True)
class BuildResult:
    records_in: int
    quarantined: int
    privacy: dict[str, Any]
    summary: dict[str, Any]

    #: what the trace files' spans became and their datasets (`trace_datasets`); None: no trace was read
    traces: dict[str, Any] | None = None

    def as_line(self) -> dict[str, Any]:
        """The one-line JSON the CLI prints last."""
        line = {
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
        if self.traces is not None:
            line["traceDatasets"] = {name: d["examples"] for name, d in self.traces["datasets"].items()}
            line["spans"] = self.traces["spans"]
        return line


@dataclass
class _Chunk:
    """What one chunk of records became: serialised quarantine entries and examples, in input order."""

    records: int
    quarantine: list[tuple[str, str]]  # (JSONL line, reason)
    examples: ExampleBatch
    stats: FilterStats
    #: (trajectory id, [(dataset, JSONL line)]) of each trajectory read from traces
    traces: list[tuple[Any, list[tuple[str, bytes]]]]


#: A share of the input: whole lines of a `.jsonl` file (read where it is processed), or records of a
#: `.json` array (which has to be parsed whole, so they are read here and sent).
_Work = LineSpan | list[RawRecord]
_ARRAY_CHUNK = 256


def _process(privacy: PrivacyFilter, work: _Work) -> _Chunk:
    privacy.stats = FilterStats()  # this chunk's counts only; the caller merges them
    quarantine, prepared, traces = [], [], []
    records = 0
    for raw in work.records() if isinstance(work, LineSpan) else work:
        records += 1
        parsed = parse_record(raw)
        if parsed.trajectory is None:
            quarantine.append((quarantine_line(parsed), parsed.reason or "unknown"))
            continue
        try:
            kept = privacy.apply(parsed.trajectory, parsed.origin)
        except OverBudget as err:
            late = over_budget(parsed.origin, parsed.text, err)
            quarantine.append((quarantine_line(late), late.reason or "unknown"))
            continue
        if kept:
            # every trajectory is counted in elizaOS's summary, as the daily pass counts it; a trace's
            # calls hold no elizaOS prompt fields, so they give elizaOS's datasets no example
            prepared.append(prepare(parsed.trajectory))
            if is_trace(parsed.trajectory):
                traces.append((parsed.trajectory["trajectoryId"], trace_examples(parsed.trajectory)))
    return _Chunk(records, quarantine, ExampleBatch.of(prepared), privacy.stats, traces)


def _process_in_worker(work: _Work) -> _Chunk:
    return _process(worker_filter(), work)


def _shares(exports: list, traces: TraceFiles, span_bytes: int, progress: Progress | None) -> Iterator[_Work]:
    read = progress.read if progress is not None else (lambda size: None)
    for file in exports:
        if in_lines(file):
            for span in line_spans(file, span_bytes):
                yield span if isinstance(span, LineSpan) else list(span.records())
                read(span.size if isinstance(span, LineSpan) else 0)
            continue
        chunk: list[RawRecord] = []
        for raw in iter_file_records(file):
            chunk.append(raw)
            if len(chunk) == _ARRAY_CHUNK:
                yield chunk
                read(sum(len(r.data) for r in chunk))
                chunk = []
        if chunk:
            yield chunk
            read(sum(len(r.data) for r in chunk))
    traces.on_read = read
    yield from traces.shares()


def _processed(
    exports: list,
    traces: TraceFiles,
    privacy: PrivacyFilter,
    workers: int,
    span_bytes: int,
    progress: Progress | None = None,
) -> Iterator[_Chunk]:
    """Shares of the input processed in input order: here, or on `workers` processes (the bounded pool,
    `workers.ordered_map`)."""
    return ordered_map(
        _shares(exports, traces, span_bytes, progress),
        lambda work: _process(privacy, work),
        workers,
        _process_in_worker,
        start_worker_filter,
        privacy.recipe(),
    )


def build_datasets(
    input_path: Path,
    out_dir: Path,
    privacy: PrivacyFilter,
    workers: int = 1,
    span_bytes: int = 2 << 20,
    routing: TraceRouting | None = None,
    progress: TextIO | None = None,
) -> BuildResult:
    """Every record of `input_path` ends in a dataset, the quarantine or the privacy drop list. With
    `workers` > 1 the records are filtered and turned into examples on that many processes; the files are
    the same, byte for byte, as with one. Trace files' LLM calls go to the datasets `routing` names.
    With `progress` (a stream: the CLI's stderr), how far the build has gone is shown there."""
    records_in = 0
    stats = FilterStats()
    exports, traces = split_traces(export_files(input_path), routing or TraceRouting())
    files = [e for e in exports if isinstance(e, Path)] + [path for path, _ in traces.files]
    size = sum(_size(f) for f in files)
    shown = Progress(size, progress) if progress is not None else None
    if workers > 1 and size >= SHARED_FILTER_FROM_BYTES:
        privacy.build_for_forked_workers()
    writer = DatasetWriter(out_dir)
    trace_writer = TraceDatasetWriter(out_dir)
    try:
        with QuarantineWriter(out_dir / QUARANTINE_FILE_NAME) as quarantine:
            for chunk in _processed(exports, traces, privacy, workers, span_bytes, shown):
                records_in += chunk.records
                if shown is not None:
                    shown.done(chunk.records)
                for line, reason in chunk.quarantine:
                    quarantine.add_line(line, reason)
                writer.add_batch(chunk.examples)
                for trajectory_id, examples in chunk.traces:
                    trace_writer.add(trajectory_id, examples)
                stats.merge(chunk.stats)
    except BaseException:
        writer.abort()
        trace_writer.abort()
        raise
    if shown is not None:
        shown.finish()
    privacy.stats = stats
    summary = writer.close()
    trace_summary = trace_writer.close(traces.report.as_dict()) if traces else None
    if not traces:
        trace_writer.abort()
    report = stats.as_report()
    atomic_write_text(out_dir / PRIVACY_REPORT_FILE_NAME, json.dumps(report, indent=2) + "\n")
    return BuildResult(records_in, quarantine.count, report, summary, trace_summary)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # gone since it was listed: its record says so
        return 0
