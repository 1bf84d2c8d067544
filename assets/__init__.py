"""Dagster assets and checks: thin wiring around the core in `training_pipeline`."""

from training_pipeline.assets.datasets import dataset_checks, task_datasets
from training_pipeline.assets.trajectories import (
    filtered_trajectories,
    filtered_trajectories_counts,
    trajectories,
    trajectories_counts,
)

ASSETS = [trajectories, filtered_trajectories, task_datasets]
ASSET_CHECKS = [trajectories_counts, filtered_trajectories_counts, *dataset_checks]

__all__ = ["ASSETS", "ASSET_CHECKS"]
