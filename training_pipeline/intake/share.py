"""One pass over a share of the input, where the share is processed (a worker of the pool): its records
parsed, redacted, filtered, and what is derived of each trajectory kept (the datasets' examples), and
for a day of the trajectory store, its stored and filtered rows too.

Both passes run it: the daily assets (`intake.ingest`) and `training-pipeline build-datasets`
(`datasets.build`), which stores nothing. What it returns crosses the pool's pipe: rows as Arrow
batches, examples as bytes; the calling process writes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from training_pipeline import jscompat
from training_pipeline.intake.quarantine import quarantine_line
from training_pipeline.privacy.budget import OverBudget
from training_pipeline.privacy.filter import FilterStats, PrivacyFilter, worker_filter
from training_pipeline.trajectories.files import Unparsed, UnparsedSpan, with_spans_read
from training_pipeline.trajectories.parsing import ParsedRecord, duplicate, over_budget, redaction_failed

if TYPE_CHECKING:
    import pyarrow as pa


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


#: a record of a share: a valid one as (origin, JSON text) (the text crosses processes far cheaper than
#: the parsed trajectory), one read and not parsed yet, which the worker parses (and checks the day
#: of), or a span of a file that the worker reads too
ShareItem = tuple[str, str | bytes] | Unparsed | UnparsedSpan


@dataclass(frozen=True)
class Share:
    """A share of the input for one pass (`ingest_share`)."""

    items: list[ShareItem]
    #: what is made of each trajectory kept (None: the day is stored only, not filtered)
    derive: Derive | None = None
    #: the ids among the items that the day's earlier shares stored, with where each was first read
    #: (given when the share is processed again: `ingest.ingest_records`)
    earlier: dict[str, str] = field(default_factory=dict)
    #: False for `build-datasets`: no row is stored, and a trajectory id met twice is kept twice, as
    #: elizaOS's export keeps it (a day of the store keeps each trajectory once)
    stores: bool = True

    @property
    def size(self) -> int:
        """The input it holds, in bytes (`SHARE_BYTES`)."""
        return sum(map(_size, self.items))


#: about how much input a share holds, in bytes (or characters, of records already read), and at most
#: how many records: large enough that the pool's pipe and the step's writes are few, small enough that
#: the pool's bound on shares in flight bounds its memory
SHARE_BYTES = 1 << 20
SHARE_RECORDS = 1024


def _size(item: ShareItem) -> int:
    if isinstance(item, UnparsedSpan):
        return item.span.size
    if isinstance(item, Unparsed):
        return len(item.raw.data)
    return len(item[1])


def gathered(items: Iterable[ShareItem], derive: Derive | None, stores: bool = True) -> Iterator[Share]:
    """`items` in shares of about `SHARE_BYTES`, in order: a span of a large file fills a share alone;
    a task run's file of one trajectory is one span among many."""
    share: list[ShareItem] = []
    size = 0
    for item in items:
        share.append(item)
        size += _size(item)
        if size >= SHARE_BYTES or len(share) >= SHARE_RECORDS:
            yield Share(share, derive, stores=stores)
            share, size = [], 0
    if share:
        yield Share(share, derive, stores=stores)


@dataclass
class Ingested:
    """What a share became: its stored rows, the filtered day's rows and the examples, in input order."""

    #: None when the share stores nothing (`Share.stores`)
    stored: pa.RecordBatch | None
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
    """The share's records stored, filtered and derived. Where the share stores (a day of the store), a
    trajectory id met before, earlier in the share or among the ids the share comes with
    (`Share.earlier`: the day's earlier shares'), is quarantined as a duplicate: a day keeps each
    trajectory once."""
    derive, stores = share.derive, share.stores
    if privacy is not None:
        privacy.stats = FilterStats()  # this share's counts only; the caller merges them
    stored = filtered = None
    if stores:
        # Arrow is loaded where rows are stored only: `build-datasets`' processes never need it
        from training_pipeline.trajectories.rows import StoreRows

        stored, filtered = StoreRows(), StoreRows()
    derived: list[Any] = []
    records, kept, anonymised = 0, [], False
    quarantined: list[tuple[str, str]] = []

    def quarantine(parsed: ParsedRecord) -> None:
        quarantined.append((quarantine_line(parsed), parsed.reason or "unknown"))

    first: dict[str, str] = {}  # this share's own (the day's earlier shares' are only looked up)
    ids: list[tuple[str, str]] = []
    for item in with_spans_read(share.items):
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
        if stores:
            trajectory_id = str(trajectory.get("trajectoryId"))
            first_read = first.get(trajectory_id) or share.earlier.get(trajectory_id)
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
            except Exception as err:  # a fault of the filter's on this record: it, not its day, is lost
                quarantine(redaction_failed(origin, text, err))
                continue
        if stores:
            first[trajectory_id] = origin  # stored: a later record with this id is a duplicate of it
            raw = stored.add(trajectory, origin, text)
            ids.append((trajectory_id, origin))
        if derive is None:
            continue
        before = privacy.stats.anonymization_count  # type: ignore[union-attr]
        if not privacy.apply(trajectory, origin, redacted=True):  # type: ignore[union-attr]
            continue
        derived.append(derive(trajectory))
        if not stores:
            continue
        unchanged = privacy.stats.anonymization_count == before  # type: ignore[union-attr]
        kept.append(len(stored) - 1)
        if not unchanged and not anonymised:
            # the share's first anonymised trajectory: the filtered rows are made from here on, the
            # earlier kept ones copied from the stored rows they equal (until now, `kept` said it)
            anonymised = True
            filtered.copy_rows(stored, kept[:-1])
        if anonymised:
            filtered.add(trajectory, origin, raw if unchanged else None)
    stats = privacy.stats if privacy is not None else FilterStats()
    return Ingested(
        stored.take() if stored is not None else None,
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
