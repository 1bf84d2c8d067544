"""The promotion gate on the local model: does an optimiser's candidate beat its baseline on held-out
examples, by how much, at what cost, and would the gate promote it?

    python bench/promotion_loop.py sample            # the bundled sample days, every optimiser
    python bench/promotion_loop.py generated N       # one generated day of N trajectories

For each optimiser it runs the native backend (the same code as a `training_run`) on the `response`
task's dataset, then the gate (`training/promotion.py`) on the per-example held-out scores, and prints
one JSON line: baseline and candidate means, the gain with its 95% interval, n, promoted or not, the
calls, tokens and wall time. Nothing is tuned to pass: the gate runs with its defaults. Needs the local
model (`make local-llm`); answers are capped at `--max-tokens` to keep the run within minutes.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from datetime import date
from pathlib import Path

from dagster import DagsterInstance, materialize

from assets.datasets.definitions import daily_graph
from assets.partitions import daily_partitions
from resources.backends import NativeBackend
from resources.defaults import default_resources
from resources.llm import LLMResource
from training_pipeline import SAMPLE_TRAJECTORIES, jscompat
from training_pipeline.backends.base import DispatchRequest
from training_pipeline.optimizers.native import load_artifact
from training_pipeline.optimizers.programs import OPTIMIZERS
from training_pipeline.samples import day_of_trajectories
from training_pipeline.settings import load_settings
from training_pipeline.training.promotion import PromotionPolicy, judge_artifact
from training_pipeline.training.window import DayFiles, assemble_window

TASK = "response"


def build_window(source: Path, days: list[str], work: Path) -> Path:
    """The task's dataset over `days` of `source`, as a training run assembles it (with provenance)."""
    settings = load_settings({"TRAINING_PIPELINE_DATA": str(work / "data"), "TRAJECTORY_DIR": str(source)})
    resources = default_resources(settings)
    graph = daily_graph(daily_partitions(settings))
    store = resources["training_pipeline_store"]
    with DagsterInstance.ephemeral() as instance:
        for day in days:
            assert materialize(
                [*graph.assets, *graph.checks], partition_key=day, resources=resources, instance=instance
            ).success
    files = [DayFiles(day, store.datasets(day), store.privacy_report(day)) for day in days]
    window = assemble_window(TASK, files, work / "window" / f"{TASK}_trajectories.jsonl")
    return window.path


def generated_day(count: int, work: Path) -> tuple[Path, list[str]]:
    source = work / "generated"
    source.mkdir(parents=True)
    day = date(2026, 11, 2)
    with (source / f"{day}.jsonl").open("w", encoding="utf-8") as out:
        for trajectory in day_of_trajectories(day, count, seed=5):
            out.write(jscompat.dumps(trajectory) + "\n")
    return source, [day.isoformat()]


def run(dataset: Path, optimizer: str, max_tokens: int, work: Path) -> dict:
    llm = LLMResource(cache_dir=str(work / "llm_cache"))
    backend = NativeBackend(
        llm=llm,
        optimizer=optimizer,
        rounds=2,
        variants=3,
        population=4,
        generations=2,
        answer_tokens=max_tokens,
    )
    run_dir = work / optimizer
    run_dir.mkdir()
    started = time.perf_counter()
    result = backend.dispatch(
        DispatchRequest(TASK, dataset, run_dir, f"bench-{optimizer}", log=lambda _: None)
    )
    seconds = time.perf_counter() - started
    if not result.invoked:
        return {"optimizer": optimizer, "skipped": result.reason}
    artifact = load_artifact(Path(result.artifact_path or ""))
    verdict = judge_artifact(artifact, PromotionPolicy())
    return {
        "optimizer": optimizer,
        "scorer": artifact["scorer"],
        "train": artifact["train_size"],
        "held_out": verdict.n,
        "baseline": round(artifact["baseline_score"], 4),
        "candidate": round(artifact["score"], 4),
        "gain": round(verdict.gain, 4),
        "interval": [round(verdict.low, 4), round(verdict.high, 4)],
        "promoted": verdict.promoted,
        "candidate_is_baseline": artifact["prompt"] == artifact["baseline_prompt"],
        "llm_calls": result.details.get("llm_calls"),
        "tokens": result.details.get("tokens"),
        "seconds": round(seconds, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("source", choices=["sample", "generated"])
    parser.add_argument("count", nargs="?", type=int, default=2000)
    parser.add_argument("--optimizers", nargs="*", default=list(OPTIMIZERS))
    parser.add_argument("--max-tokens", type=int, default=96)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tp-promotion-"))
    if args.source == "sample":
        days = sorted(p.stem for p in SAMPLE_TRAJECTORIES.glob("*.jsonl"))
        dataset = build_window(SAMPLE_TRAJECTORIES, days, work)
    else:
        source, days = generated_day(args.count, work)
        dataset = build_window(source, days, work)
    examples = sum(1 for _ in dataset.open(encoding="utf-8"))
    print(json.dumps({"source": args.source, "days": days, "examples": examples}), flush=True)
    for optimizer in args.optimizers:
        print(json.dumps(run(dataset, optimizer, args.max_tokens, work)), flush=True)


if __name__ == "__main__":
    main()
