"""The native backend: optimise a task's prompt in-process, leaving a records tree and an artifact.

The optimiser runs once per seed (each seed its own split and its own random choices) in one records
tree. The candidate kept is the one that did best on its validation split; the artifact also holds
every seed's test scores, so the gate can ask whether the gain is the procedure's or one seed's luck.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from statistics import fmean, pstdev
from typing import Any

from training_pipeline.atomic import atomic_write_text
from training_pipeline.backends.base import BackendError, DispatchRequest, DispatchResult
from training_pipeline.datasets.training_tasks import ids_path
from training_pipeline.optimizers.examples import Example, load_examples, split_by_trajectory
from training_pipeline.optimizers.programs import (
    CHARS_PER_TOKEN,
    PROGRAMS,
    Checkpoint,
    OptimisationResult,
    OptimiserConfig,
    Problem,
)
from training_pipeline.optimizers.scoring import answer_form, default_scorer, scorer_named
from training_pipeline.stages.scope import SpendCapExceeded, StageScope
from training_pipeline.stages.session import Budget, TrainingSession

ARTIFACT_NAME = "optimized_prompt.json"
RECORDS_NAME = "training_records.json"
#: fewer validation examples than this and the choice among candidates is mostly noise (said in notes)
MIN_VALIDATION = 50


def not_a_task(request: DispatchRequest) -> DispatchResult | None:
    """The skip for a dataset that is not one of elizaOS's tasks (a trace dataset of whole
    conversations has no decision whose prompt could be optimised), else None."""
    if request.format == "elizaos":
        return None
    return DispatchResult(
        False,
        reason=f"native optimises the prompt of one of elizaOS's tasks; {request.task} is a trace dataset "
        "of whole conversations: train it with a weights backend (openai, vertex, tinker, atropos), set "
        "in `dataset_overrides` or `backends`",
    )


def run_native(
    request: DispatchRequest,
    llm: Any,
    cfg: OptimiserConfig,
    budget: Budget | None,
    seeds: Sequence[int] = (0,),
) -> DispatchResult:
    declined = not_a_task(request)
    if declined is not None:
        return declined
    examples, too_long = fitting(
        load_examples(request.dataset_path, ids_path(request.dataset_path)), cfg.context_tokens
    )
    splits = {
        seed: split_by_trajectory(
            examples,
            cfg.validation_fraction,
            cfg.test_fraction,
            seed,
            max_validation=cfg.max_validation,
            max_test=cfg.max_test,
        )
        for seed in seeds
    }
    if not examples or any(not (s.train and s.validation and s.test) for s in splits.values()):
        return DispatchResult(
            False,
            reason="not enough trajectories to split into training, validation and test",
            notes=[
                f"{len(examples)} usable examples from {len({e.group for e in examples})} "
                "trajectories; at least three trajectories are needed"
            ],
        )
    # the prompt the agent actually used most often is the one to improve
    baseline = Counter(e.system for e in examples).most_common(1)[0][0]
    scorer = request.scorer or default_scorer(request.task)
    records = request.work_dir / RECORDS_NAME
    session = TrainingSession(
        f"{cfg.optimizer} {request.task}", records_path=records, llm=llm, budget=budget, log=request.log
    )
    program = PROGRAMS[cfg.optimizer]
    results: list[OptimisationResult] = []
    try:
        with session as root:
            root.set_additional_data(
                {"seeds": list(seeds), "splits": {s: v.sizes for s, v in splits.items()}}
            )
            for seed in seeds:
                split, seeded = splits[seed], replace(cfg, seed=seed)
                problem = Problem(
                    baseline,
                    split,
                    scorer_named(scorer),
                    answer_form(scorer, [e.expected for e in split.train + split.validation]),
                    cfg.max_tokens,
                )
                key = json.dumps(
                    {**asdict(seeded), "dataset": request.dataset_path.name, "n": len(examples)},
                    sort_keys=True,
                )
                checkpoint = Checkpoint(request.work_dir / f"checkpoint-seed-{seed}.json", key)

                def one_seed(
                    scope: StageScope,
                    problem: Problem = problem,
                    seeded: OptimiserConfig = seeded,
                    c=checkpoint,
                ) -> OptimisationResult:
                    return program(scope, problem, seeded, random.Random(seeded.seed), checkpoint=c)

                result = root.run_stage_or_raise(f"seed {seed}", one_seed)
                result.scorer = scorer
                results.append(result)
    except SpendCapExceeded as err:
        raise BackendError(f"{err}; partial records in {records}") from err
    chosen = max(results, key=lambda r: r.validation_score - r.validation_baseline_score)
    gains = [r.score - r.baseline_score for r in results]
    artifact = request.work_dir / ARTIFACT_NAME
    atomic_write_text(
        artifact,
        json.dumps(
            {
                "task": request.task,
                "run_id": request.run_id,
                **chosen.to_dict(),
                "seeds": [_seed_summary(r) for r in results],
                "records": str(records),
            },
            indent=2,
            ensure_ascii=False,
        )
        + "\n",
    )
    root_metrics = session.numeric_metrics()
    notes = [
        f"{cfg.optimizer}, seeds {', '.join(map(str, seeds))}: test score ({scorer}) "
        f"{chosen.baseline_score:.3f} → {chosen.score:.3f} for the candidate chosen on validation "
        f"(seed {chosen.seed}; {chosen.train_size} train / {chosen.validation_size} validation / "
        f"{chosen.test_size} test examples, split by trajectory); test gain over seeds "
        f"{fmean(gains):+.3f} ± {pstdev(gains):.3f}"
    ]
    if too_long:
        notes.append(
            f"left out {too_long} of {len(examples) + too_long} examples: each one's prompt and answer take "
            f"more than half of the model's {cfg.context_tokens}-token context (LLM_CONTEXT_TOKENS)"
        )
    if chosen.validation_size < MIN_VALIDATION:
        notes.append(
            f"only {chosen.validation_size} validation examples (fewer than {MIN_VALIDATION}): the choice "
            "among candidates is weakly supported"
        )
    return DispatchResult(
        True,
        artifact_path=str(artifact),
        notes=notes,
        details={
            "optimizer": cfg.optimizer,
            "baseline_score": chosen.baseline_score,
            "score": chosen.score,
            "scorer": scorer,
            "seeds": len(results),
            "gain_mean": fmean(gains),
            "gain_spread": pstdev(gains),
            "records": str(records),
            "llm_calls": root_metrics.get("llm_calls", 0),
            "tokens": root_metrics.get("tokens", 0),
            "too_long": too_long,
        },
    )


def fitting(examples: list[Example], context_tokens: int | None) -> tuple[list[Example], int]:
    """The examples whose system prompt, question and answer take at most half of `context_tokens`
    (estimated from their length), and how many did not: an over-long one would overflow the context
    with its demonstrations and score 0 for whichever prompt met it first."""
    if not context_tokens:
        return examples, 0
    budget = context_tokens // 2 * CHARS_PER_TOKEN
    kept = [e for e in examples if len(e.system) + len(e.user) + len(e.expected) <= budget]
    return kept, len(examples) - len(kept)


def _seed_summary(result: OptimisationResult) -> dict[str, Any]:
    """What the gate needs of each seed: its test scores, paired, and its reference's."""
    return {
        "seed": result.seed,
        "validation_baseline_score": result.validation_baseline_score,
        "validation_score": result.validation_score,
        "baseline_score": result.baseline_score,
        "score": result.score,
        "kept_baseline": result.prompt == result.baseline_prompt and not result.few_shot_examples,
        "baseline_scores": result.baseline_scores,
        "scores": result.scores,
        "reference_scores": result.reference_scores,
    }


def load_artifact(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))
