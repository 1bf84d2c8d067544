"""The training domain: the task-partitioned assets (a run, its tuned model or optimised prompt, the
promoted prompt's evaluation), the promotion gate, `training_job` and `evaluation_job` with the
sensors that launch them, and the policy and backend resources, in one `Definitions`."""

from __future__ import annotations

from dagster import Definitions

from assets.training.assets import optimized_prompt, promotion_gate, training_run, tuned_model
from assets.training.automation import evaluation_job, evaluation_sensor, threshold_sensor, training_job
from assets.training.evaluation import prompt_evaluation
from resources.defaults import training_resources
from resources.llm import LLMResource
from training_pipeline.settings import Settings


def training_definitions(settings: Settings, llm: LLMResource) -> Definitions:
    return Definitions(
        assets=[training_run, tuned_model, optimized_prompt, prompt_evaluation],
        asset_checks=[promotion_gate],
        jobs=[training_job, evaluation_job],
        sensors=[
            threshold_sensor(settings.sensor_interval_seconds),
            evaluation_sensor(settings.sensor_interval_seconds),
        ],
        resources=training_resources(settings, llm),
    )
