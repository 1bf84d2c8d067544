"""Partitions, the asset group and the run tags, defined once for every domain."""

from __future__ import annotations

from dagster import DailyPartitionsDefinition, StaticPartitionsDefinition

from training_pipeline.datasets.training_tasks import TASKS
from training_pipeline.settings import Settings
from training_pipeline.trajectories.earliest import first_day

#: One group for the whole graph: the UI opens a single group expanded, so a first look shows the
#: lineage from trajectories to training (several groups would open collapsed).
GROUP = "training_pipeline"

#: Training is partitioned by dataset task: a run's task is its partition key.
task_partitions = StaticPartitionsDefinition(list(TASKS))

#: The tag Dagster puts a run's partition key in (the task of a training run, the day of a daily run).
PARTITION_TAG = "dagster/partition"
#: The tag naming the task file a task job runs.
TASK_FILE_TAG = "training_pipeline/task"
#: How a run was started: `schedule`, `threshold`, `manual`, `backfill`.
SOURCE_TAG = "training_pipeline/source"


def daily_partitions(settings: Settings) -> DailyPartitionsDefinition:
    """Trajectories belong to the UTC day they started; the first day is the deployment's
    (`TRAINING_PIPELINE_START_DATE`), else the source's first (`first_day`)."""
    return DailyPartitionsDefinition(start_date=first_day(settings).isoformat(), timezone="UTC")
