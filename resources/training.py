"""The training policy, set in one place (and overridable per run from the launchpad)."""

from __future__ import annotations

from typing import Any

from dagster import ConfigurableResource
from pydantic import Field

from training_pipeline.training.policy import TrainingPolicy
from training_pipeline.training.promotion import PromotionPolicy


class TrainingSettings(ConfigurableResource):
    """elizaOS's training config. Invalid values fall back to defaults and unknown backends are
    dropped when the policy is built, exactly as elizaOS normalises its config file."""

    auto_train: bool = True
    trigger_threshold: int = 100
    trigger_cooldown_hours: float = 12.0
    backends: list[str] = Field(default_factory=lambda: ["native"])
    per_task_overrides: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description='e.g. {"response": {"threshold": 50, "cooldown_hours": 6, "backend": "openai"}}',
    )
    dataset_overrides: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="the same per trace dataset (ours, not elizaOS's), e.g. "
        '{"tool_use": {"threshold": 200, "backend": "openai"}}; a trace dataset\'s default backend is '
        "the first of `backends` that trains weights (native optimises elizaOS's prompts only)",
    )
    window_days: int = Field(
        default=7, description="how many of the latest materialised days a run trains on"
    )
    # -- the promotion gate and the evaluation of promoted prompts (ours, not elizaOS's) --
    promotion_margin: float = Field(
        default=0.0, description="a candidate is promoted when its gain's lower bound is above this"
    )
    promotion_confidence: float = Field(default=0.95, description="of the paired bootstrap interval")
    promotion_min_examples: int = Field(
        default=10, description="fewer held-out examples than this are rejected outright"
    )
    scorers: dict[str, str] = Field(
        default_factory=dict,
        description="per task: token_overlap, action_match, exact_match, json_fields or llm_judge, e.g. "
        '{"context_routing": "json_fields"} (default: elizaOS\'s choice)',
    )
    evaluation_tasks: dict[str, str] = Field(
        default_factory=dict,
        description="per task: the task file that evaluates its promoted prompt (default: the bundled "
        "example tasks)",
    )

    def promotion(self) -> PromotionPolicy:
        return PromotionPolicy(
            margin=self.promotion_margin,
            confidence=self.promotion_confidence,
            min_examples=self.promotion_min_examples,
            scorers=dict(self.scorers),
            evaluation_tasks=dict(self.evaluation_tasks),
        )

    def policy(self) -> TrainingPolicy:
        return TrainingPolicy.model_validate(
            {
                "auto_train": self.auto_train,
                "trigger_threshold": self.trigger_threshold,
                "trigger_cooldown_hours": self.trigger_cooldown_hours,
                "backends": list(self.backends),
                "per_task_overrides": dict(self.per_task_overrides),
                "dataset_overrides": dict(self.dataset_overrides),
            }
        )
