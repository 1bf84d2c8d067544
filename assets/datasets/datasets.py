"""The five per-task datasets (elizaOS's JSONL format), built in one pass, and their checks.

The credential re-scan is blocking: a dataset in which the independent detector finds a secret fails its
check, and nothing downstream of it runs in that run.
"""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    Failure,
    MaterializeResult,
    MetadataValue,
    PartitionsDefinition,
    asset,
    multi_asset,
    multi_asset_check,
)

from assets.datasets.trajectories import require_materialised
from assets.partitions import GROUP
from resources.privacy import PrivacySettings
from resources.storage import DataStore
from training_pipeline.datasets.daily import adopt_datasets, export_store
from training_pipeline.datasets.tasks import SUMMARY_FILE_NAME, TASK_FILE_NAMES, TASKS, Task
from training_pipeline.datasets.validate import INSPECTION_FILE_NAME, inspect_dataset_files
from training_pipeline.privacy.scan import SecretScanner

_PREVIEW_CHARS = 240
_DESCRIPTIONS: dict[Task, str] = {
    "should_respond": "Should the agent answer? Context-routing fields stripped from prompt and answer.",
    "context_routing": "Calls whose answer routes the conversation (primaryContext, secondaryContexts...).",
    "action_planner": "Planner calls: which actions to take (`<actions>` XML, planner hints).",
    "response": "The agent's replies.",
    "media_description": "Descriptions of images, audio and video.",
}


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


def _dataset_file(store: DataStore, day: str, task: Task) -> Path:
    return store.datasets(day) / TASK_FILE_NAMES[task]


_CHECKS = {
    "no_credentials": (
        True,
        "Blocking: an independent detector (detect-secrets' plugins and the environment's secret values) "
        "finds no credential in any message.",
    ),
    "valid_jsonl": (True, 'Every line is {"messages": [system, user, model]} with string contents.'),
    "counts_add_up": (
        False,
        "Lines in the file = the summary's count; the summary's trajectories = those the privacy "
        "filter kept.",
    ),
}


def _dataset_checks(daily_partitions: PartitionsDefinition) -> AssetChecksDefinition:
    """The three checks of each dataset as one step: each file is read once for all three, the files
    side by side on the bounded pool (the re-scan of every message is most of a day's checks)."""

    @multi_asset_check(
        name="dataset_checks",
        specs=[
            AssetCheckSpec(
                name,
                asset=AssetKey(task),
                blocking=blocking,
                description=description,
                partitions_def=daily_partitions,
            )
            for task in TASKS
            for name, (blocking, description) in _CHECKS.items()
        ],
        can_subset=True,
    )
    def dataset_checks(
        context: AssetCheckExecutionContext, privacy: PrivacySettings, store: DataStore
    ) -> Iterator[AssetCheckResult]:
        day = context.partition_key
        selected = {(key.asset_key.to_user_string(), key.name) for key in context.selected_asset_check_keys}
        summary = json.loads((store.datasets(day) / SUMMARY_FILE_NAME).read_text(encoding="utf-8"))
        report = json.loads(store.privacy_report(day).read_text(encoding="utf-8"))
        tasks = [task for task in TASKS if any((task, name) in selected for name in _CHECKS)]
        inspected = inspect_dataset_files(
            [_dataset_file(store, day, task) for task in tasks],
            privacy.scanner_secrets(),
            privacy.pool_size(),
            store.datasets(day) / INSPECTION_FILE_NAME,
        )
        for task, ((validation, scan), recorded) in zip(tasks, inspected, strict=True):
            # how the file was read: as it was written (and hashed now, unchanged), or now
            how = "while exporting; the file's SHA-256 matches" if recorded else "now"
            wanted = {name for name in _CHECKS if (task, name) in selected}
            metrics = summary["taskMetrics"][task]
            results = {
                "no_credentials": AssetCheckResult(
                    asset_key=AssetKey(task),
                    check_name="no_credentials",
                    passed=scan.clean,
                    severity=AssetCheckSeverity.ERROR,
                    metadata={
                        "inspected": how,
                        "messages_scanned": scan.texts_scanned,
                        "findings": sum(scan.findings.values()),
                        "findings_by_type": MetadataValue.json(dict(scan.findings)),
                        "locations": MetadataValue.json(scan.locations),
                    },
                ),
                "valid_jsonl": AssetCheckResult(
                    asset_key=AssetKey(task),
                    check_name="valid_jsonl",
                    passed=not validation.errors,
                    metadata={
                        "inspected": how,
                        "lines": validation.lines,
                        "errors": MetadataValue.json(validation.errors[:20]),
                    },
                ),
                "counts_add_up": AssetCheckResult(
                    asset_key=AssetKey(task),
                    check_name="counts_add_up",
                    passed=validation.lines
                    == summary["counts"][task]
                    == metrics["exampleCount"]
                    == metrics["sourceCallCount"]
                    and summary["trajectoryCount"] == report["kept"],
                    metadata={
                        "lines": validation.lines,
                        "summary_count": summary["counts"][task],
                        "trajectories": summary["trajectoryCount"],
                        "kept_by_filter": report["kept"],
                    },
                ),
            }
            for name in _CHECKS:
                if name in wanted:
                    yield results[name]

    return dataset_checks


