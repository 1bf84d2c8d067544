"""The daily job, and the nightly automation that builds yesterday: declarative automation, as Dagster
has it. The layers carry `AutomationCondition.on_cron` (the latest day, once each cron tick has passed;
the three layers asked for together, so one run and one pass), the shared copy `eager` after them; one
automation sensor evaluates them, off until turned on."""

from __future__ import annotations

from typing import Any

from dagster import (
    AssetsDefinition,
    AutomationCondition,
    AutomationConditionSensorDefinition,
    DefaultSensorStatus,
    define_asset_job,
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


def nightly(cron: str) -> AutomationCondition:
    """Yesterday's day (UTC) once the cron tick (`TRAINING_PIPELINE_NIGHTLY_CRON`, UTC) has passed; a
    tick is handled once."""
    return AutomationCondition.on_cron(cron, "UTC")


def nightly_automation(
    assets: list[AssetsDefinition], keys: Keys = UNPREFIXED
) -> AutomationConditionSensorDefinition:
    """The sensor that evaluates the daily graph's conditions; its runs are tagged as scheduled."""
    return AutomationConditionSensorDefinition(
        keys.name("nightly_datasets_automation"),
        target=assets,
        run_tags={SOURCE_TAG: "schedule"},
        default_status=DefaultSensorStatus.STOPPED,
        description="Builds yesterday's day at TRAINING_PIPELINE_NIGHTLY_CRON (UTC), and copies it to shared "
        "storage where one is configured.",
    )
