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
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any

from training_pipeline.backends.formats import Ask, answer_text, chat_converter
from training_pipeline.optimizers.scoring import LLMJudge, best_constant, scorer_named
from training_pipeline.training.promotion import PromotionPolicy, Verdict, judge

__all__ = ["Case", "TunedEvaluation", "evaluate_tuned", "held_out_cases"]

#: questions in flight to the service at once while both models answer the test split: a hosted
#: model answers a request in a second or more, so one at a time 300 examples take ten minutes; eight
#: stay far inside any account's rate limit (the clients are thread-safe: httpx, Tinker's SDK)
IN_FLIGHT = 8


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
    asks = [(model, case) for case in cases for model in (base, tuned)]
    answers = _answer_all(asks, log)
    base_scores = [scorer(answer, case.expected) for answer, case in zip(answers[0::2], cases, strict=True)]
    tuned_scores = [scorer(answer, case.expected) for answer, case in zip(answers[1::2], cases, strict=True)]
    reference = best_constant([case.expected for case in cases], scorer)
    verdict = judge(base_scores, tuned_scores, policy, scorer_name, reference.scores if reference else None)
    return TunedEvaluation(verdict, fmean(base_scores or [0.0]), fmean(tuned_scores or [0.0]))


def _answer_all(asks: list[tuple[Ask, Case]], log: Callable[[str], None]) -> list[str]:
    """Every (model, case)'s answer, in order, `IN_FLIGHT` at a time; the first error stops the rest
    (none not yet sent is sent) and is raised."""
    answers: list[str] = [""] * len(asks)
    pool = ThreadPoolExecutor(IN_FLIGHT, thread_name_prefix="tuned-evaluation")
    try:
        futures = {pool.submit(model, case.prompt, case.tools): i for i, (model, case) in enumerate(asks)}
        for done, future in enumerate(as_completed(futures), start=1):
            answers[futures[future]] = future.result()
            if done % 100 == 0 or done == len(asks):
                log(f"{done}/{len(asks)} answers of both models to the test split")
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return answers
