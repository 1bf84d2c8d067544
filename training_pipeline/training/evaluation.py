"""Evaluating a promoted prompt with task steps: the same task files run once with the promoted prompt
as every agent's system prompt and once with the baseline, and their verifiers' scores compared.

The runs themselves are task jobs (the wiring launches them); this module decides which task files,
what each run overrides, and how the runs' verifications add up.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Any, Literal

from training_pipeline.tasks import EXAMPLE_TASKS
from training_pipeline.tasks.task import Task
from training_pipeline.training.promotion import PromotionPolicy

Variant = Literal["promoted", "baseline"]
VARIANTS: tuple[Variant, ...] = ("promoted", "baseline")


def evaluation_files(policy: PromotionPolicy, task: str) -> list[Path]:
    """The task file the policy names for `task`, else every bundled example task."""
    named = policy.evaluation_tasks.get(task)
    if named:
        path = Path(named).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"the evaluation task file for {task} does not exist: {path}")
        return [path]
    return sorted(EXAMPLE_TASKS.glob("*.json"))


def system_prompt_overrides(task: Task, prompt: str) -> dict[str, dict[str, Any]]:
    """Step parameters that give every agent the task file deploys `prompt` as its system prompt."""
    agents = [step.id for step in task.steps if step.type == "deploy_agent"]
    if not agents:
        raise ValueError(f"task {task.name!r} deploys no agent, so it cannot evaluate a prompt")
    return {step_id: {"system_prompt": prompt} for step_id in agents}


def verification_score(run_dir: Path) -> float | None:
    """The mean score of a finished task run's verifiers (its `context.json`), or None without any."""
    path = run_dir / "context.json"
    if not path.is_file():
        return None
    verifications = json.loads(path.read_text(encoding="utf-8")).get("metadata", {}).get("verifications", {})
    scores = [float(v["score"]) for v in verifications.values() if isinstance(v, dict) and "score" in v]
    return fmean(scores) if scores else None


@dataclass
class Evaluation:
    """Each (task file, variant) run; a run that failed or verified nothing scores 0."""

    runs: list[dict[str, Any]] = field(default_factory=list)

    def add(
        self, task_file: str, variant: Variant, run_id: str, succeeded: bool, score: float | None
    ) -> None:
        self.runs.append(
            {
                "task_file": task_file,
                "variant": variant,
                "run_id": run_id,
                "succeeded": succeeded,
                "score": score if score is not None else 0.0,
                "verified": score is not None,
            }
        )

    def mean(self, variant: Variant) -> float:
        scores = [run["score"] for run in self.runs if run["variant"] == variant]
        return fmean(scores) if scores else 0.0

    def by_task_file(self) -> dict[str, dict[str, float]]:
        table: dict[str, dict[str, float]] = {}
        for run in self.runs:
            table.setdefault(run["task_file"], {})[run["variant"]] = run["score"]
        return table

    def summary(self) -> dict[str, Any]:
        promoted, baseline = self.mean("promoted"), self.mean("baseline")
        return {
            "promoted_score": promoted,
            "baseline_score": baseline,
            "difference": promoted - baseline,
            "by_task_file": self.by_task_file(),
            "runs": self.runs,
            "scorer": "the task files' verifiers (mean score per run)",
        }
