"""Partitions, defined once: trajectories belong to the UTC day they started."""

from __future__ import annotations

from dagster import DailyPartitionsDefinition

from training_pipeline.settings import settings

#: First day with data; override with TRAINING_PIPELINE_START_DATE for older histories.
START_DATE = settings().start_date

daily_partitions = DailyPartitionsDefinition(start_date=START_DATE, timezone="UTC")
