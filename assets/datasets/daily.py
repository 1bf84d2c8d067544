"""The day's layers as one multi-asset: `trajectories` (validated, stored, quarantine beside it),
`filtered_trajectories` (privacy-filtered) and the five per-task datasets, with their checks.

One step, because it is one pass: each trajectory is parsed once on its way to all three layers
(`training_pipeline.datasets.daily`). The graph still shows three layers, and any subset can be
materialised (`can_subset`): re-filtering a day after a new entity directory is materialising
`filtered_trajectories` and the datasets, which reads the stored day instead of the source.

A backfill is one run (`BackfillPolicy.single_run`): the step loops over the run's days, so a 90-day
backfill pays Dagster's run start once. Each day's materialisation and check results carry that day's
own metadata.

The credential re-scan is blocking: a dataset in which the independent detector finds a secret fails
its check, the step fails after every day is checked, and nothing downstream runs.
"""

import json
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from dagster import (
    AssetCheckEvaluation,
    AssetCheckKey,
    AssetCheckResult,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetsDefinition,
    AssetSpec,
    AutomationCondition,
    BackfillPolicy,
    Failure,
    MaterializeResult,
    MetadataValue,
    PartitionsDefinition,
    RetryRequested,
    TableColumn,
    TableSchema,
    multi_asset,
)

from assets.compat import PARTITIONED_CHECKS, day_check
from assets.keys import Keys
from resources.layers_io import LAYERS_IO_MANAGER
from resources.privacy import PrivacySettings
from resources.sources import TrajectorySource
from resources.storage import DataStore
from training_pipeline.datasets.daily import DayBuilt, DayFiles, LayerMissing, build_day
from training_pipeline.datasets.formats import DatasetFormat, write_format
from training_pipeline.datasets.training_tasks import SUMMARY_FILE_NAME, TASK_FILE_NAMES, TASKS, Task
from training_pipeline.datasets.validate import INSPECTION_FILE_NAME, inspect_dataset_files
from training_pipeline.intake.filtered import FilteredDay
from training_pipeline.intake.ingest import IngestManifest, manifest_path
from training_pipeline.privacy.scan import SecretScanner
from training_pipeline.trajectories.database import SourceUnavailable
from training_pipeline.trajectories.parquet import row_count

__all__ = ["daily_layers"]

_PREVIEW_CHARS = 240
_DESCRIPTIONS: dict[Task, str] = {
    "should_respond": "Should the agent answer? Context-routing fields stripped from prompt and answer.",
    "context_routing": "Calls whose answer routes the conversation (primaryContext, secondaryContexts...).",
    "action_planner": "Planner calls: which actions to take (`<actions>` XML, planner hints).",
    "response": "The agent's replies.",
    "media_description": "Descriptions of images, audio and video.",
}
_COUNTS = "counts_add_up"
#: each dataset's checks: (blocking, description)
_DATASET_CHECKS = {
    "no_credentials": (
        True,
        "Blocking: an independent detector (detect-secrets' plugins and the environment's secret values) "
        "finds no credential in any message.",
    ),
    "no_personal_data": (
        True,
        "Blocking: the personal-data finder (Presidio's recognizers and ours) run again over every message "
        "finds none of the kinds the filter redacts (emails, phones, cards, ids, addresses, names…).",
    ),
    "valid_jsonl": (True, 'Every line is {"messages": [system, user, model]} with string contents.'),
    _COUNTS: (
        False,
        "Lines in the file = the summary's count; the summary's trajectories = those the privacy "
        "filter kept.",
    ),
}


