"""What a share of a day becomes on a worker of the pool: parsed, redacted, its stored rows, filtered,
and what is derived of each trajectory kept (the datasets' examples).

The rows go back as Arrow batches and the examples as bytes, through the pool's pipe; the step's
process writes them (`intake.ingest`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow as pa

from training_pipeline import jscompat
from training_pipeline.intake.quarantine import quarantine_line
from training_pipeline.privacy.budget import OverBudget
from training_pipeline.privacy.filter import FilterStats, PrivacyFilter, worker_filter
from training_pipeline.trajectories.files import Unparsed, UnparsedSpan, with_spans_read
from training_pipeline.trajectories.parsing import ParsedRecord, duplicate, over_budget
from training_pipeline.trajectories.rows import StoreRows


class Derive(Protocol):
    """What is made of each trajectory the filter keeps, where it is filtered (of a module-level class,
    so it reaches the pool's workers), and of a share's in all: the datasets' examples
    (`datasets.export.DailyExamples`)."""

    def __call__(self, trajectory: dict[str, Any]) -> Any: ...

    def gather(self, made: list[Any]) -> Any:
        """What crosses back from the share (handed to `each_derived` once per share)."""
        ...


@dataclass(frozen=True)
class NoDerive:
    """A `Derive` that makes nothing: the fused pass stores and filters only."""

    def __call__(self, trajectory: dict[str, Any]) -> None:
        return None

    def gather(self, made: list[Any]) -> None:
        return None


#: a share of a day for the pool: the fused pass's `Derive` (None: store only); its records: valid
#: ones as (origin, JSON text) (the text crosses processes far cheaper than the parsed trajectory), or
#: records read and not parsed yet, which the worker parses (and checks the day of), or a span of a file
#: that the worker reads too; the ids among them the day's earlier shares stored, with where each was
#: first read (given when the share is processed again: `ingest.ingest_records`)
Share = tuple[Derive | None, list[tuple[str, str | bytes] | Unparsed | UnparsedSpan], dict[str, str]]


@dataclass
class Ingested:
    """What a share became: its stored rows, the filtered day's rows and the examples, in input order."""

    stored: pa.RecordBatch
    #: the filtered day's rows, or None when each is its stored row unchanged (the filter anonymised
    #: nothing): then `kept` says which stored rows they are, and the rows cross processes once
    filtered: pa.RecordBatch | None
    kept: list[int]
    #: what `Derive.gather` made of the share's kept trajectories
    derived: Any
    stats: FilterStats
    #: records of the share's unparsed ones that belong to the day, and the quarantine entries (JSONL
    #: line, reason) of those that failed, made here: the stored redaction they need is loaded where the
    #: share's filter is, never in the step's process for a day's few bad records
    records: int
    quarantined: list[tuple[str, str]]
    #: (trajectory id, origin) of each stored row, in order: what the day's other shares are checked against
    ids: list[tuple[str, str]] = field(default_factory=list)


def ingest_share(privacy: PrivacyFilter | None, share: Share) -> Ingested:
    """The share's records stored, filtered and derived. A trajectory id met before, earlier in the
    share or among the ids the share comes with (the day's earlier shares': `Share`), is quarantined
    as a duplicate: a day keeps each trajectory once."""
    derive, items, earlier = share
    if privacy is not None:
        privacy.stats = FilterStats()  # this share's counts only; the caller merges them
    stored, filtered, derived = StoreRows(), StoreRows(), []
    records, kept, anonymised = 0, [], False
    quarantined: list[tuple[str, str]] = []

    def quarantine(parsed: ParsedRecord) -> None:
        quarantined.append((quarantine_line(parsed), parsed.reason or "unknown"))

    first: dict[str, str] = {}  # this share's own (the day's earlier shares' are only looked up)
    ids: list[tuple[str, str]] = []
    for item in with_spans_read(items):
        if isinstance(item, Unparsed):
            parsed = item.parse()
            if parsed is None:
                continue  # another day's
            records += 1
            if parsed.trajectory is None:
                quarantine(parsed)
                continue
            origin, text, trajectory = parsed.origin, parsed.text, parsed.trajectory
        else:
            origin, text = item
            trajectory = jscompat.loads(text)
        trajectory_id = str(trajectory.get("trajectoryId"))
        first_read = first.get(trajectory_id) or earlier.get(trajectory_id)
        if first_read is not None:
            quarantine(duplicate(origin, text, trajectory_id, first_read))
            continue
        if privacy is not None:
            try:
                if privacy.redact_sensitive(trajectory):
                    text = None  # stored as re-serialised, not as it came
            except OverBudget as err:
                quarantine(over_budget(origin, text, err))  # counted where it was read
                continue
        first[trajectory_id] = origin  # stored: a later record with this id is a duplicate of it
        raw = stored.add(trajectory, origin, text)
        ids.append((trajectory_id, origin))
        if derive is None:
            continue
        before = privacy.stats.anonymization_count  # type: ignore[union-attr]
        if privacy.apply(trajectory, origin, redacted=True):  # type: ignore[union-attr]
            unchanged = privacy.stats.anonymization_count == before  # type: ignore[union-attr]
            kept.append(len(stored) - 1)
            if not unchanged and not anonymised:
                # the share's first anonymised trajectory: the filtered rows are made from here on, the
                # earlier kept ones copied from the stored rows they equal (until now, `kept` said it)
                anonymised = True
                filtered.copy_rows(stored, kept[:-1])
            if anonymised:
                filtered.add(trajectory, origin, raw if unchanged else None)
            derived.append(derive(trajectory))
    stats = privacy.stats if privacy is not None else FilterStats()
    return Ingested(
        stored.take(),
        filtered.take() if anonymised else None,
        kept,
        derive.gather(derived) if derive is not None else None,
        stats,
        records,
        quarantined,
        ids,
    )


def ingest_in_worker(share: Share) -> Ingested:
    return ingest_share(worker_filter(), share)
