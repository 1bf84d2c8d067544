"""Per-run input of task jobs, set in the launchpad (or `task run --override`)."""

from __future__ import annotations

from typing import Any

from dagster import ConfigurableResource
from pydantic import Field


class TaskOverrides(ConfigurableResource):
    """`values` land in the run context's `metadata.user_overrides`; `step_params[step_id]` replace
    that step's fields for this run (and are recorded under `user_overrides.step_params`)."""

    values: dict[str, Any] = Field(default_factory=dict)
    step_params: dict[str, dict[str, Any]] = Field(default_factory=dict)
