"""The training policy, set in one place (and overridable per run from the launchpad)."""

from __future__ import annotations

from typing import Any

from dagster import ConfigurableResource
from pydantic import Field

from training_pipeline.training.policy import TrainingPolicy


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
    window_days: int = Field(
        default=7, description="how many of the latest materialised days a run trains on"
    )

    def policy(self) -> TrainingPolicy:
        return TrainingPolicy.model_validate(
            {
                "auto_train": self.auto_train,
                "trigger_threshold": self.trigger_threshold,
                "trigger_cooldown_hours": self.trigger_cooldown_hours,
                "backends": list(self.backends),
                "per_task_overrides": dict(self.per_task_overrides),
            }
        )
