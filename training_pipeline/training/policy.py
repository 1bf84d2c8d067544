"""The training policy: when a task has enough new examples to train, and on which backend.

Same fields and normalisation as elizaOS's training config: anything invalid falls back to the default,
unknown backends are dropped, duplicates removed, thresholds floored to whole examples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from training_pipeline.datasets.training_tasks import TASKS, Task

BACKENDS: tuple[str, ...] = ("vertex", "atropos", "tinker", "native", "openai")
#: the backends that train a model's weights, so can train a trace dataset (whole conversations with
#: tools); `native` optimises the prompt of one of elizaOS's decision tasks
WEIGHTS_BACKENDS: tuple[str, ...] = tuple(b for b in BACKENDS if b != "native")
DEFAULT_THRESHOLD = 100
DEFAULT_COOLDOWN_HOURS = 12.0


def _positive_int(value: Any) -> int | None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        return None
    return math.floor(value)  # elizaOS floors after the > 0 test, so 0.5 becomes 0


def _non_negative(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return None
    return float(value)


def _backend(value: Any) -> str | None:
    return value if isinstance(value, str) and value in BACKENDS else None


class TaskOverride(BaseModel):
    model_config = ConfigDict(extra="ignore")
    threshold: int | None = None
    cooldown_hours: float | None = None
    backend: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, raw: Any) -> dict[str, Any]:
        if not isinstance(raw, dict):
            return {}
        cooldown = raw.get("cooldown_hours", raw.get("cooldownHours"))
        return {
            "threshold": _positive_int(raw.get("threshold")),
            "cooldown_hours": _non_negative(cooldown),
            "backend": _backend(raw.get("backend")),
        }

    def is_empty(self) -> bool:
        return self.threshold is None and self.cooldown_hours is None and self.backend is None


class TrainingPolicy(BaseModel):
    """Invalid values never raise: each falls back to its default, as elizaOS's loader does."""

    model_config = ConfigDict(extra="ignore")
    auto_train: bool = True
    trigger_threshold: int = DEFAULT_THRESHOLD
    trigger_cooldown_hours: float = DEFAULT_COOLDOWN_HOURS
    backends: list[str] = Field(default_factory=lambda: ["native"])
    per_task_overrides: dict[str, TaskOverride] = Field(default_factory=dict)
    #: ours, not elizaOS's: overrides for trace datasets (`chat`, `tool_use`, a route's), by name
    dataset_overrides: dict[str, TaskOverride] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _accept_camel_case(cls, raw: Any) -> Any:
        if not isinstance(raw, dict):
            return {}
        names = {
            "autoTrain": "auto_train",
            "triggerThreshold": "trigger_threshold",
            "triggerCooldownHours": "trigger_cooldown_hours",
            "perTaskOverrides": "per_task_overrides",
            "datasetOverrides": "dataset_overrides",
        }
        return {names.get(key, key): value for key, value in raw.items()}

    @field_validator("auto_train", mode="wrap")
    @classmethod
    def _bool_or_default(cls, value: Any, handler: Any) -> bool:
        return value if isinstance(value, bool) else True

    @field_validator("trigger_threshold", mode="wrap")
    @classmethod
    def _threshold_or_default(cls, value: Any, handler: Any) -> int:
        threshold = _positive_int(value)
        return DEFAULT_THRESHOLD if threshold is None else threshold

    @field_validator("trigger_cooldown_hours", mode="wrap")
    @classmethod
    def _cooldown_or_default(cls, value: Any, handler: Any) -> float:
        cooldown = _non_negative(value)
        return DEFAULT_COOLDOWN_HOURS if cooldown is None else cooldown

    @field_validator("backends", mode="wrap")
    @classmethod
    def _known_backends(cls, value: Any, handler: Any) -> list[str]:
        if not isinstance(value, list):
            return ["native"]
        return list(dict.fromkeys(b for b in map(_backend, value) if b))

    @field_validator("per_task_overrides", mode="wrap")
    @classmethod
    def _known_tasks(cls, value: Any, handler: Any) -> dict[str, TaskOverride]:
        if not isinstance(value, dict):
            return {}
        overrides = {task: TaskOverride.model_validate(value.get(task)) for task in TASKS}
        return {task: o for task, o in overrides.items() if not o.is_empty()}

    @field_validator("dataset_overrides", mode="wrap")
    @classmethod
    def _trace_datasets(cls, value: Any, handler: Any) -> dict[str, TaskOverride]:
        if not isinstance(value, dict):
            return {}
        overrides = {str(name): TaskOverride.model_validate(raw) for name, raw in value.items()}
        return {name: o for name, o in overrides.items() if name not in TASKS and not o.is_empty()}

    def for_task(self, task: Task | str) -> TaskPolicy:
        """elizaOS's `resolveTaskPolicy`: the override where set, else the global value. A trace
        dataset (any name but elizaOS's five) takes its `dataset_overrides` entry, and by default the
        first configured backend that trains weights (`native` optimises elizaOS's prompts only)."""
        if task in TASKS:
            override = self.per_task_overrides.get(task) or TaskOverride()
            default = self.backends[0] if self.backends else None
        else:
            override = self.dataset_overrides.get(task) or TaskOverride()
            default = next((b for b in self.backends if b in WEIGHTS_BACKENDS), None)
        return TaskPolicy(
            task=task,  # type: ignore[arg-type]
            threshold=self.trigger_threshold if override.threshold is None else override.threshold,
            cooldown_hours=self.trigger_cooldown_hours
            if override.cooldown_hours is None
            else override.cooldown_hours,
            backend=override.backend or default,
        )


@dataclass(frozen=True)
class TaskPolicy:
    task: str  # one of elizaOS's tasks, or a trace dataset
    threshold: int
    cooldown_hours: float
    backend: str | None

    @property
    def cooldown_seconds(self) -> float:
        return max(0.0, self.cooldown_hours * 3600)


def select_task(policy: TrainingPolicy, explicit: Task | None, counts: dict[str, int]) -> Task | None:
    """elizaOS's `selectTask`: the explicit task, else the task with the most examples among those at
    or over their threshold (ties go to the earlier task in the canonical order)."""
    if explicit:
        return explicit
    best: Task | None = None
    best_count = 0
    for task in TASKS:
        count = counts.get(task, 0)
        if count > best_count and count >= policy.for_task(task).threshold:
            best, best_count = task, count
    return best


def resolve_backend(policy: TrainingPolicy, task: Task, explicit: str | None) -> str | None:
    """Explicit choice, else the task's override, else the first configured backend."""
    return explicit or policy.for_task(task).backend
