"""Partitions and the asset group, defined once: trajectories belong to the UTC day they started."""

from __future__ import annotations

from dagster import DailyPartitionsDefinition

from training_pipeline.settings import settings

#: First day with data; override with TRAINING_PIPELINE_START_DATE for older histories.
START_DATE = settings().start_date

daily_partitions = DailyPartitionsDefinition(start_date=START_DATE, timezone="UTC")

#: One group for the whole graph: the UI opens a single group expanded, so a first look shows the
#: lineage from trajectories to training (several groups would open collapsed).
GROUP = "training_pipeline"
