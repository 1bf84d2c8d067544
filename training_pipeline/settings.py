"""The deployment's settings: the `TRAINING_PIPELINE_*` variables that shape the code location, read
from the environment in one place.

One typed model, so a typo fails with the variable's name: `settings()` is the process's, read once
(partitions, schedules, sensors and executors are fixed when the code location loads); tests build
their own with `load_settings(environ)`. What each run's resources are made of (`resources/defaults.py`)
is read when the resources are built, from the same environment.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class SettingsError(ValueError):
    pass


class Settings(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    #: `bwrap` confines task code; `off` runs it as the pipeline (an explicit, logged choice)
    sandbox: Literal["bwrap", "off"] = "bwrap"
    #: records bigger than this many bytes are quarantined by position and size, never held whole
    max_record_bytes: int = Field(default=8 * 1024 * 1024, ge=1024)
    #: the first daily partition
    start_date: str = Field(default="2025-01-01", pattern=r"^\d{4}-\d{2}-\d{2}$")
    #: when the nightly schedule runs (UTC)
    nightly_cron: str = "0 2 * * *"
    #: how often the daemon evaluates the training threshold sensor
    sensor_interval_seconds: int = Field(default=60, ge=1)
    #: the executor of the asset jobs, and of task jobs (`async`, `in_process`, `multiprocess`, `celery`)
    executor: str = "in_process"
    task_executor: str = "async"
    #: a folder of the user's task files (each becomes a job), besides the bundled examples
    tasks_dir: str | None = None
    #: a `training_pipeline.toml` naming extra step implementations
    config: str | None = None


_PREFIX = "TRAINING_PIPELINE_"


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    environ = os.environ if environ is None else environ
    values = {
        name: environ[_PREFIX + name.upper()]
        for name in Settings.model_fields
        if environ.get(_PREFIX + name.upper())
    }
    try:
        return Settings(**values)
    except ValidationError as err:
        problems = "; ".join(
            f"{_PREFIX}{str(e['loc'][0]).upper()}: {e['msg']}" for e in err.errors(include_url=False)
        )
        raise SettingsError(problems) from None


@functools.cache
def settings() -> Settings:
    """The process's settings, read once."""
    return load_settings()
