"""The native optimisers as Stage-DSL programs, so every run leaves a records tree.

Better than elizaOS's: candidates are chosen on training minibatches and only the final comparison
(baseline and winner, always on the same examples) uses the validation split; demonstrations come from
the training split only; every random choice comes from one seeded RNG, and sampled LLM calls carry a
seed, so a run can be repeated (and replayed from the response cache after a crash).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Any, Literal

from training_pipeline.atomic import atomic_write_text
from training_pipeline.optimizers.examples import Example
from training_pipeline.optimizers.scoring import LLMJudge, Scorer, best_constant
from training_pipeline.stages.scope import StageScope

Optimizer = Literal["instruction-search", "prompt-evolution", "bootstrap-fewshot"]
OPTIMIZERS: tuple[str, ...] = ("instruction-search", "prompt-evolution", "bootstrap-fewshot")

REWRITE = (
    "Rewrite the system prompt the user sends so that a model following it answers its task better. "
    "Keep what the task takes in and gives back, keep every {{placeholder}} exactly, add no new fields. "
    "Make the wording precise and add guidance for the mistakes a model is likely to make. "
    "Reply with the new system prompt only."
)
MUTATE = (
    "Change one part of the system prompt the user sends (its introduction, its rules, or its description "
    "of the answer format) to try a different way of saying it; copy every other part unchanged. Keep "
    "every {{placeholder}} exactly. Reply with the whole new system prompt only."
)


@dataclass(frozen=True)
class OptimiserConfig:
    optimizer: Optimizer = "instruction-search"
    seed: int = 0
    validation_fraction: float = 0.3
    train_batch: int = 8  # training examples each candidate is scored on
    max_tokens: int = 512
    temperature: float = 0.7  # for rewrites and mutations; answers are scored at temperature 0
    rounds: int = 3
    variants: int = 4
    population: int = 6
    generations: int = 3
    mutation_rate: float = 0.5
    k: int = 4  # demonstrations for bootstrap-fewshot


@dataclass
class OptimisationResult:
    optimizer: str
    baseline_prompt: str
    prompt: str
    baseline_score: float  # on the validation split
    score: float  # on the validation split, same examples
    few_shot_examples: list[dict[str, str]] = field(default_factory=list)
    lineage: list[dict[str, Any]] = field(default_factory=list)
    train_size: int = 0
    validation_size: int = 0
    #: the held-out examples and each one's score for the baseline and the candidate, in the same
    #: order: what the promotion gate pairs
    validation_ids: list[str] = field(default_factory=list)
    baseline_scores: list[float] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    #: which scorer produced every score above
    scorer: str = ""
    #: the best constant answer on the held-out examples (`scoring.best_constant`) and its score on
    #: each, in the same order: what the gate also requires the candidate to beat (empty: none, as for
    #: an LLM judge)
    reference_answer: str = ""
    reference_scores: list[float] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def prompt_id(prompt: str) -> str:
    return hashlib.sha256(prompt.encode()).hexdigest()[:12]


def evaluate_each(
    scope: StageScope, name: str, prompt: str, examples: list[Example], scorer: Scorer, max_tokens: int
) -> list[float]:
    """The score of `prompt` on each of `examples` (in their order), each answered at temperature 0; a
    failed answer scores 0. An LLM judge grades in a prompt execution of its own."""

    def one(stage: StageScope, example: Example) -> float:
        messages = [{"role": "system", "content": prompt}, {"role": "user", "content": example.user}]
        answer = stage.execute_prompt(messages, name="answer", temperature=0.0, max_tokens=max_tokens)
        text = (answer.value.content or "") if answer.ok else None
        if text is None:
            score = 0.0
        elif isinstance(scorer, LLMJudge):
            grade = stage.execute_prompt(
                scorer.messages(text, example.expected),
                name="judge",
                temperature=0.0,
                max_tokens=scorer.max_tokens,
            )
            score = scorer.parse(grade.value.content) if grade.ok else 0.0
        else:
            score = scorer(text, example.expected)
        stage.record_custom_metric("score", score)
        return score

    scores = scope.map_iterable_stage(name, examples, one, item_name=lambda e: e.id).get_or_raise()
    scope.record.substages[-1].additional_data = {
        "prompt_id": prompt_id(prompt),
        "score": fmean(scores) if scores else 0.0,
    }
    return scores


def evaluate(
    scope: StageScope, name: str, prompt: str, examples: list[Example], scorer: Scorer, max_tokens: int
) -> float:
    """Mean score of `prompt` over `examples` (`evaluate_each`)."""
    scores = evaluate_each(scope, name, prompt, examples, scorer, max_tokens)
    return fmean(scores) if scores else 0.0


def _sample(
    scope: StageScope, instructions: str, prompt: str, cfg: OptimiserConfig, seed: int, name: str
) -> str:
    messages = [{"role": "system", "content": instructions}, {"role": "user", "content": prompt}]
    answer = scope.execute_prompt(
        messages, name=name, temperature=cfg.temperature, max_tokens=cfg.max_tokens * 2, seed=seed
    )
    return (answer.value.content or "").strip() if answer.ok else ""


def with_demonstrations(prompt: str, demos: list[Example]) -> str:
    if not demos:
        return prompt
    parts = [prompt.rstrip(), "", "Examples of good answers:"]
    for number, demo in enumerate(demos, start=1):
        parts += ["", f"Example {number}", f"Input:\n{demo.user}", f"Answer:\n{demo.expected}"]
    return "\n".join(parts) + "\n"


def bootstrap_fewshot(
    root: StageScope,
    baseline: str,
    train: list[Example],
    validation: list[Example],
    scorer: Scorer,
    cfg: OptimiserConfig,
    rng: random.Random,
    **_: Any,
) -> OptimisationResult:
    """Demonstrations are the training examples the baseline already answers best."""
    pool = rng.sample(train, min(len(train), max(cfg.train_batch, cfg.k * 3)))

    def rank(scope: StageScope) -> list[Example]:
        scored = []
        for example in pool:
            scored.append((evaluate(scope, example.id, baseline, [example], scorer, cfg.max_tokens), example))
        scored.sort(key=lambda pair: -pair[0])  # stable: ties keep the sampled order
        return [example for _, example in scored[: cfg.k]]

    demos = root.run_stage_or_raise("rank demonstrations", rank, substages_total=len(pool))
    optimised = with_demonstrations(baseline, demos)
    result = _final(
        root,
        "bootstrap-fewshot",
        baseline,
        optimised,
        validation,
        scorer,
        cfg,
        [],
        notes=f"{len(demos)} demonstrations",
    )
    result.few_shot_examples = [{"user": d.user, "expected": d.expected} for d in demos]
    return result


class Checkpoint:
    """The state after each finished round, so a restarted run picks up where it stopped."""

    def __init__(self, path: Path | None, key: str) -> None:
        self.path, self.key = path, key

    def load(self) -> dict[str, Any] | None:
        if self.path is None or not self.path.is_file():
            return None
        state = json.loads(self.path.read_text(encoding="utf-8"))
        return state if state.get("key") == self.key else None

    def save(self, state: dict[str, Any]) -> None:
        if self.path is not None:
            atomic_write_text(self.path, json.dumps({"key": self.key, **state}, ensure_ascii=False))


def instruction_search(
    root: StageScope,
    baseline: str,
    train: list[Example],
    validation: list[Example],
    scorer: Scorer,
    cfg: OptimiserConfig,
    rng: random.Random,
    checkpoint: Checkpoint | None = None,
    **_: Any,
) -> OptimisationResult:
    """MIPRO-style: each round asks for `variants` rewrites of the current best and keeps the one that
    scores highest on that round's training minibatch."""
    state = (checkpoint.load() if checkpoint else None) or {
        "round": 0,
        "current": baseline,
        "current_score": None,
        "lineage": [],
        "rng": None,
    }
    if state["rng"] is not None:
        rng.setstate(_rng_state(state["rng"]))
    for round_number in range(state["round"] + 1, cfg.rounds + 1):
        batch = rng.sample(train, min(cfg.train_batch, len(train)))

        def run_round(scope: StageScope, number: int = round_number, batch: list[Example] = batch) -> None:
            current = state["current"]
            current_score = evaluate(scope, "current", current, batch, scorer, cfg.max_tokens)
            state["lineage"].append(
                {
                    "round": number,
                    "variant": 0,
                    "split": "train",
                    "score": current_score,
                    "notes": "current best",
                    "prompt_id": prompt_id(current),
                }
            )
            best, best_score = current, current_score
            for variant in range(1, cfg.variants + 1):
                seed = cfg.seed * 1_000_003 + number * 1000 + variant
                candidate = _sample(scope, REWRITE, current, cfg, seed, f"rewrite {variant}")
                if not candidate:
                    state["lineage"].append(
                        {
                            "round": number,
                            "variant": variant,
                            "split": "train",
                            "score": 0.0,
                            "notes": "empty rewrite, skipped",
                        }
                    )
                    continue
                score = evaluate(scope, f"variant {variant}", candidate, batch, scorer, cfg.max_tokens)
                state["lineage"].append(
                    {
                        "round": number,
                        "variant": variant,
                        "split": "train",
                        "score": score,
                        "prompt_id": prompt_id(candidate),
                    }
                )
                if score > best_score:
                    best, best_score = candidate, score
            state.update(current=best, current_score=best_score, round=number)

        root.run_stage_or_raise(f"round {round_number}", run_round, substages_total=cfg.variants * 2 + 1)
        state["rng"] = _rng_json(rng.getstate())
        if checkpoint:
            checkpoint.save(state)
    return _final(
        root, "instruction-search", baseline, state["current"], validation, scorer, cfg, state["lineage"]
    )


