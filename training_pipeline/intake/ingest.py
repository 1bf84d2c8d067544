"""One day of a source into the trajectory store, with a quarantine and a manifest whose counts add up."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from training_pipeline import jscompat
from training_pipeline.atomic import atomic_copy, atomic_write_text
from training_pipeline.intake.filtered import FilteredDay, report_of
from training_pipeline.intake.quarantine import QuarantineWriter
from training_pipeline.intake.share import (
    Derive,
    Ingested,
    NoDerive,
    Share,
    ShareItem,
    gathered,
    ingest_in_worker,
    ingest_share,
)
from training_pipeline.privacy.filter import FilterStats, PrivacyFilter, start_worker_filter
from training_pipeline.seen_ids import FirstReads
from training_pipeline.trajectories.files import Unparsed, UnparsedSpan
from training_pipeline.trajectories.parquet import TrajectoryParquetWriter, rows_of
from training_pipeline.trajectories.parsing import ParsedRecord
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
    #: the stored day's agents, calls per trajectory and first and last start (`parquet.DayProfile`)
    profile: dict[str, Any] = field(default_factory=dict)

    def write(self, path: Path) -> None:
        atomic_write_text(path, json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def read(cls, path: Path) -> IngestManifest:
        """The manifest at `path`; fields a newer or older writer added are ignored."""
        known = {f.name for f in dataclasses.fields(cls)}
        fields = json.loads(path.read_text(encoding="utf-8"))
        return cls(**{name: value for name, value in fields.items() if name in known})


def manifest_path(parquet: Path) -> Path:
    return parquet.with_suffix(".manifest.json")


#: a pass over fewer bytes of files than this runs in the calling process: below it, starting the
#: pool's fork server (a clean interpreter importing the pass) costs more than the second core saves
POOL_FROM_BYTES = 16 << 20


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
    and writes the filtered day and its report (a copy of the stored day when the filter changes
    nothing more: `PrivacyFilter.only_redacts`); `derive` makes something of each
    trajectory the filter keeps (its examples), gathered per share and handed to `each_derived` (the
    datasets' export).

    With `workers` > 1 (and `privacy`), the redaction, the filter and the examples run on that many
    processes of the bounded pool (`training_pipeline.workers`), started from a fork server (a Dagster
    step has threads of its own); everything is written here, in input order, so the files are the same
    as with one. Records that come unparsed (a file source's) are parsed there too. A day of files
    smaller than `POOL_FROM_BYTES` runs here: the pool would cost more to start than it saves."""
    counted = [0]
    fused = privacy is not None and filtered is not None
    stats = FilterStats()
    with contextlib.ExitStack() as stack:
        store = stack.enter_context(TrajectoryParquetWriter(parquet))
        bad = stack.enter_context(QuarantineWriter(quarantine))
        # a filter that changes only credentials (redacted before the day is stored) makes the filtered
        # day the stored day: copied once it is written, not encoded and compressed a second time
        copied = fused and privacy.only_redacts  # type: ignore[union-attr]
        kept = (
            stack.enter_context(TrajectoryParquetWriter(filtered.store))  # type: ignore[union-attr]
            if fused and not copied
            else None
        )
        small, records = _small(records)
        pooled = workers > 1 and privacy is not None and not small
        # each trajectory id the day has stored, and where it was first read: a later record with the
        # same id is quarantined as a duplicate
        seen = stack.enter_context(contextlib.closing(FirstReads()))

        def again(share: Share, done: Ingested) -> Share | None:
            """The share once more, with the ids it holds that earlier shares stored (where it was
            processed, on the pool or here, they were not known), unless it holds none: its ids are
            then the day's."""
            if seen.add_new(done.ids):
                return None
            earlier = seen.first_reads_of([trajectory_id for trajectory_id, _ in done.ids])
            if not earlier:  # two of its own ids share a digest (a chance of 2⁻⁶⁴ a pair): both kept
                return None
            return dataclasses.replace(share, earlier=earlier)

        results = ordered_map(
            _shares(records, bad, counted, (derive or NoDerive()) if fused else None),
            lambda share: ingest_share(privacy, share),
            workers if pooled else 1,
            ingest_in_worker,
            start_worker_filter,
            privacy.recipe() if privacy is not None else (),
            start_method="forkserver",
            preload=[
                "training_pipeline.trajectories.rows",  # the rows a share stores (Arrow)
                *(privacy.worker_modules if privacy is not None else []),
                *([derive.__module__] if derive is not None else []),
            ],
            again=again,
        )
        for done in results:
            counted[0] += done.records
            for line, reason in done.quarantined:
                bad.add_line(line, reason)
            store.add_batch(done.stored)
            if kept is not None:
                kept.add_batch(
                    done.filtered if done.filtered is not None else rows_of(done.stored, done.kept)
                )
            if each_derived is not None:
                each_derived(done.derived)
            stats.merge(done.stats)
    if privacy is not None:
        privacy.stats = stats
    redactions = dict(sorted(stats.redactions.items())) if privacy is not None else {}
    manifest = IngestManifest(
        counted[0],
        store.count,
        bad.count,
        store.profile.llm_calls,
        source,
        bad.reasons,
        redactions,
        store.profile.summary(),
    )
    if fused:
        if copied:
            atomic_copy(parquet, filtered.store)  # type: ignore[union-attr]
        filtered.write_report(report_of(privacy))  # type: ignore[union-attr,arg-type]
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
) -> Iterator[Share]:
    """The records in shares (`share.gathered`): spans of files and unparsed records as they are,
    parsed ones if valid (the others quarantined as they come by)."""

    def items() -> Iterator[ShareItem]:
        for parsed in records:
            if isinstance(parsed, (Unparsed, UnparsedSpan)):
                yield parsed
                continue
            counted[0] += 1
            if parsed.trajectory is None:
                bad.add(parsed)
                continue
            yield parsed.origin, parsed.text if parsed.text is not None else jscompat.dumps(parsed.trajectory)

    return gathered(items(), derive)
