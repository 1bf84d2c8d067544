"""The native backend: optimise a task's prompt in-process, leaving a records tree and an artifact."""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from training_pipeline.atomic import atomic_write_text
from training_pipeline.backends.base import BackendError, DispatchRequest, DispatchResult
from training_pipeline.datasets.training_tasks import ids_path
from training_pipeline.optimizers.examples import load_examples, split_by_trajectory
from training_pipeline.optimizers.programs import PROGRAMS, Checkpoint, OptimiserConfig
from training_pipeline.optimizers.scoring import default_scorer, scorer_named
from training_pipeline.stages.scope import SpendCapExceeded
from training_pipeline.stages.session import Budget, TrainingSession

ARTIFACT_NAME = "optimized_prompt.json"
RECORDS_NAME = "training_records.json"


def run_native(
    request: DispatchRequest, llm: Any, cfg: OptimiserConfig, budget: Budget | None
) -> DispatchResult:
    examples = load_examples(request.dataset_path, ids_path(request.dataset_path))
    train, validation = split_by_trajectory(examples, cfg.validation_fraction, cfg.seed)
    if not train or not validation:
        return DispatchResult(
            False,
            reason="not enough trajectories to split into training and validation",
            notes=[
                f"{len(examples)} usable examples from {len({e.group for e in examples})} "
                "trajectories; at least two trajectories are needed"
            ],
        )
    # the prompt the agent actually used most often is the one to improve
    baseline = Counter(e.system for e in train).most_common(1)[0][0]
    records = request.work_dir / RECORDS_NAME
    config_key = json.dumps(
        {**asdict(cfg), "dataset": request.dataset_path.name, "n": len(examples)}, sort_keys=True
    )
    session = TrainingSession(
        f"{cfg.optimizer} {request.task}", records_path=records, llm=llm, budget=budget, log=request.log
    )
    program = PROGRAMS[cfg.optimizer]
    scorer = request.scorer or default_scorer(request.task)
    try:
        with session as root:
            root.set_additional_data({"train": len(train), "validation": len(validation), "seed": cfg.seed})
            result = program(
                root,
                baseline,
                train,
                validation,
                scorer_named(scorer),
                cfg,
                random.Random(cfg.seed),
                checkpoint=Checkpoint(request.work_dir / "checkpoint.json", config_key),
            )
    except SpendCapExceeded as err:
        raise BackendError(f"{err}; partial records in {records}") from err
    result.train_size, result.validation_size, result.scorer = len(train), len(validation), scorer
    artifact = request.work_dir / ARTIFACT_NAME
    atomic_write_text(
        artifact,
        json.dumps(
            {"task": request.task, "run_id": request.run_id, **result.to_dict(), "records": str(records)},
            indent=2,
            ensure_ascii=False,
        )
        + "\n",
    )
    root_metrics = session.numeric_metrics()
    return DispatchResult(
        True,
        artifact_path=str(artifact),
        notes=[
            f"{cfg.optimizer}: validation score ({scorer}) {result.baseline_score:.3f} → {result.score:.3f} "
            f"({len(train)} train / {len(validation)} validation examples, split by trajectory)"
        ],
        details={
            "optimizer": cfg.optimizer,
            "baseline_score": result.baseline_score,
            "score": result.score,
            "scorer": scorer,
            "records": str(records),
            "llm_calls": root_metrics.get("llm_calls", 0),
            "tokens": root_metrics.get("tokens", 0),
        },
    )


def load_artifact(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))
