"""The promotion gate: an optimised prompt replaces the baseline only on a held-out gain that is
unlikely to be noise.

Both prompts were scored on the same held-out examples (the trajectory-level split), so the gain is
paired: one difference per example. A seeded paired bootstrap over examples gives a percentile interval
for the mean difference; the candidate is promoted when the interval's lower bound clears the margin.
On a small split a lucky candidate has a wide interval that reaches below the margin, so it is
rejected, however good its mean looks.

A promoted prompt is published as `prompts/<task>.json` in the data folder, the one place evaluation
and users read a task's current prompt from; a rejected one stays in its run's folder and record only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from training_pipeline.atomic import atomic_write_text
from training_pipeline.datasets.training_tasks import TASKS
from training_pipeline.optimizers.scoring import SCORERS, default_scorer
from training_pipeline.privacy.stored import safe_value
from training_pipeline.training.run_records import RunRecord, RunStore

#: resampled indices held at once (resamples × examples), to bound memory on large splits
_INDICES_AT_ONCE = 2_000_000


class PromotionPolicy(BaseModel):
    """How candidates are judged and evaluated, per deployment (`training` resource)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: the lower bound of the gain's interval must be above this (in the scorer's units, 0..1)
    margin: float = Field(default=0.0, ge=-1.0, le=1.0)
    confidence: float = Field(default=0.95, gt=0.5, lt=1.0)
    resamples: int = Field(default=10_000, ge=100, le=1_000_000)
    #: fewer held-out examples than this are rejected outright: a bootstrap over a handful of examples
    #: cannot see the variance it has not sampled (two lucky examples give an interval of one point)
    min_examples: int = Field(default=10, ge=1)
    seed: int = 0
    #: the scorer each task's optimiser is judged by (default: elizaOS's choice for the task)
    scorers: dict[str, str] = Field(default_factory=dict)
    #: the task file that evaluates a promoted prompt, per task (default: the bundled examples)
    evaluation_tasks: dict[str, str] = Field(default_factory=dict)

    @field_validator("scorers", "evaluation_tasks")
    @classmethod
    def _known_tasks(cls, mapping: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(mapping) - set(TASKS))
        if unknown:
            raise ValueError(f"unknown task(s) {', '.join(unknown)}; tasks are {', '.join(TASKS)}")
        return mapping

    @field_validator("scorers")
    @classmethod
    def _known_scorers(cls, mapping: dict[str, str]) -> dict[str, str]:
        bad = sorted(name for name in mapping.values() if name not in SCORERS)
        if bad:
            raise ValueError(f"unknown scorer(s) {', '.join(bad)}; choose from {', '.join(SCORERS)}")
        return mapping

    def scorer_for(self, task: str) -> str:
        return self.scorers.get(task) or default_scorer(task)