def daily_layers(
    partitions: PartitionsDefinition,
    keys: Keys,
    group: str,
    owners: list[str] | None = None,
    automation_condition: AutomationCondition | None = None,
    dataset_format: DatasetFormat = "elizaos",
) -> AssetsDefinition:
    """The day's three layers and their checks on the deployment's days, keyed under `keys`, the
    datasets also written in `dataset_format` (`datasets.formats`);
    `automation_condition` on each layer (the same on all three, so they are asked for together: one
    run, one pass)."""
    layers = [
        AssetSpec(
            keys.trajectories,
            group_name=group,
            kinds={"parquet"},
            owners=owners,
            automation_condition=automation_condition,
            description="The day's trajectories that parse and validate, stored with their credentials "
            "already redacted (by the privacy profile); the rest go to a quarantine file with the reason "
            "and where they came from.",
        ),
        AssetSpec(
            keys.filtered,
            deps=[keys.trajectories],
            group_name=group,
            kinds={"parquet"},
            owners=owners,
            automation_condition=automation_condition,
            description="Trajectories after the privacy filter: credentials redacted, handles anonymised, "
            "trajectories of private people dropped.",
        ),
        *(
            AssetSpec(
                keys.dataset(task),
                deps=[keys.filtered],
                group_name=group,
                kinds={"jsonl"},
                owners=owners,
                automation_condition=automation_condition,
                description=_DESCRIPTIONS[task],
            )
            for task in TASKS
        ),
    ]
    # the step writes the files; the IO manager only loads them for a project's downstream assets
    specs = [spec.with_io_manager_key(LAYERS_IO_MANAGER) for spec in layers]
    # daily checks where this Dagster has them (`assets.compat`)
    daily = {"partitions_def": partitions} if PARTITIONED_CHECKS else {}
    check_specs = [
        AssetCheckSpec(
            _COUNTS,
            asset=keys.trajectories,
            blocking=True,
            description="records in = kept + quarantined, and the files hold exactly those",
            **daily,
        ),
        AssetCheckSpec(
            _COUNTS,
            asset=keys.filtered,
            blocking=True,
            description="trajectories in = kept + dropped, redactions by rule sum to the total",
            **daily,
        ),
        *(
            AssetCheckSpec(name, asset=keys.dataset(task), blocking=blocking, description=text, **daily)
            for task in TASKS
            for name, (blocking, text) in _DATASET_CHECKS.items()
        ),
    ]

    @multi_asset(
        name=keys.name("daily_layers"),
        specs=specs,
        check_specs=check_specs,
        partitions_def=partitions,
        can_subset=True,
        backfill_policy=BackfillPolicy.single_run(),
        pool=keys.name("training_pipeline_daily"),
    )
    def _daily_layers(
        context: AssetExecutionContext,
        training_pipeline_source: TrajectorySource,
        training_pipeline_privacy: PrivacySettings,
        training_pipeline_store: DataStore,
    ) -> Iterator[MaterializeResult | AssetCheckResult | AssetCheckEvaluation]:
        selected = context.selected_asset_keys
        tasks = [task for task in TASKS if keys.dataset(task) in selected]
        scanner = training_pipeline_privacy.scanner() if tasks else None
        for day in context.partition_keys:
            if not selected:
                break  # only checks were asked for
            files = _files(training_pipeline_store, day)
            try:
                built = build_day(
                    files,
                    training_pipeline_privacy.build_filter,
                    records=(
                        (lambda day=day: training_pipeline_source.day_records(date.fromisoformat(day)))
                        if keys.trajectories in selected
                        else None
                    ),
                    source=training_pipeline_source.describe(),
                    filtered=keys.filtered in selected,
                    datasets=tasks,
                    workers=training_pipeline_privacy.pool_size(),
                    scanner_secrets=training_pipeline_privacy.scanner_secrets() if tasks else None,
                    personal_kinds=training_pipeline_privacy.personal_kinds(),
                )
            except SourceUnavailable as err:
                # the source may come back: retry this step (only this one) before failing the run
                raise RetryRequested(
                    max_retries=training_pipeline_source.retries,
                    seconds_to_wait=training_pipeline_source.retry_wait_seconds,
                ) from err
            except LayerMissing as err:
                missing = f"{err.layer} for {day} is not materialised ({err.path} is missing)"
                raise Failure(f"{missing}; materialise it first.") from err
            context.log.info(_said(day, built))
            if tasks:
                formatted = write_format(files.datasets, dataset_format)
                if formatted:
                    context.log.info(f"{day}: {len(formatted)} files in {dataset_format}/")
            for key, metadata in _metadata(keys, day, files, built, scanner).items():
                if key in selected:  # a subset of the datasets is built, and published, alone
                    context.add_asset_metadata(metadata, asset_key=key, partition_key=day)
        for key in [keys.trajectories, keys.filtered, *keys.datasets]:  # in the graph's order
            if key in selected:
                yield MaterializeResult(asset_key=key)
        for day in context.partition_keys:
            yield from _checks(
                keys,
                day,
                _files(training_pipeline_store, day),
                context.selected_asset_check_keys,
                training_pipeline_privacy,
                one_day=context.has_partition_key,
            )

    return _daily_layers


def _files(store: DataStore, day: str) -> DayFiles:
    return DayFiles(
        store.trajectories(day),
        store.quarantine(day),
        FilteredDay(store.filtered(day), store.privacy_report(day)),
        store.datasets(day),
    )


