"""The Dagster code location: `dagster dev -w workspace.yaml` (or `-m training_pipeline.definitions`)."""

from __future__ import annotations

from dagster import Definitions, JobDefinition

from training_pipeline.assets import ASSET_CHECKS, ASSETS, SHARED_ASSETS
from training_pipeline.assets.automation import (
    datasets_job,
    nightly_datasets_schedule,
    training_threshold_sensor,
)
from training_pipeline.assets.training import training_job
from training_pipeline.jobs.executors import executor_for
from training_pipeline.jobs.tasks import task_jobs
from training_pipeline.resources.defaults import default_resources
from training_pipeline.sandbox import warn_if_unconfined
from training_pipeline.settings import settings

warn_if_unconfined()  # task code unconfined is the deployment's choice, said out loud when it loads
resources = default_resources()
defs = Definitions(
    assets=[*ASSETS, *(SHARED_ASSETS if resources["store"].shared_url else [])],
    asset_checks=ASSET_CHECKS,
    # one job per task file: the bundled examples, then $TRAINING_PIPELINE_TASKS_DIR
    jobs=[datasets_job, training_job, *task_jobs()],
    schedules=[nightly_datasets_schedule],
    sensors=[training_threshold_sensor],
    resources=resources,
    # in_process by default (5x faster than multiprocess on 2 cores for this graph's short steps);
    # `celery` in the distributed deployment (deploy/). Task jobs bring their own (async).
    executor=executor_for(settings().executor),
)


def resolve_job(name: str) -> JobDefinition:
    """A job of this code location by name: the reconstructable target of runs started outside the
    webserver (the CLI), so they run on the configured executor like any launched run."""
    return defs.resolve_job_def(name)


__all__ = ["datasets_job", "defs", "resolve_job", "training_job"]
