"""The elizaOS trajectory shape, as the edge of the pipeline validates it: whether a record is a
trajectory (`validation_reason`), the day it belongs to, and its LLM calls.

Validation is a gate, not a transform: records that pass keep their original dict (every unknown field
and key order intact) and flow on as plain data; records that fail go to quarantine with the reason.
"""

import math
from collections.abc import Iterator
from datetime import UTC, date, datetime
from typing import Annotated, Any, NotRequired

from pydantic import AfterValidator, ConfigDict, Field, TypeAdapter, ValidationError, with_config
from typing_extensions import TypedDict  # pydantic needs it before Python 3.12

#: Latest start time a daily partition can hold (9999-12-31), in milliseconds.
_MAX_START_MS = 253_402_300_799_999


def start_time_in_range(value: float) -> float:
    if not math.isfinite(value) or not 0 <= value <= _MAX_START_MS:
        raise ValueError("must be epoch milliseconds between 1970 and 9999")
    return value


# The shapes are typed dicts, keyed as the wire spells them: validating one builds plain dicts, where a
# model would build an instance per trajectory, step and call. Unknown fields
# are welcome and ignored: the record flows on as its own dict, so nothing of them is copied.
_WIRE = ConfigDict(extra="ignore", strict=True)


@with_config(_WIRE)
class LlmCall(TypedDict):
    callId: NotRequired[str | None]
    timestamp: NotRequired[float | None]
    model: NotRequired[str | None]
    systemPrompt: NotRequired[str | None]
    userPrompt: NotRequired[str | None]
    response: NotRequired[str | None]
    temperature: NotRequired[float | None]
    maxTokens: NotRequired[int | None]
    purpose: NotRequired[str | None]
    actionType: NotRequired[str | None]
    stepType: NotRequired[str | None]
    tags: NotRequired[list[str] | None]
    metadata: NotRequired[dict[str, Any] | None]
    latencyMs: NotRequired[float | None]
    promptTokens: NotRequired[int | None]
    completionTokens: NotRequired[int | None]


@with_config(_WIRE)
class TrajectoryStep(TypedDict):
    stepId: NotRequired[str | None]
    timestamp: NotRequired[float | None]
    kind: NotRequired[str | None]
    llmCalls: NotRequired[list[LlmCall] | None]
    providerAccesses: NotRequired[list[dict[str, Any]] | None]


@with_config(_WIRE)
class Trajectory(TypedDict):
    trajectoryId: Annotated[str, Field(min_length=1)]
    agentId: NotRequired[str | None]
    startTime: Annotated[float, AfterValidator(start_time_in_range)]
    endTime: NotRequired[float | None]
    durationMs: NotRequired[float | None]
    scenarioId: NotRequired[str | None]
    batchId: NotRequired[str | None]
    steps: NotRequired[list[TrajectoryStep] | None]
    metrics: NotRequired[dict[str, Any] | None]
    metadata: NotRequired[dict[str, Any] | None]


_TRAJECTORY = TypeAdapter(Trajectory)


def validation_reason(record: Any) -> str | None:
    """None when `record` is a valid trajectory, else a one-line reason naming the field."""
    if not isinstance(record, dict):
        return f"not a JSON object (got {type(record).__name__})"
    try:
        _TRAJECTORY.validate_python(record)
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


#: `metadata.source` of a trajectory read from OpenTelemetry traces (`traces.assemble`)
TRACE_SOURCE = "otlp"


def is_trace(trajectory: dict[str, Any]) -> bool:
    """Whether a trajectory was read from traces, not exported by elizaOS: its LLM calls hold whole
    conversations (`messages`, `output`, `tools`), not elizaOS's prompt fields."""
    metadata = trajectory.get("metadata")
    return isinstance(metadata, dict) and metadata.get("source") == TRACE_SOURCE
