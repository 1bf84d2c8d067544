"""`trace_datasets`: a day's OpenTelemetry traces' LLM calls as OpenAI-chat datasets, one file per route
(`chat`, `tool_use`, or the deployment's own, docs/traces.md), from the day's `filtered_trajectories`,
with blocking checks: the independent scanner finds no credential and no personal data in any string of
any line, and every line is a valid chat example. A day with no traces materialises an empty set."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
    multi_asset,
)

from assets.compat import PARTITIONED_CHECKS, day_check
from assets.keys import Keys
from resources.privacy import PrivacySettings
from resources.storage import DataStore
from training_pipeline.datasets.formats import DatasetFormat, write_format
from training_pipeline.datasets.trace_datasets import build_trace_datasets, inspect_trace_datasets

__all__ = ["trace_datasets"]

_CHECKS = {
    "no_credentials": "Blocking: the independent detector finds no credential in any string of any line "
    "(messages, tool arguments and results, tool definitions).",
    "no_personal_data": "Blocking: the personal-data finder, run again, finds none of the kinds the filter "
    "redacts in any string of any line.",
    "valid_jsonl": "Blocking: every line is an OpenAI chat example (known roles, string or null contents, "
    "well-formed tool calls and tool results, the assistant's answer last).",
}


def trace_datasets(
    partitions: PartitionsDefinition,
    keys: Keys,
    group: str,
    owners: list[str] | None = None,
    dataset_format: DatasetFormat = "elizaos",
) -> AssetsDefinition:
    """The day's trace datasets under `keys`, also written in `dataset_format` (`datasets.formats`)."""
    daily = {"partitions_def": partitions} if PARTITIONED_CHECKS else {}

    spec = AssetSpec(
        keys.trace_datasets,
        group_name=group,
        owners=owners,
        deps=[keys.filtered],
        kinds={"jsonl"},
        automation_condition=AutomationCondition.eager(),
        description="The day's traced LLM calls (any agent framework's OpenTelemetry spans) as OpenAI-chat "
        "datasets, one file per route, with trace_datasets_summary.json.",
    )

    # a multi-asset of one, so its checks can be run alone, as the daily layers' can (`can_subset`)
    @multi_asset(
        name=keys.name("trace_datasets"),
        specs=[spec],
        check_specs=[
            AssetCheckSpec(name, asset=keys.trace_datasets, blocking=True, description=text, **daily)
            for name, text in _CHECKS.items()
        ],
        partitions_def=partitions,
        can_subset=True,
        backfill_policy=BackfillPolicy.single_run(),
    )
    def _trace_datasets(
        context: AssetExecutionContext,
        training_pipeline_store: DataStore,
        training_pipeline_privacy: PrivacySettings,
    ) -> Iterator[MaterializeResult | AssetCheckResult | AssetCheckEvaluation]:
        scanner = training_pipeline_privacy.scanner()
        evaluations: list[AssetCheckResult | AssetCheckEvaluation] = []
        wanted = {key.name for key in context.selected_asset_check_keys}
        built = keys.trace_datasets in context.selected_asset_keys
        for day in context.partition_keys:
            folder = training_pipeline_store.trace_datasets(day)
            if built:
                filtered = training_pipeline_store.filtered(day)
                if not filtered.exists():
                    raise Failure(
                        f"filtered_trajectories for {day} is not materialised ({filtered} is missing)"
                    )
                summary = build_trace_datasets(filtered, folder)
                formatted = write_format(folder, dataset_format)
                counts = {name: d["examples"] for name, d in summary["datasets"].items()}
                context.log.info(
                    f"{day}: {summary['trajectoryCount']} traced trajectories: {counts or 'no calls'}"
                )
                context.add_asset_metadata(
                    {
                        "dagster/row_count": sum(counts.values()),
                        "dagster/uri": str(folder),
                        "datasets": MetadataValue.json(counts),
                        "trajectories": summary["trajectoryCount"],
                        "formatted": MetadataValue.json([str(p.relative_to(folder)) for p in formatted]),
                    },
                    partition_key=day,
                )
            if wanted:
                evaluations.extend(_checks(keys, day, folder, wanted, scanner, context.has_partition_key))
        if built:
            yield MaterializeResult(asset_key=keys.trace_datasets)
        yield from evaluations

    return _trace_datasets


def _checks(
    keys: Keys, day: str, folder: Path, wanted: set[str], scanner: Any, one_day: bool
) -> list[AssetCheckResult | AssetCheckEvaluation]:
    """The day's selected checks, read from the files on disk (whatever this run made of them); `one_day`:
    the run is of this day alone (`compat.day_check`)."""
    if not folder.is_dir():
        raise Failure(f"trace_datasets for {day} is not materialised ({folder} is missing)")
    inspection = inspect_trace_datasets(folder, scanner)
    verdicts = {
        "no_credentials": (not inspection.credentials, _found(inspection.credentials, inspection)),
        "no_personal_data": (not inspection.personal, _found(inspection.personal, inspection)),
        "valid_jsonl": (
            not inspection.problems,
            {"lines": inspection.lines, "problems": MetadataValue.json(inspection.problems[:20])},
        ),
    }
    return [
        day_check(AssetCheckKey(keys.trace_datasets, name), day, passed, metadata, True, one_day)
        for name, (passed, metadata) in verdicts.items()
        if name in wanted
    ]


def _found(found: Any, inspection: Any) -> dict[str, Any]:
    """Types and counts, and where: never a value."""
    return {
        "texts_scanned": inspection.texts,
        "found": MetadataValue.json(dict(found)),
        "where": MetadataValue.json(inspection.locations[:20] if found else []),
    }