def _said(day: str, built: DayBuilt) -> str:
    """The day in one log line: what each layer made of it."""
    parts = []
    if built.manifest is not None:
        manifest = built.manifest
        parts.append(
            f"{manifest.records_in} records in, {manifest.kept} kept, {manifest.quarantined} quarantined"
        )
    if built.report is not None:
        report = built.report
        parts.append(f"{report['droppedPrivate']} dropped as private, {report['redactionCount']} redactions")
    if built.summary is not None:
        parts.append(f"{built.summary['llmCallCount']} LLM calls → {json.dumps(built.summary['counts'])}")
    return f"{day}: " + "; ".join(parts)


def _metadata(
    keys: Keys, day: str, files: DayFiles, built: DayBuilt, scanner: SecretScanner | None
) -> dict[Any, dict[str, Any]]:
    """Each built layer's metadata for `day`: Dagster's standard keys (`dagster/row_count`,
    `dagster/uri`, the Parquet layers' column schema) and the layer's own counts."""
    out: dict[Any, dict[str, Any]] = {}
    if built.manifest is not None:
        manifest, profile = built.manifest, built.manifest.profile
        out[keys.trajectories] = {
            "dagster/row_count": manifest.kept,
            "dagster/uri": str(files.stored),
            "dagster/column_schema": _schema(files.stored),
            "records_in": manifest.records_in,
            "kept": manifest.kept,
            "quarantined": manifest.quarantined,
            "llm_calls": manifest.llm_call_count,
            "quarantine_reasons": MetadataValue.json(manifest.quarantine_reasons),
            "agents": MetadataValue.json(profile.get("agents", {})),
            "calls_per_trajectory": MetadataValue.json(profile.get("calls_per_trajectory", {})),
            "first_start": str(profile.get("first_start")),
            "last_start": str(profile.get("last_start")),
            "source": manifest.source,
            "path": MetadataValue.path(str(files.stored)),
            "quarantine_path": MetadataValue.path(str(files.quarantine)),
        }
    if built.report is not None:
        report = built.report
        out[keys.filtered] = {
            "dagster/row_count": report["kept"],
            "dagster/uri": str(files.filtered.store),
            "dagster/column_schema": _schema(files.filtered.store),
            "profile": report["profile"],
            "trajectories_in": report["trajectoriesIn"],
            "kept": report["kept"],
            "dropped_private": report["droppedPrivate"],
            "redactions": report["redactionCount"],
            "redactions_by_rule": MetadataValue.json(report["redactionsByRule"]),
            "anonymizations": report["anonymizationCount"],
            "path": MetadataValue.path(str(files.filtered.store)),
            "report_path": MetadataValue.path(str(files.filtered.report)),
        }
    if built.summary is not None and built.previews is not None and scanner is not None:
        summary = built.summary
        for task in TASKS:
            metrics = summary["taskMetrics"][task]
            path = files.datasets / TASK_FILE_NAMES[task]
            out[keys.dataset(task)] = {
                "dagster/row_count": metrics["exampleCount"],
                "dagster/uri": str(path),
                "examples": metrics["exampleCount"],
                "source_calls": metrics["sourceCallCount"],
                "source_trajectories": metrics["sourceTrajectoryCount"],
                "trajectories": summary["trajectoryCount"],
                "llm_calls": summary["llmCallCount"],
                "preview": MetadataValue.json(_preview(built.previews[task], scanner)),
                "path": MetadataValue.path(str(path)),
                "summary_path": MetadataValue.path(str(files.datasets / SUMMARY_FILE_NAME)),
            }
    return out


def _schema(parquet: Path) -> TableSchema:
    return TableSchema(
        columns=[TableColumn(field.name, str(field.type)) for field in pq.read_schema(parquet)]
    )


def _preview(examples: list[dict[str, Any]], scanner: SecretScanner) -> list[dict[str, str]]:
    """A few rows, each message shortened and passed through the scanner's mask: metadata lives in
    the event log forever, so nothing it recognises as a credential goes there."""
    rows = []
    for example in examples:
        row = {}
        for message in example["messages"]:
            text = message["content"]
            short = text if len(text) <= _PREVIEW_CHARS else text[:_PREVIEW_CHARS] + "…"
            row[message["role"]] = scanner.mask(short)
        rows.append(row)
    return rows


