"""Partitions, defined once: trajectories belong to the UTC day they started."""

from __future__ import annotations

import os

from dagster import DailyPartitionsDefinition

#: First day with data; override with TRAINING_PIPELINE_START_DATE for older histories.
START_DATE = os.environ.get("TRAINING_PIPELINE_START_DATE", "2025-01-01")

daily_partitions = DailyPartitionsDefinition(start_date=START_DATE, timezone="UTC")
