"""The whole graph as one `Definitions`, for this repository's code location and for a user's project
(the Component, `training_pipeline.component`).

Each domain builds its own `Definitions` from the settings; this merges them with the resources every
domain shares. Every asset, check, job and sensor is named under `keys` (a user's prefix),
every resource key starts with `training_pipeline_`, and nothing is set on the user's Definitions that
is theirs to choose (the executor, an IO manager).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Literal

from dagster import Definitions, map_asset_specs

from assets.datasets.definitions import datasets_definitions
from assets.executors import executor_for
from assets.keys import UNPREFIXED, Keys
from assets.partitions import GROUP
from assets.tasks.definitions import tasks_definitions
from assets.training.definitions import training_definitions
from resources.defaults import shared_resources
from training_pipeline.settings import Settings

__all__ = ["DOMAINS", "Domain", "build_definitions", "without_automation"]

Domain = Literal["datasets", "training", "tasks"]
#: the graph's parts, each optional in a user's project: the daily datasets; training, the promotion
#: gate and evaluation (on the datasets); a job per task file
DOMAINS: tuple[Domain, ...] = ("datasets", "training", "tasks")


def build_definitions(
    settings: Settings,
    keys: Keys = UNPREFIXED,
    group: str = GROUP,
    include: Collection[Domain] = DOMAINS,
    *,
    own_executor: bool = False,
    sensors_running: bool = False,
    owners: list[str] | None = None,
) -> Definitions:
    """The parts in `include`, named under `keys` in asset group `group`. `own_executor`: set the
    settings' executor on the Definitions (this repository's code location does; a user's project keeps
    its own). `sensors_running`: the evaluation sensor starts running when the location loads (the
    threshold sensor and the nightly automation are always off until turned on)."""
    if "training" in include and "datasets" not in include:
        raise ValueError("training reads the datasets: include `datasets` with `training`")
    shared = shared_resources(settings)
    parts = []
    if "datasets" in include:
        parts.append(datasets_definitions(settings, keys, group, owners))
    if "training" in include:
        parts.append(
            training_definitions(
                settings,
                shared["training_pipeline_llm"],
                keys,
                group,
                evaluation_running=sensors_running,
                owners=owners,
            )
        )
    if "tasks" in include:
        parts.append(tasks_definitions(settings, keys))
    executor = executor_for(settings.executor, settings) if own_executor else None
    return Definitions.merge(*parts, Definitions(resources=shared, executor=executor))


def without_automation(defs: Definitions) -> Definitions:
    """`defs` with no sensor, schedule or automation condition: the same assets, checks, jobs,
    resources and executor, so a run launched on it is the same run, and a daemon that loads it takes
    queued runs and starts nothing of its own (`training_pipeline.launch`). Without conditions Dagster
    adds no default automation sensor either."""
    return Definitions(
        assets=map_asset_specs(
            lambda spec: spec.replace_attributes(automation_condition=None), defs.assets or []
        ),
        asset_checks=defs.asset_checks,
        jobs=defs.jobs,
        resources=defs.resources,
        executor=defs.executor,
        loggers=defs.loggers,
    )
