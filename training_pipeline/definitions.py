"""This repository's code location: `dagster-webserver -w workspace.yaml` (or
`-m training_pipeline.definitions`).

The process's settings are read here (once: `settings()` caches them); the graph is the one a user's
project gets from the Component (`training_pipeline.component`), with this location's executor and the
evaluation sensor running. A daemon the CLI starts for its own run (`training_pipeline.launch`, with
`RUNS_ONLY` set) loads it without sensors and automation: it only takes the queued run.
"""

from __future__ import annotations

from dagster import JobDefinition

from assets.definitions import build_definitions, without_automation
from training_pipeline.environment import runs_only
from training_pipeline.sandbox import warn_if_unconfined
from training_pipeline.settings import settings

warn_if_unconfined(settings())  # task code unconfined is the deployment's choice, said when it loads
defs = build_definitions(settings(), own_executor=True, sensors_running=True)
if runs_only():
    defs = without_automation(defs)


def resolve_job(name: str) -> JobDefinition:
    """A job of this code location by name: the reconstructable target of runs started outside the
    webserver (the CLI), so they run on the configured executor like any launched run."""
    return defs.resolve_job_def(name)


__all__ = ["defs", "resolve_job"]
