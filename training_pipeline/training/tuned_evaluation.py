"""Is the tuned model better than the model it was tuned from?

Both answer the run's test split (`holdout`: trajectories neither training nor the service's
validation saw) through the service's own endpoint, each answer is scored with the task's scorer
against what the data says, and the promotion gate judges the paired gain exactly as it judges a
prompt: the interval's lower bound above the margin, enough examples, and better than always giving
the commonest answer (`scoring.best_constant`). A tuned model that only learnt the majority answer is
not "better", however poor its base.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any

from training_pipeline.backends.formats import Ask, answer_text, chat_converter
from training_pipeline.optimizers.scoring import LLMJudge, best_constant, scorer_named
from training_pipeline.training.promotion import PromotionPolicy, Verdict, judge

__all__ = ["Case", "TunedEvaluation", "evaluate_tuned", "held_out_cases"]


@dataclass(frozen=True)
class Case:
    prompt: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    expected: str


@dataclass(frozen=True)
class TunedEvaluation:
    verdict: Verdict
    base_score: float
    tuned_score: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict.to_dict(),
            "base_score": self.base_score,
            "tuned_score": self.tuned_score,
        }


def held_out_cases(test_path: Path, dataset_format: str) -> list[Case]:
    """Each test line: the conversation up to its last message, the tools offered, and that message
    (what the model is to answer) as text."""
    convert = chat_converter(dataset_format)
    cases = []
    for line in test_path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            chat = convert(json.loads(line))
            *prompt, answer = chat["messages"]
            cases.append(Case(prompt, chat.get("tools") or None, answer_text(answer)))
    return cases


def evaluate_tuned(
    cases: list[Case],
    scorer_name: str,
    base: Ask,
    tuned: Ask,
    policy: PromotionPolicy,
    log: Callable[[str], None] = print,
) -> TunedEvaluation:
    """Both models on every case, scored with `scorer_name`, judged by the gate."""
    scorer = scorer_named(scorer_name)
    if isinstance(scorer, LLMJudge):
        raise ValueError("the tuned model is judged by a scorer that needs no model; llm_judge does")
    base_scores, tuned_scores = [], []
    for number, case in enumerate(cases, start=1):
        base_scores.append(scorer(base(case.prompt, case.tools), case.expected))
        tuned_scores.append(scorer(tuned(case.prompt, case.tools), case.expected))
        if number % 50 == 0 or number == len(cases):
            log(f"scored {number}/{len(cases)} test examples on both models")
    reference = best_constant([case.expected for case in cases], scorer)
    verdict = judge(base_scores, tuned_scores, policy, scorer_name, reference.scores if reference else None)
    return TunedEvaluation(verdict, fmean(base_scores or [0.0]), fmean(tuned_scores or [0.0]))