def prompt_evolution(
    root: StageScope,
    baseline: str,
    train: list[Example],
    validation: list[Example],
    scorer: Scorer,
    cfg: OptimiserConfig,
    rng: random.Random,
    **_: Any,
) -> OptimisationResult:
    """GEPA-style: a population of mutations; the better half survives each generation and breeds
    (mutated with probability `mutation_rate`, else carried over)."""
    batch = rng.sample(train, min(cfg.train_batch, len(train)))
    lineage: list[dict[str, Any]] = []

    def seed_population(scope: StageScope) -> list[tuple[str, float]]:
        pool = [(baseline, evaluate(scope, "baseline", baseline, batch, scorer, cfg.max_tokens))]
        for variant in range(1, cfg.population):
            mutant = _sample(
                scope, MUTATE, baseline, cfg, cfg.seed * 1_000_003 + variant, f"mutation {variant}"
            )
            pool.append(
                (
                    mutant,
                    evaluate(scope, f"variant {variant}", mutant, batch, scorer, cfg.max_tokens)
                    if mutant
                    else 0.0,
                )
            )
        for variant, (prompt, score) in enumerate(pool):
            lineage.append(
                {
                    "round": 0,
                    "variant": variant,
                    "split": "train",
                    "score": score,
                    "notes": "baseline" if variant == 0 else "seed mutation",
                    "prompt_id": prompt_id(prompt),
                }
            )
        return pool

    pool = root.run_stage_or_raise("generation 0", seed_population, substages_total=cfg.population * 2)
    for generation in range(1, cfg.generations + 1):

        def breed(scope: StageScope, number: int = generation, pool: list[tuple[str, float]] = pool):
            ranked = sorted(pool, key=lambda entry: -entry[1])
            survivors = [entry for entry in ranked[: max(1, len(ranked) // 2)] if entry[0]]
            children = list(survivors)
            while len(children) < cfg.population:
                parent = survivors[len(children) % len(survivors)][0]
                mutated = rng.random() < cfg.mutation_rate
                child = parent
                if mutated:
                    seed = cfg.seed * 1_000_003 + number * 1000 + len(children)
                    child = _sample(scope, MUTATE, parent, cfg, seed, f"mutation {len(children)}") or parent
                score = evaluate(scope, f"child {len(children)}", child, batch, scorer, cfg.max_tokens)
                lineage.append(
                    {
                        "round": number,
                        "variant": len(children),
                        "split": "train",
                        "score": score,
                        "notes": "mutated child" if mutated else "carried forward",
                        "prompt_id": prompt_id(child),
                    }
                )
                children.append((child, score))
            return children

        pool = root.run_stage_or_raise(f"generation {generation}", breed)
    best = max(pool, key=lambda entry: entry[1])[0]
    return _final(root, "prompt-evolution", baseline, best, validation, scorer, cfg, lineage)


def _final(
    root: StageScope,
    optimizer: str,
    baseline: str,
    best: str,
    validation: list[Example],
    scorer: Scorer,
    cfg: OptimiserConfig,
    lineage: list[dict[str, Any]],
    notes: str = "optimised",
) -> OptimisationResult:
    """Baseline and candidate scored on the same held-out examples, example by example."""
    base_scores = evaluate_each(root, "validation: baseline", baseline, validation, scorer, cfg.max_tokens)
    scores = (
        base_scores
        if best == baseline
        else evaluate_each(root, f"validation: {notes}", best, validation, scorer, cfg.max_tokens)
    )
    base_score, score = (fmean(base_scores) if base_scores else 0.0), (fmean(scores) if scores else 0.0)
    lineage = [
        *lineage,
        {
            "round": "final",
            "variant": 0,
            "split": "validation",
            "score": base_score,
            "notes": "baseline",
            "prompt_id": prompt_id(baseline),
        },
        {
            "round": "final",
            "variant": 1,
            "split": "validation",
            "score": score,
            "notes": notes,
            "prompt_id": prompt_id(best),
        },
    ]
    reference = best_constant([e.expected for e in validation], scorer)
    return OptimisationResult(
        optimizer,
        baseline,
        best,
        base_score,
        score,
        [],
        lineage,
        validation_ids=[e.id for e in validation],
        baseline_scores=base_scores,
        scores=scores,
        reference_answer=reference.answer if reference else "",
        reference_scores=reference.scores if reference else [],
    )


def _rng_json(state: tuple) -> list:
    version, internal, gauss = state
    return [version, list(internal), gauss]


def _rng_state(saved: list) -> tuple:
    return (saved[0], tuple(saved[1]), saved[2])


PROGRAMS: dict[str, Callable[..., OptimisationResult]] = {
    "instruction-search": instruction_search,
    "prompt-evolution": prompt_evolution,
    "bootstrap-fewshot": bootstrap_fewshot,
}
