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
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    Failure,
    MaterializeResult,
    MetadataValue,
    PartitionsDefinition,
    asset,
    asset_check,
    multi_asset,
)

from assets.datasets.trajectories import require_materialised
from assets.partitions import GROUP
from resources.privacy import PrivacySettings
from resources.storage import DataStore
from training_pipeline.datasets.export import export_store
from training_pipeline.datasets.tasks import SUMMARY_FILE_NAME, TASK_FILE_NAMES, TASKS, Task
from training_pipeline.datasets.validate import message_texts, validate_dataset_file
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


def _checks_for(task: Task, daily_partitions: PartitionsDefinition) -> list[AssetChecksDefinition]:
    @asset_check(
        asset=AssetKey(task),
        name="no_credentials",
        partitions_def=daily_partitions,
        blocking=True,
        description="Blocking: an independent detector (detect-secrets' plugins and the "
        "environment's secret values) finds no credential in any message.",
    )
    def no_credentials(
        context: AssetCheckExecutionContext, privacy: PrivacySettings, store: DataStore
    ) -> AssetCheckResult:
        path = _dataset_file(store, context.partition_key, task)
        scanner = privacy.scanner()
        report = scanner.scan(message_texts(path))
        return AssetCheckResult(
            passed=report.clean,
            severity=AssetCheckSeverity.ERROR,
            metadata={
                "messages_scanned": report.texts_scanned,
                "findings": sum(report.findings.values()),
                "findings_by_type": MetadataValue.json(dict(report.findings)),
                "locations": MetadataValue.json(report.locations),
            },
        )

    @asset_check(
        asset=AssetKey(task),
        name="valid_jsonl",
        partitions_def=daily_partitions,
        blocking=True,
        description='Every line is {"messages": [system, user, model]} with string contents.',
    )
    def valid_jsonl(context: AssetCheckExecutionContext, store: DataStore) -> AssetCheckResult:
        result = validate_dataset_file(_dataset_file(store, context.partition_key, task))
        return AssetCheckResult(
            passed=not result.errors,
            metadata={"lines": result.lines, "errors": MetadataValue.json(result.errors[:20])},
        )

    @asset_check(
        asset=AssetKey(task),
        name="counts_add_up",
        partitions_def=daily_partitions,
        description="Lines in the file = the summary's count; the summary's trajectories = "
        "those the privacy filter kept.",
    )
    def counts_add_up(context: AssetCheckExecutionContext, store: DataStore) -> AssetCheckResult:
        day = context.partition_key
        summary = json.loads((store.datasets(day) / SUMMARY_FILE_NAME).read_text(encoding="utf-8"))
        report = json.loads(store.privacy_report(day).read_text(encoding="utf-8"))
        with _dataset_file(store, day, task).open("rb") as handle:
            lines = sum(1 for _ in handle)
        metrics = summary["taskMetrics"][task]
        ok = (
            lines == summary["counts"][task] == metrics["exampleCount"] == metrics["sourceCallCount"]
            and summary["trajectoryCount"] == report["kept"]
        )
        return AssetCheckResult(
            passed=ok,
            metadata={
                "lines": lines,
                "summary_count": summary["counts"][task],
                "trajectories": summary["trajectoryCount"],
                "kept_by_filter": report["kept"],
            },
        )

    return [no_credentials, valid_jsonl, counts_add_up]


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
        writer = export_store(store.filtered(day), out_dir)
        summary = writer.last_summary or {}
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
                    "preview": MetadataValue.json(_preview(writer.previews[task], scanner)),
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

    checks = [check for task in TASKS for check in _checks_for(task, daily_partitions)]
    return task_datasets, checks, shared_datasets