def dataset_assets(
    daily_partitions: PartitionsDefinition,
) -> tuple[AssetsDefinition, list[AssetChecksDefinition], AssetsDefinition]:
    """The five datasets (one multi-asset) with their checks, and the day's copy on shared storage."""

    @multi_asset(
        specs=[
            AssetSpec(
                task,
                deps=["filtered_trajectories"],
                group_name=GROUP,
                kinds={"jsonl"},
                description=_DESCRIPTIONS[task],
            )
            for task in TASKS
        ],
        partitions_def=daily_partitions,
        can_subset=False,
    )
    def task_datasets(
        context: AssetExecutionContext, privacy: PrivacySettings, store: DataStore
    ) -> Iterator[MaterializeResult]:
        day = context.partition_key
        require_materialised(store.filtered(day), "filtered_trajectories", day)
        out_dir = store.datasets(day)
        # the datasets the ingest's pass exported, if the filtered day is still the one they came from
        staged = adopt_datasets(out_dir, store.filtered(day))
        if staged is not None:
            summary, previews = staged.summary, staged.previews
        else:
            writer = export_store(store.filtered(day), out_dir)
            summary, previews = writer.last_summary or {}, writer.previews
        context.log.info(f"{day}: {summary['llmCallCount']} LLM calls → {json.dumps(summary['counts'])}")
        scanner = privacy.scanner()
        for task in TASKS:
            metrics = summary["taskMetrics"][task]
            yield MaterializeResult(
                asset_key=AssetKey(task),
                metadata={
                    "examples": metrics["exampleCount"],
                    "source_calls": metrics["sourceCallCount"],
                    "source_trajectories": metrics["sourceTrajectoryCount"],
                    "trajectories": summary["trajectoryCount"],
                    "llm_calls": summary["llmCallCount"],
                    "preview": MetadataValue.json(_preview(previews[task], scanner)),
                    "exported_while_ingesting": staged is not None,
                    "path": MetadataValue.path(str(out_dir / TASK_FILE_NAMES[task])),
                    "summary_path": MetadataValue.path(str(out_dir / SUMMARY_FILE_NAME)),
                },
            )

    @asset(
        partitions_def=daily_partitions,
        group_name=GROUP,
        deps=[AssetKey(task) for task in TASKS],
        kinds={"jsonl"},
        description="The day's five datasets (with their trajectory-id sidecars) and summary, copied to the "
        "shared storage (TRAINING_PIPELINE_SHARED_URL) once the datasets' blocking checks have passed; "
        "the summary goes last, so a reader that finds it finds the whole day.",
    )
    def shared_datasets(context: AssetExecutionContext, store: DataStore) -> MaterializeResult:
        shared = store.shared()
        if shared is None:
            raise Failure("the store has no shared_url: set TRAINING_PIPELINE_SHARED_URL to an fsspec URL")
        day = context.partition_key
        urls = shared.put_folder(store.datasets(day), "datasets", day, last=SUMMARY_FILE_NAME)
        location = shared.location("datasets", day)
        context.log.info(f"{day}: {len(urls)} files published to {location}")
        return MaterializeResult(metadata={"url": MetadataValue.url(location), "files": len(urls)})

    return task_datasets, [_dataset_checks(daily_partitions)], shared_datasets
