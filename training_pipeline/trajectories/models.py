"""The elizaOS trajectory shape, as the edge of the pipeline validates it.

Validation is a gate, not a transform: records that pass keep their original dict (every unknown field
and key order intact) and flow on as plain data; records that fail go to quarantine with the reason.
"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

#: Latest start time a daily partition can hold (9999-12-31), in milliseconds.
_MAX_START_MS = 253_402_300_799_999


class _Wire(BaseModel):
    # unknown fields are welcome; `ignore`, not `allow`, as the model is thrown away after validating
    # (the record flows on as its own dict) and copying every extra field cost a sixth of the time
    model_config = ConfigDict(extra="ignore", strict=True, alias_generator=to_camel)


class LlmCall(_Wire):
    call_id: str | None = None
    timestamp: float | None = None
    model: str | None = None
    system_prompt: str | None = None
    user_prompt: str | None = None
    response: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    purpose: str | None = None
    action_type: str | None = None
    step_type: str | None = None
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None
    latency_ms: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class TrajectoryStep(_Wire):
    step_id: str | None = None
    timestamp: float | None = None
    kind: str | None = None
    llm_calls: list[LlmCall] | None = None
    provider_accesses: list[dict[str, Any]] | None = None


class Trajectory(_Wire):
    trajectory_id: str = Field(min_length=1)
    agent_id: str | None = None
    start_time: float
    end_time: float | None = None
    duration_ms: float | None = None
    scenario_id: str | None = None
    batch_id: str | None = None
    steps: list[TrajectoryStep] | None = None
    metrics: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None

    @field_validator("start_time")
    @classmethod
    def _start_time_in_range(cls, value: float) -> float:
        if not math.isfinite(value) or not 0 <= value <= _MAX_START_MS:
            raise ValueError("must be epoch milliseconds between 1970 and 9999")
        return value


def validation_reason(record: Any) -> str | None:
    """None when `record` is a valid trajectory, else a one-line reason naming the field."""
    if not isinstance(record, dict):
        return f"not a JSON object (got {type(record).__name__})"
    try:
        Trajectory.model_validate(record)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "record"
        more = f" (+{err.error_count() - 1} more)" if err.error_count() > 1 else ""
        return f"invalid field {where}: {first['msg']}{more}"
    return None


def start_day(start_time_ms: float) -> date:
    """The UTC day a trajectory belongs to: daily partitions are keyed by it."""
    return datetime.fromtimestamp(start_time_ms / 1000, tz=UTC).date()


def iter_llm_calls(trajectory: dict[str, Any]):
    """Every LLM call of a validated trajectory, in step order."""
    for step in trajectory.get("steps") or ():
        yield from step.get("llmCalls") or ()
