"""Trace files among an input folder's exports: told apart by their content, read together (a trace's
spans may be in several files), and handed on as trajectory records in shares, as exports are."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path

from training_pipeline.traces.assemble import TraceRecord, TraceReport, trajectory_records
from training_pipeline.traces.otlp import TraceKind, spans_of_file, trace_kind
from training_pipeline.traces.routes import TraceRouting
from training_pipeline.trajectories.files import (
    EXPORT_SUFFIXES,
    Entry,
    Refused,
    Unparsed,
    UnparsedSpan,
    export_files,
    unparsed_shares_of,
)
from training_pipeline.trajectories.parsing import RawRecord

__all__ = ["TraceFiles", "day_shares", "split_traces"]

#: trajectories handed on together, as a `.json` array's records are
_SHARE = 64


class TraceFiles:
    """The trace files of an input, and what their spans became (`report`)."""

    def __init__(self, files: list[tuple[Path, TraceKind]], routing: TraceRouting) -> None:
        self.files = files
        self.routing = routing
        self.report = TraceReport()
        #: told how many more bytes of the trace files were read (`progress.Progress.read`)
        self.on_read: Callable[[int], None] | None = None

    def __bool__(self) -> bool:
        return bool(self.files)

    def records(self) -> Iterator[TraceRecord]:
        """The trajectories of every file, with a quarantined record for each span or request that
        could not be read, and the day that one belongs to."""
        spans = (span for path, kind in self.files for span in spans_of_file(path, kind, self.on_read))
        return trajectory_records(spans, self.routing, self.report)

    def shares(self) -> Iterator[list[RawRecord]]:
        """`records`, a share at a time."""
        share: list[RawRecord] = []
        for record, _ in self.records():
            share.append(record)
            if len(share) == _SHARE:
                yield share
                share = []
        if share:
            yield share


def split_traces(entries: list[Entry], routing: TraceRouting) -> tuple[list[Entry], TraceFiles]:
    """`entries` without their trace files, and the trace files. A compressed file that holds no
    traces is refused with the reason (exports are read uncompressed), never skipped unsaid."""
    exports: list[Entry] = []
    traces: list[tuple[Path, TraceKind]] = []
    for entry in entries:
        if isinstance(entry, Refused):
            exports.append(entry)
            continue
        kind = trace_kind(entry)
        if kind is not None:
            traces.append((entry, kind))
        elif entry.suffix in EXPORT_SUFFIXES:
            exports.append(entry)
        else:
            exports.append(
                Refused(entry, "holds neither OTLP traces nor an uncompressed elizaOS export: not read")
            )
    return exports, TraceFiles(traces, routing)


def day_shares(
    path: Path, day: date | None, routing: TraceRouting, max_bytes: int | None = None
) -> Iterator[Unparsed | UnparsedSpan]:
    """`files.unparsed_shares` of `path`, trace files read too: their trajectories as unparsed
    records (`Unparsed.parse` keeps `day`'s)."""
    exports, traces = split_traces(export_files(path), routing)
    yield from unparsed_shares_of(exports, day, max_bytes=max_bytes)
    for record, fallback in traces.records():
        yield Unparsed(record, day, fallback or day)
