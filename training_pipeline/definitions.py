"""The code location: `dagster dev -w workspace.yaml` (or `-m training_pipeline.definitions`).

The process's settings are read here (once: `settings()` caches them), and each domain builds its own
`Definitions` from them; this module only merges them with the resources every domain shares.
"""

from __future__ import annotations

from dagster import Definitions, JobDefinition

from assets.datasets.definitions import datasets_definitions
from assets.executors import executor_for
from assets.tasks.definitions import tasks_definitions
from assets.training.definitions import training_definitions
from resources.defaults import shared_resources
from training_pipeline.sandbox import warn_if_unconfined
from training_pipeline.settings import Settings, settings


def build_definitions(settings: Settings) -> Definitions:
    shared = shared_resources(settings)
    return Definitions.merge(
        datasets_definitions(settings),
        training_definitions(settings, shared["llm"]),
        tasks_definitions(settings),
        Definitions(
            resources=shared,
            # in_process by default (5x faster than multiprocess on 2 cores for this graph's short
            # steps); `celery` in the distributed deployment (deploy/). Task jobs bring their own.
            executor=executor_for(settings.executor, settings),
        ),
    )


warn_if_unconfined(settings())  # task code unconfined is the deployment's choice, said when it loads
defs = build_definitions(settings())


def resolve_job(name: str) -> JobDefinition:
    """A job of this code location by name: the reconstructable target of runs started outside the
    webserver (the CLI), so they run on the configured executor like any launched run."""
    return defs.resolve_job_def(name)


__all__ = ["build_definitions", "defs", "resolve_job"]
