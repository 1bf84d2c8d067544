"""The loop on the local model: does an optimiser's candidate beat its baseline, and the best constant
answer, on a test split it never chose on, over several seeds, at what cost, and would the gate promote it?

    python bench/promotion_loop.py [--tasks should_respond action_planner …] [--optimizers …]
                                   [--seeds 0,1,2] [--write]

The bundled sample days are built by the daily assets (strict profile), each task's window dataset is
assembled as a training run assembles it, and the native backend runs on it (the same code as a
`training_run`, with the resource's defaults: three seeds, train / validation / test split by
trajectory, decisions held to their form). The gate (`training/promotion.py`, its defaults) judges the
artifact. One JSON line per run on stdout; `--write` puts the table in bench/README.md. Nothing is tuned
to pass. Needs the local model (`make local-llm`).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from dagster import DagsterInstance, materialize
from readme import machine, write_section

from assets.datasets.definitions import daily_graph
from assets.partitions import daily_partitions
from resources.backends import NativeBackend
from resources.defaults import default_resources
from resources.llm import LLMResource
from training_pipeline import SAMPLE_TRAJECTORIES
from training_pipeline.backends.base import DispatchRequest
from training_pipeline.optimizers.native import load_artifact
from training_pipeline.optimizers.programs import OPTIMIZERS
from training_pipeline.settings import load_settings
from training_pipeline.training.promotion import PromotionPolicy, judge_artifact
from training_pipeline.training.window import DayFiles, assemble_window


def build_windows(tasks: list[str], work: Path) -> dict[str, Path]:
    """Each task's dataset over the sample days, as a training run assembles it (with provenance)."""
    settings = load_settings(
        {"TRAINING_PIPELINE_DATA": str(work / "data"), "TRAJECTORY_DIR": str(SAMPLE_TRAJECTORIES)}
    )
    resources = default_resources(settings)
    graph = daily_graph(daily_partitions(settings))
    store = resources["training_pipeline_store"]
    days = sorted(path.stem for path in SAMPLE_TRAJECTORIES.glob("*.jsonl"))
    with DagsterInstance.ephemeral() as instance:
        for day in days:
            assert materialize(
                [*graph.assets, *graph.checks], partition_key=day, resources=resources, instance=instance
            ).success
    files = [DayFiles(day, store.datasets(day), store.privacy_report(day)) for day in days]
    return {
        task: assemble_window(task, files, work / "window" / f"{task}_trajectories.jsonl").path
        for task in tasks
    }


def run(task: str, dataset: Path, optimizer: str, seeds: list[int], work: Path) -> dict:
    backend = NativeBackend(
        llm=LLMResource(cache_dir=str(work / "llm_cache")), optimizer=optimizer, seeds=seeds, max_calls=None
    )
    run_dir = work / f"{task}-{optimizer}"
    run_dir.mkdir()
    started = time.perf_counter()
    result = backend.dispatch(DispatchRequest(task, dataset, run_dir, f"bench-{task}", log=lambda _: None))
    minutes = (time.perf_counter() - started) / 60
    if not result.invoked:
        return {"task": task, "optimizer": optimizer, "skipped": result.reason}
    artifact = load_artifact(Path(result.artifact_path or ""))
    verdict = judge_artifact(artifact, PromotionPolicy())
    return {
        "task": task,
        "optimizer": optimizer,
        "scorer": artifact["scorer"],
        "split": [artifact["train_size"], artifact["validation_size"], artifact["test_size"]],
        "best_constant": verdict.reference,
        "baseline": artifact["baseline_score"],
        "candidate": artifact["score"],
        "gain": [verdict.gain, verdict.low, verdict.high],
        "seeds": [verdict.seeds, verdict.seeds_gain, verdict.seeds_low, verdict.seeds_high],
        "seed_gains": [s["score"] - s["baseline_score"] for s in artifact["seeds"]],
        "over_constant_low": verdict.reference_low,
        "promoted": verdict.promoted,
        "reason": verdict.reason,
        "llm_calls": result.details.get("llm_calls"),
        "tokens": result.details.get("tokens"),
        "minutes": round(minutes, 1),
    }


def _row(line: dict) -> str:
    if "skipped" in line:
        return f"| {line['task']} | {line['optimizer']} | skipped: {line['skipped']} |||||||||"
    gain, low, high = line["gain"]
    seeds, pooled, pooled_low, pooled_high = line["seeds"]
    constant = "n/a" if line["best_constant"] is None else f"{line['best_constant']:.3f}"
    over = "" if pooled is None else f"{pooled:+.3f} [{pooled_low:+.3f}, {pooled_high:+.3f}]"
    return (
        f"| {line['task']} | {line['optimizer']} | {line['scorer']} | {'/'.join(map(str, line['split']))} "
        f"| {constant} | {line['baseline']:.3f} | {line['candidate']:.3f} "
        f"| {gain:+.3f} [{low:+.3f}, {high:+.3f}] "
        f"| {seeds}: {over} | {'**promoted**' if line['promoted'] else 'rejected'} | {line['llm_calls']} "
        f"| {line['tokens']} | {line['minutes']} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", nargs="*", default=["should_respond", "action_planner"])
    parser.add_argument("--optimizers", nargs="*", default=["bootstrap-fewshot"], choices=OPTIMIZERS)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--write", action="store_true", help="put the table in bench/README.md")
    args = parser.parse_args()
    seeds = [int(seed) for seed in args.seeds.split(",")]
    work = Path(tempfile.mkdtemp(prefix="tp-promotion-"))
    windows = build_windows(args.tasks, work)
    lines = []
    for task in args.tasks:
        for optimizer in args.optimizers:
            line = run(task, windows[task], optimizer, seeds, work)
            print(json.dumps(line), flush=True)
            lines.append(line)
    if args.write:
        table = "\n".join(
            [
                f"`python bench/promotion_loop.py --tasks {' '.join(args.tasks)} --optimizers "
                f"{' '.join(args.optimizers)} --seeds {args.seeds} --write` on {machine()}: the sample days "
                "(strict), SmolLM2-135M on llama.cpp, the native backend's defaults, the gate's defaults. "
                "Scores are on the test split (train/validation/test examples per seed); the gain's "
                "interval is the chosen seed's, the pooled one is over every seed's test split.",
                "",
                "| task | optimizer | scorer | split | best constant | baseline | candidate | gain [95%] "
                "| seeds: pooled gain | gate | calls | tokens | minutes |",
                "|---|---|---|---|---:|---:|---:|---|---|---|---:|---:|---:|",
                *map(_row, lines),
                "",
                *(f"- {line['task']}, {line['optimizer']}: {line.get('reason', '')}" for line in lines),
            ]
        )
        write_section("promotion_loop", table)


if __name__ == "__main__":
    main()
