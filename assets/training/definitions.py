"""The training domain: the task-partitioned assets (a run, its tuned model or optimised prompt, the
promoted prompt's evaluation), the promotion gate, `training_job` and `evaluation_job` with the
sensors that launch them, and the policy and backend resources, in one `Definitions`."""

from __future__ import annotations

from dagster import Definitions

from assets.code_references import with_code_references
from assets.keys import UNPREFIXED, Keys
from assets.partitions import GROUP, training_partitions
from assets.training.assets import training_assets
from assets.training.automation import evaluation_job, evaluation_sensor, threshold_sensor, training_job
from assets.training.evaluation import prompt_evaluation_asset
from resources.defaults import training_resources
from resources.llm import LLMResource
from training_pipeline.settings import Settings


def training_definitions(
    settings: Settings,
    llm: LLMResource,
    keys: Keys = UNPREFIXED,
    group: str = GROUP,
    evaluation_running: bool = True,
    owners: list[str] | None = None,
) -> Definitions:
    partitions = training_partitions(settings.trace_routes)
    training = training_assets(keys, group, owners, partitions)
    evaluation = prompt_evaluation_asset(keys, group, owners, partitions)
    train, evaluate = training_job(keys, training), evaluation_job(keys, evaluation)
    interval = settings.sensor_interval_seconds
    return Definitions(
        assets=with_code_references([*training.assets, evaluation]),
        asset_checks=[training.promotion_gate],
        jobs=[train, evaluate],
        sensors=[
            threshold_sensor(keys, train, interval, partitions.get_partition_keys()),
            evaluation_sensor(keys, evaluate, interval, running=evaluation_running),
        ],
        resources=training_resources(settings, llm),
    )