@dataclass(frozen=True)
class Verdict:
    promoted: bool
    #: mean of candidate − baseline over the held-out examples
    gain: float
    low: float
    high: float
    n: int
    margin: float
    confidence: float
    min_examples: int
    resamples: int
    seed: int
    scorer: str
    reason: str
    #: the best constant answer's mean on the same examples, and the lower bound of the candidate's
    #: gain over it (None: no reference was measured)
    reference: float | None = None
    reference_low: float | None = None
    #: the optimiser's seeds, and the gain and interval over all of them (every seed's test
    #: examples, each paired with its own baseline): the procedure's gain, not one seed's
    seeds: int = 1
    seeds_gain: float | None = None
    seeds_low: float | None = None
    seeds_high: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def paired_bootstrap(
    baseline: Sequence[float],
    candidate: Sequence[float],
    *,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """(mean gain, lower, upper): the percentile interval of the mean paired difference over
    `resamples` resamples of the examples, with replacement, from a seeded generator."""
    if len(baseline) != len(candidate):
        raise ValueError(f"paired scores differ in length: {len(baseline)} vs {len(candidate)}")
    diffs = np.asarray(candidate, dtype=float) - np.asarray(baseline, dtype=float)
    n = diffs.size
    if n == 0:
        return 0.0, 0.0, 0.0
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    chunk = max(1, _INDICES_AT_ONCE // n)
    for start in range(0, resamples, chunk):
        size = min(chunk, resamples - start)
        means[start : start + size] = diffs[rng.integers(0, n, size=(size, n))].mean(axis=1)
    tail = (1.0 - confidence) / 2
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(diffs.mean()), float(low), float(high)


def judge(
    baseline: Sequence[float],
    candidate: Sequence[float],
    policy: PromotionPolicy,
    scorer: str,
    reference: Sequence[float] | None = None,
) -> Verdict:
    """Promoted when the candidate's paired gain over the baseline is above the margin with the
    policy's confidence and, given the best constant answer's scores on the same examples
    (`reference`), its gain over that is above 0 too: a prompt that only learnt to give the commonest
    answer is never promoted, however much better than a poor baseline it is."""
    gain, low, high = paired_bootstrap(
        baseline, candidate, confidence=policy.confidence, resamples=policy.resamples, seed=policy.seed
    )
    reference_mean = reference_low = None
    if reference:
        reference_mean = sum(reference) / len(reference)
        _, reference_low, _ = paired_bootstrap(
            reference, candidate, confidence=policy.confidence, resamples=policy.resamples, seed=policy.seed
        )
    n = len(baseline)
    if n < policy.min_examples:
        promoted, reason = (
            False,
            f"{n} held-out examples, fewer than the {policy.min_examples} the gate needs to tell a gain "
            "from noise",
        )
    elif low > policy.margin and reference_low is not None and reference_low <= 0:
        promoted, reason = (
            False,
            f"better than the baseline, but not than always giving the commonest answer (scores "
            f"{reference_mean:.3f}): the gain over it reaches {reference_low:.3f} at "
            f"{policy.confidence:.0%}",
        )
    elif low > policy.margin:
        promoted, reason = True, f"the gain's {policy.confidence:.0%} interval lies above {policy.margin:g}"
        if reference_low is not None:
            reason += f", and above the best constant answer's {reference_mean:.3f}"
    else:
        promoted, reason = (
            False,
            f"the gain's {policy.confidence:.0%} interval reaches {low:.3f}, not above the margin "
            f"{policy.margin:g}: not distinguishable from noise on {n} held-out examples",
        )
    return Verdict(
        promoted=promoted,
        gain=gain,
        low=low,
        high=high,
        n=n,
        margin=policy.margin,
        confidence=policy.confidence,
        min_examples=policy.min_examples,
        resamples=policy.resamples,
        seed=policy.seed,
        scorer=scorer,
        reason=reason,
        reference=reference_mean,
        reference_low=reference_low,
    )


def judge_artifact(artifact: dict[str, Any], policy: PromotionPolicy) -> Verdict:
    """The verdict on a native run's artifact (`optimized_prompt.json`), from its per-example test
    scores. With several seeds the candidate must also pass over all of them pooled: a gain one seed
    finds and the others do not is the seed's luck, and is rejected."""
    baseline, candidate = artifact.get("baseline_scores") or [], artifact.get("scores") or []
    if artifact.get("prompt") == artifact.get("baseline_prompt") and not artifact.get("few_shot_examples"):
        candidate = baseline  # the optimiser kept the baseline: nothing to promote
    verdict = judge(
        baseline, candidate, policy, artifact.get("scorer") or "", artifact.get("reference_scores") or None
    )
    seeds = artifact.get("seeds") or []
    if len(seeds) < 2:
        return verdict
    pooled_base = [score for seed in seeds for score in seed["baseline_scores"]]
    pooled = [score for seed in seeds for score in seed["scores"]]
    gain, low, high = paired_bootstrap(
        pooled_base, pooled, confidence=policy.confidence, resamples=policy.resamples, seed=policy.seed
    )
    verdict = replace(verdict, seeds=len(seeds), seeds_gain=gain, seeds_low=low, seeds_high=high)
    if verdict.promoted and low <= policy.margin:
        verdict = replace(
            verdict,
            promoted=False,
            reason=f"the chosen candidate gains, but over its {len(seeds)} seeds the gain's "
            f"{policy.confidence:.0%} interval reaches {low:.3f}: one seed's luck, not the optimiser's gain",
        )
    elif verdict.promoted:
        verdict = replace(
            verdict, reason=f"{verdict.reason}; over {len(seeds)} seeds {gain:+.3f} [{low:+.3f}, {high:+.3f}]"
        )
    return verdict


def promote(
    record: RunRecord, artifact: dict[str, Any], runs: RunStore, prompts_dir: Path, policy: PromotionPolicy
) -> Verdict:
    """Judges a native run's candidate, publishes it if promoted, and records the verdict (and where it
    was published) in the run record."""
    verdict = judge_artifact(artifact, policy)
    published = (
        publish(prompts_dir, record.task or "", artifact, verdict, record.run_id)
        if verdict.promoted
        else None
    )
    record.promotion = {**verdict.to_dict(), "published": str(published) if published else None}
    record.notes.append(
        f"promotion gate ({verdict.scorer}): gain {verdict.gain:+.3f}, "
        f"{verdict.confidence:.0%} interval [{verdict.low:+.3f}, {verdict.high:+.3f}], n={verdict.n}: "
        + ("promoted" if verdict.promoted else "rejected")
    )
    runs.save(record)
    return verdict


def native_candidate(runs: RunStore, dagster_run_id: str, task: str) -> RunRecord | None:
    """The record of a succeeded native optimisation that `dagster_run_id` made for `task`, if any."""
    record = runs.find(dagster_run_id=dagster_run_id, task=task)
    if record is None or record.backend != "native" or record.status != "succeeded" or record.dry_run:
        return None
    return record


def published_path(prompts_dir: Path, task: str) -> Path:
    return prompts_dir / f"{task}.json"


def publish(prompts_dir: Path, task: str, artifact: dict[str, Any], verdict: Verdict, run_id: str) -> Path:
    """Makes a promoted candidate the task's current prompt (atomically); refuses a rejected one."""
    if not verdict.promoted:
        raise ValueError(f"run {run_id}'s candidate for {task} was rejected by the gate; not published")
    path = published_path(prompts_dir, task)
    document = {
        "task": task,
        "run_id": run_id,
        "optimizer": artifact.get("optimizer"),
        "prompt": artifact["prompt"],
        # demonstrations given as chat turns before the question (`demo_style` "turns"); with
        # "system" they are already in the prompt
        "demonstrations": artifact.get("few_shot_examples") or [],
        "demo_style": artifact.get("demo_style", "turns"),
        # 0: every demonstration before every question; n: they are a pool, and the n nearest to each
        # question are given (`optimizers.nearest`)
        "neighbours": artifact.get("neighbours", 0),
        # the form a decision's answers were held to when it was scored (None: free text)
        "answer_form": artifact.get("answer_form"),
        "baseline_prompt": artifact["baseline_prompt"],
        "promoted_at": datetime.now(UTC).isoformat(),
        "verdict": verdict.to_dict(),
    }
    atomic_write_text(path, json.dumps(safe_value(document), indent=2, ensure_ascii=False) + "\n")
    return path


def read_published(prompts_dir: Path, task: str) -> dict[str, Any] | None:
    path = published_path(prompts_dir, task)
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
