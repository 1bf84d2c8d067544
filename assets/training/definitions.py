"""The training domain: the task-partitioned assets, `training_job`, the threshold sensor, and the
policy and backend resources, in one `Definitions`."""

from __future__ import annotations

from dagster import Definitions

from assets.training.assets import optimized_prompt, training_run, tuned_model
from assets.training.automation import threshold_sensor, training_job
from resources.defaults import training_resources
from resources.llm import LLMResource
from training_pipeline.settings import Settings


def training_definitions(settings: Settings, llm: LLMResource) -> Definitions:
    return Definitions(
        assets=[training_run, tuned_model, optimized_prompt],
        jobs=[training_job],
        sensors=[threshold_sensor(settings.sensor_interval_seconds)],
        resources=training_resources(settings, llm),
    )
