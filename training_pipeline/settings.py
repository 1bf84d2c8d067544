"""The deployment's settings: every `TRAINING_PIPELINE_*` variable, read from the environment once.

One typed model, loaded on first use and handed on, so a typo fails with the variable's name and no
module reads the environment on its own. Tests build their own with `load_settings(environ)`.
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
