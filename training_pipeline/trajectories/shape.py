"""A validated trajectory in plain Python: whether a record is one (`validation_reason`), the day it
belongs to, and its LLM calls.

The shape itself is pydantic's (`models.py`, the edge's typed dicts); here it runs on pydantic-core
alone, from the shape's core schema. A pool's workers get that schema from their initializer
(`use_schema`), so neither they nor their fork server import pydantic's Python package and build the
shape again: 40% of the instructions of the server's start, which a small day waits for."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, date, datetime
from typing import Any

from pydantic_core import SchemaValidator, ValidationError

#: Latest start time a daily partition can hold (9999-12-31), in milliseconds.
_MAX_START_MS = 253_402_300_799_999

_validator: SchemaValidator | None = None


def start_time_in_range(value: float) -> float:
    """The shape's check of `startTime` (here, so that the core schema refers to no pydantic module)."""
    if not math.isfinite(value) or not 0 <= value <= _MAX_START_MS:
        raise ValueError("must be epoch milliseconds between 1970 and 9999")
    return value


def use_schema(schema: Any) -> None:
    """Validate with the trajectory's core schema (`models.TRAJECTORY_SCHEMA`) as given: a pool's
    initializer hands it to each worker."""
    global _validator
    _validator = SchemaValidator(schema)


def validation_reason(record: Any) -> str | None:
    """None when `record` is a valid trajectory, else a one-line reason naming the field."""
    if not isinstance(record, dict):
        return f"not a JSON object (got {type(record).__name__})"
    validator = _validator
    if validator is None:  # not a pool's worker: the shape made here, once
        from training_pipeline.trajectories.models import TRAJECTORY_SCHEMA

        use_schema(TRAJECTORY_SCHEMA)
        validator = _validator
        assert validator is not None
    try:
        validator.validate_python(record)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "record"
        more = f" (+{err.error_count() - 1} more)" if err.error_count() > 1 else ""
        return f"invalid field {where}: {first['msg']}{more}"
    return None


def start_day(start_time_ms: float) -> date:
    """The UTC day a trajectory belongs to: daily partitions are keyed by it."""
    return datetime.fromtimestamp(start_time_ms / 1000, tz=UTC).date()


def iter_llm_calls(trajectory: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every LLM call of a validated trajectory, in step order."""
    for step in trajectory.get("steps") or ():
        yield from step.get("llmCalls") or ()
