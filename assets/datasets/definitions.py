"""The daily datasets domain: its assets, checks, job and automation in one `Definitions`."""

from __future__ import annotations

from dagster import AssetsDefinition, Definitions

from assets.code_references import with_code_references
from assets.datasets.automation import datasets_job, nightly, nightly_automation
from assets.datasets.daily import daily_layers
from assets.datasets.shared import shared_datasets
from assets.datasets.traces import trace_datasets
from assets.keys import UNPREFIXED, Keys
from assets.partitions import GROUP, daily_partitions
from training_pipeline.settings import Settings


def daily_graph(
    settings: Settings, keys: Keys = UNPREFIXED, group: str = GROUP, owners: list[str] | None = None
) -> list[AssetsDefinition]:
    """The day's layers (one multi-asset, its checks in it), the day's trace datasets, and the day's
    copy on shared storage where one is configured: what `materialize()` and the job take."""
    partitions = daily_partitions(settings)
    layers = daily_layers(
        partitions, keys, group, owners, nightly(settings.nightly_cron), settings.dataset_format
    )
    traces = trace_datasets(partitions, keys, group, owners, settings.dataset_format)
    shared = [shared_datasets(partitions, keys, group, owners)] if settings.shared_url else []
    return [layers, traces, *shared]


def datasets_definitions(
    settings: Settings, keys: Keys = UNPREFIXED, group: str = GROUP, owners: list[str] | None = None
) -> Definitions:
    assets = daily_graph(settings, keys, group, owners)
    job = datasets_job(assets, keys)
    return Definitions(
        assets=with_code_references(assets),  # the UI links each asset to its code
        jobs=[job],
        sensors=[nightly_automation(assets, keys)],
    )
