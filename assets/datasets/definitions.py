"""The daily datasets domain: its assets, checks, job and schedule in one `Definitions`."""

from __future__ import annotations

from dataclasses import dataclass

from dagster import AssetChecksDefinition, AssetsDefinition, Definitions, PartitionsDefinition

from assets.datasets.automation import datasets_job, nightly_schedule
from assets.datasets.datasets import dataset_assets
from assets.datasets.trajectories import trajectory_assets
from assets.partitions import daily_partitions
from training_pipeline.settings import Settings


@dataclass(frozen=True)
class DailyGraph:
    """The daily assets on one partitions definition: what `materialize()` and the job take."""

    #: trajectories, filtered_trajectories and the five datasets (one multi-asset)
    assets: list[AssetsDefinition]
    checks: list[AssetChecksDefinition]
    #: the day's copy on shared storage, only where one is configured
    shared: AssetsDefinition


def daily_graph(partitions: PartitionsDefinition) -> DailyGraph:
    layers, layer_checks = trajectory_assets(partitions)
    datasets, dataset_checks, shared = dataset_assets(partitions)
    return DailyGraph([*layers, datasets], [*layer_checks, *dataset_checks], shared)


def datasets_definitions(settings: Settings) -> Definitions:
    graph = daily_graph(daily_partitions(settings))
    assets = [*graph.assets, *([graph.shared] if settings.shared_url else [])]
    job = datasets_job(assets)
    return Definitions(
        assets=assets,
        asset_checks=graph.checks,
        jobs=[job],
        schedules=[nightly_schedule(job, settings.nightly_cron)],
    )
