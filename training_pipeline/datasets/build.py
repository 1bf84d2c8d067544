"""Filter and export in one streaming pass, outside Dagster: what `training-pipeline build-datasets` runs,
the daily assets' pass over shares of the input (`intake.share.ingest_share`), storing nothing.

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
from training_pipeline.datasets.export import DatasetWriter, ExampleBatch, Prepared, prepare
from training_pipeline.datasets.trace_datasets import TraceDatasetWriter, trace_examples
from training_pipeline.intake.quarantine import QuarantineWriter
from training_pipeline.intake.share import Ingested, Share, gathered, ingest_in_worker, ingest_share
from training_pipeline.privacy.filter import FilterStats, PrivacyFilter, start_worker_filter
from training_pipeline.progress import Progress
from training_pipeline.traces.routes import TraceRouting
from training_pipeline.traces.source import TraceFiles, split_traces
from training_pipeline.trajectories.files import Unparsed, export_files, unparsed_shares_of
from training_pipeline.trajectories.models import is_trace
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


@dataclass(frozen=True)
class BuildExamples:
    """A `Derive` for `build-datasets`: a trajectory's examples in elizaOS's datasets and, of one read
    from traces, its lines in the trace datasets; a share's gathered as (`ExampleBatch`, [(trajectory
    id, [(dataset, JSONL line)])])."""

    def __call__(self, trajectory: dict[str, Any]) -> tuple[Prepared, list[tuple[str, bytes]] | None]:
        # every trajectory is counted in elizaOS's summary, as the daily pass counts it; a trace's calls
        # hold no elizaOS prompt fields, so they give elizaOS's datasets no example
        return prepare(trajectory), trace_examples(trajectory) if is_trace(trajectory) else None

    def gather(
        self, made: list[tuple[Prepared, list[tuple[str, bytes]] | None]]
    ) -> tuple[ExampleBatch, list[tuple[Any, list[tuple[str, bytes]]]]]:
        traced = [(prepared[0], lines) for prepared, lines in made if lines is not None]
        return ExampleBatch.of([prepared for prepared, _ in made]), traced


def _shares(exports: list, traces: TraceFiles, span_bytes: int, progress: Progress | None) -> Iterator[Share]:
    """The input in shares for `ingest_share` (`share.gathered`), the trace files' records last; what
    each holds is shown read as it is handed on."""
    read = progress.read if progress is not None else (lambda size: None)
    derive = BuildExamples()
    for share in gathered(unparsed_shares_of(exports, None, span_bytes), derive, stores=False):
        yield share
        read(share.size)
    traces.on_read = read
    for records in traces.shares():
        yield Share([Unparsed(raw, None, None) for raw in records], derive, stores=False)


def _processed(
    exports: list,
    traces: TraceFiles,
    privacy: PrivacyFilter,
    workers: int,
    span_bytes: int,
    progress: Progress | None = None,
) -> Iterator[Ingested]:
    """Shares of the input processed in input order: here, or on `workers` processes (the bounded pool,
    `workers.ordered_map`)."""
    return ordered_map(
        _shares(exports, traces, span_bytes, progress),
        lambda share: ingest_share(privacy, share),
        workers,
        ingest_in_worker,
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
            for done in _processed(exports, traces, privacy, workers, span_bytes, shown):
                records_in += done.records
                if shown is not None:
                    shown.done(done.records)
                for line, reason in done.quarantined:
                    quarantine.add_line(line, reason)
                examples, traced = done.derived
                writer.add_batch(examples)
                for trajectory_id, lines in traced:
                    trace_writer.add(trajectory_id, lines)
                stats.merge(done.stats)
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
