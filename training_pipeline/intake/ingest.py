"""One day of a source into the trajectory store, with a quarantine and a manifest whose counts add up."""

from __future__ import annotations

import contextlib
import itertools
import json
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

import pyarrow as pa

from training_pipeline import jscompat
from training_pipeline.atomic import atomic_copy, atomic_write_text
from training_pipeline.intake.filtered import FilteredDay, report_of, stage
from training_pipeline.intake.quarantine import QuarantineWriter
from training_pipeline.privacy.filter import FilterStats, PrivacyFilter, start_worker_filter, worker_filter
from training_pipeline.trajectories.files import Unparsed, UnparsedSpan, with_spans_read
from training_pipeline.trajectories.records import ParsedRecord
from training_pipeline.trajectories.store import StoreRows, TrajectoryParquetWriter, rows_of
from training_pipeline.workers import ordered_map


@dataclass(frozen=True)
class IngestManifest:
    """`records_in == kept + quarantined`, always."""

    records_in: int
    kept: int
    quarantined: int
    llm_call_count: int
    source: str
    quarantine_reasons: dict[str, int] = field(default_factory=dict)
    #: credentials redacted before the day was stored, by rule (the privacy report adds them in)
    redactions_by_rule: dict[str, int] = field(default_factory=dict)
    #: names this ingest: a filtered day staged by it is adopted only while the store is this one
    ingest_id: str = ""

    def write(self, path: Path) -> None:
        atomic_write_text(path, json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def read(cls, path: Path) -> IngestManifest:
        return cls(**json.loads(path.read_text(encoding="utf-8")))


def manifest_path(parquet: Path) -> Path:
    return parquet.with_suffix(".manifest.json")


class Derive(Protocol):
    """What is made of each trajectory the filter keeps, where it is filtered (of a module-level class,
    so it reaches the pool's workers), and of a share's in all: the datasets' examples
    (`datasets.export.DailyExamples`)."""

    #: modules the pool's fork server imports for what the workers make
    preload: tuple[str, ...]

    def __call__(self, trajectory: dict[str, Any]) -> Any: ...

    def gather(self, made: list[Any]) -> Any:
        """What crosses back from the share (handed to `each_derived` once per share)."""
        ...


@dataclass(frozen=True)
class _Nothing:
    """A `Derive` that makes nothing: the fused pass stores and filters only."""

    preload: ClassVar[tuple[str, ...]] = ()

    def __call__(self, trajectory: dict[str, Any]) -> None:
        return None

    def gather(self, made: list[Any]) -> None:
        return None


#: a share of a day for the pool: the fused pass's `Derive` (None: store only), and its records: valid
#: ones as (origin, JSON text) (the text crosses processes far cheaper than the parsed trajectory), or
#: records read and not parsed yet, which the worker parses (and checks the day of), or a span of a file
#: that the worker reads too
_Share = tuple[Derive | None, list[tuple[str, str | bytes] | Unparsed | UnparsedSpan]]
_SHARE_CHARS = 1 << 20
_SHARE_RECORDS = 1024
#: a pass over fewer bytes of files than this runs in the calling process: starting the pool's fork
#: server (a clean interpreter importing the pass: most of a second of a core, while the first shares
#: are done here) costs more than the second core saves. Measured on 2 cores, the step `trajectories`:
#: 2,000 trajectories (20 MB) 1.6 s on the pool against 1.2 s without; even at 40-60 MB; 0.8 s
#: faster on the pool at 100 MB.
POOL_FROM_BYTES = 32 << 20


@dataclass
class _Ingested:
    """What a share became: its stored rows, the filtered day's rows and the examples, in input order."""

    stored: pa.RecordBatch
    #: the filtered day's rows, or None when each is its stored row unchanged (the filter anonymised
    #: nothing): then `kept` says which stored rows they are, and the rows cross processes once
    filtered: pa.RecordBatch | None
    kept: list[int]
    #: what `Derive.gather` made of the share's kept trajectories
    derived: Any
    stats: FilterStats
    #: records of the share's unparsed ones that belong to the day, and those of them that failed
    records: int
    quarantined: list[ParsedRecord]


def _ingest_share(privacy: PrivacyFilter | None, share: _Share) -> _Ingested:
    derive, items = share
    if privacy is not None:
        privacy.stats = FilterStats()  # this share's counts only; the caller merges them
    stored, filtered, derived = StoreRows(), StoreRows(), []
    records, quarantined, kept, anonymised = 0, [], [], False
    for item in with_spans_read(items):
        if isinstance(item, Unparsed):
            parsed = item.parse()
            if parsed is None:
                continue  # another day's
            records += 1
            if parsed.trajectory is None:
                quarantined.append(parsed)
                continue
            origin, text, trajectory = parsed.origin, parsed.text, parsed.trajectory
        else:
            origin, text = item
            trajectory = jscompat.loads(text)
        if privacy is not None and privacy.redact_credentials(trajectory):
            text = None  # stored as re-serialised, not as it came
        raw = stored.add(trajectory, origin, text)
        if derive is None:
            continue
        before = privacy.stats.anonymization_count  # type: ignore[union-attr]
        if privacy.apply(trajectory, origin, redacted=True):  # type: ignore[union-attr]
            unchanged = privacy.stats.anonymization_count == before  # type: ignore[union-attr]
            anonymised |= not unchanged
            kept.append(len(stored) - 1)
            filtered.add(trajectory, origin, raw if unchanged else None)
            derived.append(derive(trajectory))
    stats = privacy.stats if privacy is not None else FilterStats()
    return _Ingested(
        stored.take(),
        filtered.take() if anonymised else None,
        kept,
        derive.gather(derived) if derive is not None else None,
        stats,
        records,
        quarantined,
    )


def _ingest_in_worker(share: _Share) -> _Ingested:
    return _ingest_share(worker_filter(), share)


def ingest_records(
    records: Iterable[ParsedRecord | Unparsed | UnparsedSpan],
    parquet: Path,
    quarantine: Path,
    source: str,
    privacy: PrivacyFilter | None = None,
    filtered: FilteredDay | None = None,
    derive: Derive | None = None,
    each_derived: Callable[[Any], None] | None = None,
    workers: int = 1,
) -> IngestManifest:
    """Valid records to `parquet`, the rest to `quarantine`; the manifest is written last, so its
    presence means both files are complete. With `privacy`, the day is stored with its credentials
    already redacted as that profile redacts them (nothing is kept in clear that the datasets would not
    show). With `filtered` too, the same pass applies the rest of the filter (handles, private people)
    and stages the filtered day for `filtered_trajectories` to adopt (a copy of the stored day when the
    filter changes nothing more: `PrivacyFilter.changes_only_credentials`); `derive` makes something of each
    trajectory the filter keeps (its examples), gathered per share and handed to `each_derived` (the
    datasets' staged export).

    With `workers` > 1 (and `privacy`), the redaction, the filter and the examples run on that many
    processes of the bounded pool (`training_pipeline.workers`), started from a fork server (a Dagster
    step has threads of its own); everything is written here, in input order, so the files are the same
    as with one. Records that come unparsed (a file source's) are parsed there too. A day of files
    smaller than `POOL_FROM_BYTES` runs here: the pool would cost more to start than it saves."""
    counted = [0]
    ingest_id = uuid.uuid4().hex
    fused = privacy is not None and filtered is not None
    if filtered is not None:  # an older staged day must not be adopted if this pass stops half-way
        filtered.stamp.unlink(missing_ok=True)
    stats = FilterStats()
    with contextlib.ExitStack() as stack:
        store = stack.enter_context(TrajectoryParquetWriter(parquet))
        bad = stack.enter_context(QuarantineWriter(quarantine))
        # a filter that changes only credentials (redacted before the day is stored) makes the filtered
        # day the stored day: copied once it is written, not encoded and compressed a second time
        copied = fused and privacy.changes_only_credentials  # type: ignore[union-attr]
        staged = (
            stack.enter_context(TrajectoryParquetWriter(filtered.staged().store))
            if fused and not copied
            else None
        )
        small, records = _small(records)
        results = ordered_map(
            _shares(records, bad, counted, (derive or _Nothing()) if fused else None),
            lambda share: _ingest_share(privacy, share),
            workers if privacy is not None and not small else 1,
            _ingest_in_worker,
            start_worker_filter,
            privacy.recipe() if privacy is not None else (),
            start_method="forkserver",
            preload=[derive.__module__, *derive.preload] if derive is not None else [],
        )
        for done in results:
            counted[0] += done.records
            for parsed in done.quarantined:
                bad.add(parsed)
            store.add_batch(done.stored)
            if staged is not None:
                staged.add_batch(
                    done.filtered if done.filtered is not None else rows_of(done.stored, done.kept)
                )
            if each_derived is not None:
                each_derived(done.derived)
            stats.merge(done.stats)
    if privacy is not None:
        privacy.stats = stats
    redactions = dict(sorted(stats.redactions.items())) if privacy is not None else {}
    manifest = IngestManifest(
        counted[0], store.count, bad.count, store.llm_call_count, source, bad.reasons, redactions, ingest_id
    )
    if fused:
        if copied:
            atomic_copy(parquet, filtered.staged().store)
        stage(filtered, report_of(privacy), ingest_id, privacy.fingerprint())
    manifest.write(manifest_path(parquet))
    return manifest


def _small(
    records: Iterable[ParsedRecord | Unparsed | UnparsedSpan],
) -> tuple[bool, Iterable[ParsedRecord | Unparsed | UnparsedSpan]]:
    """Whether `records` are known to come to fewer than `POOL_FROM_BYTES`, and `records` whole again.
    Only spans of files are looked ahead (they hold no data); anything else leaves the size unknown."""
    ahead: list[ParsedRecord | Unparsed | UnparsedSpan] = []
    size = 0
    pending = iter(records)
    for item in pending:
        ahead.append(item)
        if not isinstance(item, UnparsedSpan):
            return False, itertools.chain(ahead, pending)
        size += item.span.size
        if size >= POOL_FROM_BYTES:
            return False, itertools.chain(ahead, pending)
    return True, ahead


def _shares(
    records: Iterable[ParsedRecord | Unparsed | UnparsedSpan],
    bad: QuarantineWriter,
    counted: list[int],
    derive: Derive | None,
) -> Iterator[_Share]:
    """The records in shares of about `_SHARE_CHARS`: spans of files (a span of a large file fills a
    share; a task run's file of one trajectory is one span among many), unparsed records as they are,
    parsed ones if valid (the others quarantined as they come by)."""
    items: list[tuple[str, str | bytes] | Unparsed | UnparsedSpan] = []
    size = 0
    for parsed in records:
        if isinstance(parsed, UnparsedSpan):
            items.append(parsed)
            size += parsed.span.size
        elif isinstance(parsed, Unparsed):
            items.append(parsed)
            size += len(parsed.raw.data)
        else:
            counted[0] += 1
            if parsed.trajectory is None:
                bad.add(parsed)
                continue
            text = parsed.text if parsed.text is not None else jscompat.dumps(parsed.trajectory)
            items.append((parsed.origin, text))
            size += len(text)
        if size >= _SHARE_CHARS or len(items) >= _SHARE_RECORDS:
            yield derive, items
            items, size = [], 0
    if items:
        yield derive, items
