"""The tasks domain: a job per task file (the bundled examples, then `TRAINING_PIPELINE_TASKS_DIR`)
and the per-run overrides resource, in one `Definitions`."""

from __future__ import annotations

from dagster import Definitions

from assets.keys import UNPREFIXED, Keys
from assets.tasks.jobs import task_jobs
from resources.defaults import task_resources
from training_pipeline.settings import Settings


def tasks_definitions(settings: Settings, keys: Keys = UNPREFIXED) -> Definitions:
    return Definitions(jobs=task_jobs(settings, keys=keys), resources=task_resources())
