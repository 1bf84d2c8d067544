"""Dagster assets and checks: thin wiring around the core in `training_pipeline`."""

from training_pipeline.assets.datasets import dataset_checks, shared_datasets, task_datasets
from training_pipeline.assets.training import optimized_prompt, training_run, tuned_model
from training_pipeline.assets.trajectories import (
    filtered_trajectories,
    filtered_trajectories_counts,
    trajectories,
    trajectories_counts,
)

#: The daily graph (one partition = one UTC day); `training_run` is partitioned by task instead.
DATASET_ASSETS = [trajectories, filtered_trajectories, task_datasets]
#: Partitioned by task: what `training_job` materialises.
TRAINING_ASSETS = [training_run, tuned_model, optimized_prompt]
ASSETS = [*DATASET_ASSETS, *TRAINING_ASSETS]
ASSET_CHECKS = [trajectories_counts, filtered_trajectories_counts, *dataset_checks]
#: Only where a shared storage is configured (TRAINING_PIPELINE_SHARED_URL): the day's copy there.
SHARED_ASSETS = [shared_datasets]

__all__ = ["ASSETS", "ASSET_CHECKS", "DATASET_ASSETS", "SHARED_ASSETS", "TRAINING_ASSETS"]
