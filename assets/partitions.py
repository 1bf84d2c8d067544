"""Partitions, the asset group and the run tags, defined once for every domain."""

from __future__ import annotations

from dagster import DailyPartitionsDefinition, StaticPartitionsDefinition

from training_pipeline.datasets.training_tasks import TASKS
from training_pipeline.settings import Settings
from training_pipeline.traces.routes import TraceRouting
from training_pipeline.trajectories.earliest import first_day

#: One group for the whole graph: the UI opens a single group expanded, so a first look shows the
#: lineage from trajectories to training (several groups would open collapsed).
GROUP = "training_pipeline"


def training_partitions(trace_routes: str = "") -> StaticPartitionsDefinition:
    """Training is partitioned by what it trains (a run's partition key is its dataset): elizaOS's five
    tasks, then the trace datasets the deployment's routes can fill (`chat`, `tool_use`, then each
    route's, `TRAINING_PIPELINE_TRACE_ROUTES`)."""
    routing = TraceRouting.parse(trace_routes)
    return StaticPartitionsDefinition([*TASKS, *(name for name in routing.datasets if name not in TASKS)])


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
