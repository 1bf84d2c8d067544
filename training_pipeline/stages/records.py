"""The records tree: what a training session did, stage by stage, readable back and comparable.

Every node carries an explicit `kind` (`stage`, `agent_run`, `prompt_execution`) so a tree loaded from
`training_records.json` validates into the same types.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from training_pipeline.llm.usage import Usage as Consumption


class FailureInfo(BaseModel):
    kind: str
    message: str
    transient: bool | None = None  # None: the analyser could not tell


class Attempt(BaseModel):
    """A failed attempt that a leaf retried."""

    failure: FailureInfo
    elapsed_seconds: float
    consumption: Consumption = Field(default_factory=Consumption)


class _Node(BaseModel):
    name: str
    started_at: float
    elapsed_seconds: float | None = None
    finished: bool = False
    failure: FailureInfo | None = None


class _Leaf(_Node):
    """A single call (with its own retries inside): what it cost and whether it completed."""

    completed: bool = False
    consumption: Consumption = Field(default_factory=Consumption)
    previous_attempts: list[Attempt] = Field(default_factory=list)


class PromptExecutionRecord(_Leaf):
    kind: Literal["prompt_execution"] = "prompt_execution"


class AgentRunRecord(_Leaf):
    kind: Literal["agent_run"] = "agent_run"
    item: str | None = None
    solved: bool | None = None


class StageRecord(_Node):
    kind: Literal["stage"] = "stage"
    substages_total: int | None = None
    is_dataset: bool = False
    metrics: dict[str, Any] = Field(default_factory=dict)
    substages: list[
        Annotated[StageRecord | AgentRunRecord | PromptExecutionRecord, Field(discriminator="kind")]
    ] = Field(default_factory=list)
    action_log: list[dict[str, Any]] = Field(default_factory=list)
    additional_data: Any = None

    def numeric_metrics(self) -> dict[str, float]:
        """The numeric metrics (for Dagster metadata, which plots them across runs)."""
        return {
            k: float(v)
            for k, v in self.metrics.items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        }


LeafRecord = AgentRunRecord | PromptExecutionRecord
StageRecord.model_rebuild()
