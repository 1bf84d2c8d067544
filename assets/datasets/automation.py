"""The daily job and the nightly schedule that launches it for yesterday."""

from __future__ import annotations

from datetime import UTC, timedelta
from typing import Any

from dagster import (
    AssetsDefinition,
    DefaultScheduleStatus,
    RunRequest,
    ScheduleDefinition,
    ScheduleEvaluationContext,
    define_asset_job,
    schedule,
)

from assets.keys import UNPREFIXED, Keys
from assets.partitions import SOURCE_TAG

#: what `define_asset_job` returns (Dagster does not export the class's name)
UnresolvedAssetJobDefinition = Any


def datasets_job(assets: list[AssetsDefinition], keys: Keys = UNPREFIXED) -> UnresolvedAssetJobDefinition:
    """Days of the daily graph, checks included (and the shared copy where one is configured): one
    day, or a range of days in one run (the assets' `BackfillPolicy`)."""
    return define_asset_job(
        keys.name("datasets_job"),
        selection=assets,
        description="A day, or a range of days in one run: trajectories → filtered_trajectories → the five "
        "task datasets, with checks.",
    )


def yesterday(context: ScheduleEvaluationContext) -> RunRequest:
    """Yesterday's partition (UTC) of the dataset graph; the day is the run key, so a tick runs once."""
    day = (context.scheduled_execution_time.astimezone(UTC) - timedelta(days=1)).date().isoformat()
    return RunRequest(run_key=day, partition_key=day, tags={SOURCE_TAG: "schedule"})


def nightly_schedule(
    job: UnresolvedAssetJobDefinition, cron: str, keys: Keys = UNPREFIXED
) -> ScheduleDefinition:
    """`yesterday`, at `cron` (UTC; `TRAINING_PIPELINE_NIGHTLY_CRON`); off until turned on."""
    return schedule(
        name=keys.name("nightly_datasets_schedule"),
        job=job,
        cron_schedule=cron,
        execution_timezone="UTC",
        default_status=DefaultScheduleStatus.STOPPED,
    )(yesterday)
