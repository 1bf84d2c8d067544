"""The base of every step type: pydantic fields, a class-level `type`, and `async execute(context)`.

A step's fields come from its JSON object: everything except `type` and `retry_config` goes to the
constructor, so an unknown or missing field stops the task at load time, never in the middle of a run.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from training_pipeline.tasks.context import TaskStepContext


class Dependency(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    task_step_id: str


class RetryConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    retry_from_step_id: str
    max_retries: int = Field(default=1, ge=0, le=100)


class TaskStep(BaseModel):
    """Subclass with `type = "..."`, the type's fields, and `async execute(context)`.

    `execute` publishes what it made by changing `context` (its typed lists or `metadata`); the run
    records that change as the step's diff. What it returns is ignored.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: ClassVar[str]

    #: letters, digits and `_` only: each step is a Dagster op, and Dagster names allow no more
    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_]+$")
    version: int = 1
    #: None: after every earlier step; []: none; else exactly these (earlier) steps
    depends_on: list[Dependency] | None = None
    fail_task_on_error: bool = True

    async def execute(self, context: TaskStepContext) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement execute")

    def to_dict(self) -> dict[str, Any]:
        """The step's stored document: `type` first, then every field."""
        return {"type": self.type, **self.model_dump(mode="json")}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        return cls(**{key: value for key, value in data.items() if key not in ("type", "retry_config")})


def _relative_path(value: str) -> str:
    path = PurePosixPath(value)
    if not value or path.is_absolute() or value.startswith("~") or ".." in path.parts or "\\" in value:
        raise ValueError(f"must be a relative path inside its base directory, got {value!r}")
    return value


#: A path field of a task file: relative and without `..`, so it cannot leave the directory it is
#: resolved against (`resolve_inside` checks again after following symlinks).
RelativePath = Annotated[str, AfterValidator(_relative_path)]


def resolve_inside(base: Path, relative: str) -> Path:
    resolved = (base / relative).resolve()
    if not resolved.is_relative_to(base.resolve()):
        raise ValueError(f"{relative!r} resolves outside {base}")
    return resolved