def _checks(
    keys: Keys,
    day: str,
    files: DayFiles,
    selected: set[AssetCheckKey],
    training_pipeline_privacy: PrivacySettings,
    one_day: bool,
) -> Iterator[AssetCheckResult | AssetCheckEvaluation]:
    """The selected checks of `day`, read from the files on disk (whatever this run made of them);
    `one_day`: the run is of this day alone (`compat.day_check`)."""

    def evaluation(
        key: AssetCheckKey, passed: bool, metadata: dict[str, Any]
    ) -> AssetCheckResult | AssetCheckEvaluation:
        blocking = _DATASET_CHECKS[key.name][0] if keys.task_of(key.asset_key) else True
        return day_check(key, day, passed, metadata, blocking, one_day)

    stored_check = AssetCheckKey(keys.trajectories, _COUNTS)
    if stored_check in selected:
        yield evaluation(stored_check, *_stored_counts(files))
    filtered_check = AssetCheckKey(keys.filtered, _COUNTS)
    if filtered_check in selected:
        yield evaluation(filtered_check, *_filtered_counts(files))
    wanted = {(keys.task_of(key.asset_key), key.name) for key in selected}
    tasks = [task for task in TASKS if any((task, name) in wanted for name in _DATASET_CHECKS)]
    if not tasks:
        return
    try:
        summary = json.loads((files.datasets / SUMMARY_FILE_NAME).read_text(encoding="utf-8"))
        report = json.loads(files.filtered.report.read_text(encoding="utf-8"))
        inspected = inspect_dataset_files(
            [files.datasets / TASK_FILE_NAMES[task] for task in tasks],
            training_pipeline_privacy.scanner_secrets(),
            training_pipeline_privacy.pool_size(),
            files.datasets / INSPECTION_FILE_NAME,
            training_pipeline_privacy.personal_kinds(),
        )
    except OSError as err:
        for task in tasks:
            for name in _DATASET_CHECKS:
                if (task, name) in wanted:
                    yield evaluation(AssetCheckKey(keys.dataset(task), name), False, {"error": str(err)})
        return
    for task, ((validation, scan), recorded) in zip(tasks, inspected, strict=True):
        # how the file was read: as it was written (and hashed now, unchanged), or now
        how = "while exporting; the file's SHA-256 matches" if recorded else "now"
        metrics = summary["taskMetrics"][task]
        results = {
            "no_credentials": (
                scan.clean,
                {
                    "inspected": how,
                    "messages_scanned": scan.texts_scanned,
                    "findings": sum(scan.credentials.values()),
                    "findings_by_type": MetadataValue.json(dict(scan.credentials)),
                    "locations": MetadataValue.json(scan.locations),
                },
            ),
            "no_personal_data": (
                not scan.personal,
                {
                    "inspected": how,
                    "messages_scanned": scan.texts_scanned,
                    "kinds_looked_for": MetadataValue.json(
                        sorted(training_pipeline_privacy.personal_kinds())
                    ),
                    "findings": sum(scan.personal.values()),
                    "findings_by_kind": MetadataValue.json(dict(scan.personal)),
                    "locations": MetadataValue.json(scan.personal_locations),
                },
            ),
            "valid_jsonl": (
                not validation.errors,
                {
                    "inspected": how,
                    "lines": validation.lines,
                    "errors": MetadataValue.json(validation.errors[:20]),
                },
            ),
            _COUNTS: (
                validation.lines
                == summary["counts"][task]
                == metrics["exampleCount"]
                == metrics["sourceCallCount"]
                and summary["trajectoryCount"] == report["kept"],
                {
                    "lines": validation.lines,
                    "summary_count": summary["counts"][task],
                    "trajectories": summary["trajectoryCount"],
                    "kept_by_filter": report["kept"],
                },
            ),
        }
        for name in _DATASET_CHECKS:
            if (task, name) in wanted:
                yield evaluation(AssetCheckKey(keys.dataset(task), name), *results[name])


def _stored_counts(files: DayFiles) -> tuple[bool, dict[str, Any]]:
    try:
        manifest = IngestManifest.read(manifest_path(files.stored))
        rows = row_count(files.stored)
        with files.quarantine.open("rb") as handle:
            quarantined = sum(1 for _ in handle)
    except OSError as err:
        return False, {"error": str(err)}
    passed = (
        manifest.records_in == manifest.kept + manifest.quarantined
        and rows == manifest.kept
        and quarantined == manifest.quarantined
    )
    return passed, {"records_in": manifest.records_in, "parquet_rows": rows, "quarantine_lines": quarantined}


def _filtered_counts(files: DayFiles) -> tuple[bool, dict[str, Any]]:
    try:
        report = json.loads(files.filtered.report.read_text(encoding="utf-8"))
        upstream, rows = row_count(files.stored), row_count(files.filtered.store)
    except OSError as err:
        return False, {"error": str(err)}
    passed = (
        report["trajectoriesIn"] == upstream == report["kept"] + report["droppedPrivate"]
        and rows == report["kept"]
        and sum(report["redactionsByRule"].values()) == report["redactionCount"]
    )
    dropped = report["droppedPrivate"]
    return passed, {"upstream_rows": upstream, "filtered_rows": rows, "dropped_private": dropped}
