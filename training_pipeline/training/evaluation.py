"""Evaluating a promoted prompt with task steps where that prompt belongs: each evaluation task file has
an agent whose `task_prompt` is the dataset task's prompt; it runs once as written (the baseline: the
agent's real prompt) and once with the promoted prompt (and its demonstrations) in that place, the
agent's own instructions kept, and the verifiers' scores are compared. Both runs hold a decision's
answers to the same form, so the only difference between them is what was promoted.

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


#: the bundled evaluation task file of each dataset task that has one
EVALUATION_TASKS = EXAMPLE_TASKS.parent / "evaluations"


def evaluation_files(policy: PromotionPolicy, task: str) -> list[Path]:
    """The task file the policy names for `task`, else the bundled evaluation of that task."""
    named = policy.evaluation_tasks.get(task)
    path = Path(named).expanduser() if named else EVALUATION_TASKS / f"{task}.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"the evaluation task file for {task} does not exist: {path}"
            if named
            else f"no evaluation task file for {task}: name one in the training policy's evaluation_tasks"
        )
    return [path]


def task_prompt_overrides(
    spec: Task, task: str, published: dict[str, Any], variant: Variant
) -> dict[str, dict[str, Any]]:
    """Step parameters for the agents whose `task_prompt` is `task`'s: with the promoted variant, the
    promoted prompt in its place and the demonstrations before every prompt; in both variants the
    published answer form, so the baseline is decoded as the candidate was. Other agents are left
    alone."""
    agents = [
        step
        for step in spec.steps
        if step.type == "deploy_agent" and step.task_prompt is not None and step.task_prompt.task == task
    ]
    if not agents:
        raise ValueError(
            f"task {spec.name!r} has no agent whose task_prompt is {task}'s, "
            "so it cannot evaluate that prompt"
        )
    overrides: dict[str, dict[str, Any]] = {}
    for step in agents:
        params: dict[str, Any] = {}
        if published.get("answer_form"):
            params["answer_form"] = published["answer_form"]
        if variant == "promoted":
            params["task_prompt"] = {"task": task, "prompt": published["prompt"]}
            if published.get("demo_style", "turns") == "turns":
                params["demonstrations"] = [
                    [demo["user"], demo["expected"]] for demo in published.get("demonstrations") or []
                ]
                if published.get("neighbours"):
                    params["neighbours"] = published["neighbours"]
        overrides[step.id] = params
    return overrides


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
