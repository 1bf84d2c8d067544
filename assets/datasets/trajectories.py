"""`trajectories` (a validated day, Parquet + quarantine) and `filtered_trajectories` (privacy-filtered)."""

import json
from datetime import date
from pathlib import Path

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetExecutionContext,
    AssetsDefinition,
    Failure,
    MaterializeResult,
    MetadataValue,
    PartitionsDefinition,
    RetryRequested,
    asset,
    asset_check,
)

from assets.partitions import GROUP
from resources.privacy import PrivacySettings
from resources.sources import TrajectorySource
from resources.storage import DataStore
from training_pipeline.datasets.daily import ingest_day
from training_pipeline.intake.filtered import FilteredDay, adopt_staged, filter_store
from training_pipeline.intake.ingest import IngestManifest, manifest_path
from training_pipeline.trajectories.database import SourceUnavailable
from training_pipeline.trajectories.store import row_count


def require_materialised(path: Path, what: str, day: str) -> None:
    """Fail with a clear message when an upstream partition's file is missing."""
    if not path.exists():
        raise Failure(f"{what} for {day} is not materialised ({path} is missing); materialise it first.")


def trajectory_assets(
    daily_partitions: PartitionsDefinition,
) -> tuple[list[AssetsDefinition], list[AssetChecksDefinition]]:
    """`trajectories` and `filtered_trajectories` with their checks, on the deployment's days."""

    @asset(
        partitions_def=daily_partitions,
        group_name=GROUP,
        kinds={"parquet"},
        description="The day's trajectories that parse and validate, stored with their credentials already "
        "redacted (by the privacy profile); the rest go to a quarantine file with the reason and where they "
        "came from.",
    )
    def trajectories(
        context: AssetExecutionContext,
        trajectory_source: TrajectorySource,
        privacy: PrivacySettings,
        store: DataStore,
    ) -> MaterializeResult:
        day = context.partition_key
        parquet = store.trajectories(day)
        try:
            # one pass: the stored day, and the filtered day and datasets staged for the next layers
            manifest = ingest_day(
                trajectory_source.day_records(date.fromisoformat(day)),
                parquet,
                store.quarantine(day),
                trajectory_source.describe(),
                privacy.build_filter(),
                FilteredDay(store.filtered(day), store.privacy_report(day)),
                store.datasets(day),
                workers=privacy.pool_size(),
                scanner_secrets=privacy.scanner_secrets(),  # the checks' inspection, made on the way
            )
        except SourceUnavailable as err:
            # the source may come back: retry this step (only this one) before failing the run
            raise RetryRequested(
                max_retries=trajectory_source.retries, seconds_to_wait=trajectory_source.retry_wait_seconds
            ) from err
        profile = manifest.profile
        context.log.info(
            f"{day}: {manifest.records_in} records in, {manifest.kept} kept, "
            f"{manifest.quarantined} quarantined"
        )
        return MaterializeResult(
            metadata={
                "records_in": manifest.records_in,
                "kept": manifest.kept,
                "quarantined": manifest.quarantined,
                "llm_calls": manifest.llm_call_count,
                "quarantine_reasons": MetadataValue.json(manifest.quarantine_reasons),
                "agents": MetadataValue.json(profile["agents"]),
                "calls_per_trajectory": MetadataValue.json(profile["calls_per_trajectory"]),
                "first_start": str(profile["first_start"]),
                "last_start": str(profile["last_start"]),
                "source": manifest.source,
                "path": MetadataValue.path(str(parquet)),
                "quarantine_path": MetadataValue.path(str(store.quarantine(day))),
            }
        )

    @asset_check(
        asset=trajectories,
        partitions_def=daily_partitions,
        blocking=True,
        description="records in = kept + quarantined, and the files hold exactly those",
    )
    def trajectories_counts(context: AssetCheckExecutionContext, store: DataStore) -> AssetCheckResult:
        day = context.partition_key
        parquet = store.trajectories(day)
        manifest = IngestManifest.read(manifest_path(parquet))
        rows = row_count(parquet)
        with store.quarantine(day).open("rb") as handle:
            quarantined = sum(1 for _ in handle)
        ok = (
            manifest.records_in == manifest.kept + manifest.quarantined
            and rows == manifest.kept
            and quarantined == manifest.quarantined
        )
        return AssetCheckResult(
            passed=ok,
            metadata={
                "records_in": manifest.records_in,
                "parquet_rows": rows,
                "quarantine_lines": quarantined,
            },
        )

    @asset(
        deps=[trajectories],
        partitions_def=daily_partitions,
        group_name=GROUP,
        kinds={"parquet"},
        description="Trajectories after the privacy filter: credentials redacted, handles anonymised, "
        "trajectories of private people dropped.",
    )
    def filtered_trajectories(
        context: AssetExecutionContext, privacy: PrivacySettings, store: DataStore
    ) -> MaterializeResult:
        day = context.partition_key
        require_materialised(store.trajectories(day), "trajectories", day)
        ingested = IngestManifest.read(manifest_path(store.trajectories(day)))
        privacy_filter = privacy.build_filter()
        filtered = FilteredDay(store.filtered(day), store.privacy_report(day))
        # the day the ingest filtered in its own pass, if the store and the filter are still those
        report = adopt_staged(filtered, ingested.ingest_id, privacy_filter.fingerprint())
        fused = report is not None
        if report is None:
            report = filter_store(
                store.trajectories(day),
                filtered.store,
                filtered.report,
                privacy_filter,
                ingested.redactions_by_rule,
            )
        context.log.info(
            f"{day}: {report['kept']} kept, {report['droppedPrivate']} dropped as private, "
            f"{report['redactionCount']} redactions, {report['anonymizationCount']} anonymisations"
        )
        return MaterializeResult(
            metadata={
                "profile": report["profile"],
                "filtered_while_ingesting": fused,
                "trajectories_in": report["trajectoriesIn"],
                "kept": report["kept"],
                "dropped_private": report["droppedPrivate"],
                "redactions": report["redactionCount"],
                "redactions_by_rule": MetadataValue.json(report["redactionsByRule"]),
                "anonymizations": report["anonymizationCount"],
                "path": MetadataValue.path(str(store.filtered(day))),
                "report_path": MetadataValue.path(str(store.privacy_report(day))),
            }
        )

    @asset_check(
        asset=filtered_trajectories,
        partitions_def=daily_partitions,
        blocking=True,
        description="trajectories in = kept + dropped, redactions by rule sum to the total",
    )
    def filtered_trajectories_counts(
        context: AssetCheckExecutionContext, store: DataStore
    ) -> AssetCheckResult:
        day = context.partition_key
        report = json.loads(store.privacy_report(day).read_text(encoding="utf-8"))
        upstream, rows = row_count(store.trajectories(day)), row_count(store.filtered(day))
        ok = (
            report["trajectoriesIn"] == upstream == report["kept"] + report["droppedPrivate"]
            and rows == report["kept"]
            and sum(report["redactionsByRule"].values()) == report["redactionCount"]
        )
        return AssetCheckResult(
            passed=ok,
            metadata={
                "upstream_rows": upstream,
                "filtered_rows": rows,
                "dropped_private": report["droppedPrivate"],
            },
        )

    return [trajectories, filtered_trajectories], [trajectories_counts, filtered_trajectories_counts]
