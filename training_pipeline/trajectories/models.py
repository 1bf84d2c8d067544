"""The elizaOS trajectory shape, as the edge of the pipeline validates it.

Validation is a gate, not a transform: records that pass keep their original dict (every unknown field
and key order intact) and flow on as plain data; records that fail go to quarantine with the reason.
"""

from typing import Annotated, Any, NotRequired

from pydantic import AfterValidator, ConfigDict, Field, TypeAdapter, with_config
from typing_extensions import TypedDict  # pydantic needs it before Python 3.12

from training_pipeline.trajectories.shape import start_time_in_range

# The shapes are typed dicts, keyed as the wire spells them: validating one builds plain dicts, where a
# model built an instance per trajectory, step and call (40% of the validation's time). Unknown fields
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


def _without_classes(schema: Any) -> Any:
    """The core schema without the typed dicts' own classes (a typed-dict schema's `cls`), which name
    this module: a worker that unpickled them would import pydantic after all. Validation does not use
    them (the errors are the same: `test_the_portable_schema_validates_as_pydantic_does`)."""
    if isinstance(schema, dict):
        typed_dict = schema.get("type") == "typed-dict"
        return {
            key: _without_classes(value) for key, value in schema.items() if not (typed_dict and key == "cls")
        }
    if isinstance(schema, list):
        return [_without_classes(item) for item in schema]
    return schema


#: what `shape.validation_reason` runs, with pydantic-core alone
TRAJECTORY_SCHEMA = _without_classes(TypeAdapter(Trajectory).core_schema)
