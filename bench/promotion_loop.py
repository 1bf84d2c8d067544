"""The loop on the local model, through Dagster as the UI runs it: does an optimiser's candidate beat its
baseline, and the best constant answer, on a test split it never chose on, over several seeds; would the
gate promote it; and does the task's evaluation file score it above the agent's own prompt?

    python bench/promotion_loop.py [--tasks should_respond action_planner …] [--optimizer …]
                                   [--seeds 0,1,2] [--max-validation N] [--max-test N] [--write]

The bundled sample days are materialised by the daily assets (strict profile); then, per task,
`training_job` runs with the native backend (its defaults but the optimiser and seeds: train /
validation / test split by trajectory, decisions held to their form) and the gate judges the candidate
(`optimized_prompt`, the gate's defaults); a promoted candidate is evaluated by `prompt_evaluation`
(the bundled evaluation file of the task, as written and with the promoted part). One JSON line per run
on stdout; `--write` puts the tasks' rows in bench/README.md's table, keeping the rows of tasks not run
(each row's footnote says how and when it was measured). Nothing is tuned to pass. Needs the local
model (`make local-llm`).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from dagster import DagsterInstance, Definitions, materialize
from readme import machine, read_section, write_section

from assets.datasets.definitions import daily_graph
from assets.keys import UNPREFIXED
from assets.partitions import GROUP
from assets.training.assets import training_assets
from assets.training.automation import training_job
from assets.training.evaluation import prompt_evaluation_asset
from resources.backends import NativeBackend
from resources.defaults import default_resources
from resources.llm import LLMResource
from training_pipeline import SAMPLE_TRAJECTORIES
from training_pipeline.datasets.training_tasks import TASKS
from training_pipeline.optimizers.native import load_artifact
from training_pipeline.optimizers.programs import OPTIMIZERS
from training_pipeline.settings import load_settings
from training_pipeline.training.promotion import PromotionPolicy, judge_artifact
from training_pipeline.training.run_records import RunStore

TRAINING = training_assets(UNPREFIXED, GROUP)
TRAINING_JOB = training_job(UNPREFIXED, TRAINING)
PROMPT_EVALUATION = prompt_evaluation_asset(UNPREFIXED, GROUP)


def materialise_days(work: Path, instance: DagsterInstance) -> Path:
    """The sample days' layers in `instance`, as the nightly automation makes them; the data folder."""
    data = work / "data"
    settings = load_settings(
        {"TRAINING_PIPELINE_DATA": str(data), "TRAJECTORY_DIR": str(SAMPLE_TRAJECTORIES)}
    )
    resources = default_resources(settings)
    assets = daily_graph(settings)
    for day in sorted(path.stem for path in SAMPLE_TRAJECTORIES.glob("*.jsonl")):
        assert materialize(assets, partition_key=day, resources=resources, instance=instance).success
    return data


def _resources(
    data: Path, cache: Path, optimizer: str, seeds: list[int], caps: dict[str, int]
) -> dict[str, Any]:
    resources = default_resources(load_settings({"TRAINING_PIPELINE_DATA": str(data)}))
    llm = LLMResource(cache_dir=str(cache))
    resources["training_pipeline_llm"] = llm
    backends = resources["training_pipeline_backends"]
    resources["training_pipeline_backends"] = backends.model_copy(
        update={"native": NativeBackend(llm=llm, optimizer=optimizer, seeds=seeds, max_calls=None, **caps)}
    )
    return resources


def run(
    task: str,
    optimizer: str,
    seeds: list[int],
    caps: dict[str, int],
    data: Path,
    cache: Path,
    instance: DagsterInstance,
) -> dict:
    resources = _resources(data, cache, optimizer, seeds, caps)
    started = time.perf_counter()
    result = (
        Definitions(
            assets=TRAINING.assets,
            asset_checks=[TRAINING.promotion_gate],
            jobs=[TRAINING_JOB],
            resources=resources,
        )
        .resolve_job_def(TRAINING_JOB.name)
        .execute_in_process(
            partition_key=task,
            instance=instance,
            run_config={"ops": {"training_run": {"config": {"backend": "native"}}}},
            raise_on_error=False,
        )
    )
    minutes = (time.perf_counter() - started) / 60
    record = RunStore(data).find(dagster_run_id=result.run_id, task=task)
    if record is None or record.status != "succeeded" or not record.artifact_path:
        why = record.reason if record else "training_job left no run record (its run failed before dispatch)"
        return {"task": task, "optimizer": optimizer, "skipped": why}
    artifact = load_artifact(Path(record.artifact_path))
    verdict = judge_artifact(artifact, PromotionPolicy())
    line = {
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
        "llm_calls": record.details.get("llm_calls"),
        "tokens": record.details.get("tokens"),
        "minutes": round(minutes, 1),
        "evaluation": None,
    }
    if verdict.promoted:
        evaluated = materialize(
            [PROMPT_EVALUATION],
            partition_key=task,
            instance=instance,
            resources=resources,
            raise_on_error=False,
        )
        summary = RunStore(data).load(record.run_id).details.get("evaluation") if evaluated.success else None
        line["evaluation"] = (
            {"promoted": summary["promoted_score"], "baseline": summary["baseline_score"]}
            if summary
            else "failed"
        )
    return line


def _row(line: dict) -> str:
    if "skipped" in line:
        return f"| {line['task']} | skipped (below) ||||||||||"
    evaluation = line["evaluation"]
    evaluated = (
        "—"
        if evaluation is None
        else evaluation
        if isinstance(evaluation, str)
        else f"{evaluation['promoted']:.3f} vs {evaluation['baseline']:.3f}"
    )
    gain, low, high = line["gain"]
    seeds, pooled, pooled_low, pooled_high = line["seeds"]
    constant = "n/a" if line["best_constant"] is None else f"{line['best_constant']:.3f}"
    over = "" if pooled is None else f"{pooled:+.3f} [{pooled_low:+.3f}, {pooled_high:+.3f}]"
    return (
        f"| {line['task']} | {'/'.join(map(str, line['split']))} "
        f"| {constant} | {line['baseline']:.3f} | {line['candidate']:.3f} "
        f"| {gain:+.3f} [{low:+.3f}, {high:+.3f}] "
        f"| {seeds}: {over} | {'**promoted**' if line['promoted'] else 'rejected'} | {evaluated} "
        f"| {int(line['llm_calls'] or 0)} | {int(line['tokens'] or 0)} | {line['minutes']} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", nargs="*", default=["should_respond", "action_planner"])
    parser.add_argument("--optimizer", default=DEFAULT_OPTIMIZER, choices=OPTIMIZERS)
    parser.add_argument("--seeds", default=DEFAULT_SEEDS)
    parser.add_argument("--max-validation", type=int, help="the native backend's cap (default: its own)")
    parser.add_argument("--max-test", type=int, help="the native backend's cap (default: its own)")
    parser.add_argument(
        "--cache",
        type=Path,
        help="the LLM's response cache to keep between runs (default: a temporary one): a rerun pays only "
        "for questions not asked before, and its rows' footnotes say --cache",
    )
    parser.add_argument("--write", action="store_true", help="put the table in bench/README.md")
    args = parser.parse_args()
    seeds = [int(seed) for seed in args.seeds.split(",")]
    caps = {
        name: value
        for name, value in (("max_validation", args.max_validation), ("max_test", args.max_test))
        if value is not None
    }
    lines = []
    with (
        tempfile.TemporaryDirectory(prefix="tp-promotion-") as folder,
        DagsterInstance.ephemeral() as instance,
    ):
        work = Path(folder)
        data = materialise_days(work, instance)
        for task in args.tasks:
            line = run(task, args.optimizer, seeds, caps, data, args.cache or work / "llm_cache", instance)
            print(json.dumps(line), flush=True)
            lines.append(line)
    if args.write:
        write_section(SECTION, _table(lines, args, read_section(SECTION)))


SECTION = "promotion_loop"
DEFAULT_OPTIMIZER, DEFAULT_SEEDS = "nearest-fewshot", "0,1,2"
HEADER = (
    "| task | train/val/test | best constant | baseline | candidate | gain [95%] "
    "| seeds: pooled gain | gate | evaluation file | calls | tokens | minutes |"
)


def _table(lines: list[dict], args: argparse.Namespace, current: str) -> str:
    """The table with this run's rows in place of its tasks' old ones; a note per row says the options
    that were not the defaults, the machine, and why the gate refused a candidate."""
    rows = {line.split(" | ")[0][2:]: line for line in current.splitlines() if line.startswith("| ")}
    notes = {  # task -> how its row was measured; a note may name several tasks (`- a, b: …`)
        task: how
        for line in current.splitlines()
        if line.startswith("- ")
        for tasks, how in [line[2:].split(": ", 1)]
        for task in tasks.split(", ")
    }
    rows.pop("task", None)
    options = " ".join(
        option
        for option, default in (
            (f"--optimizer {args.optimizer}", args.optimizer == DEFAULT_OPTIMIZER),
            (f"--seeds {args.seeds}", args.seeds == DEFAULT_SEEDS),
            (f"--max-validation {args.max_validation}", args.max_validation is None),
            (f"--max-test {args.max_test}", args.max_test is None),
            # answers cached by an earlier run: the row's calls and minutes are fewer
            ("--cache", not args.cache),
        )
        if not default
    )
    for line in lines:
        rows[line["task"]] = _row(line)
        refused = (
            f": {line['skipped']}" if "skipped" in line else "" if line["promoted"] else f": {line['reason']}"
        )
        notes[line["task"]] = (f"`{options}`, " if options else "") + machine() + refused
    order = [task for task in TASKS if task in rows] + sorted(set(rows) - set(TASKS))
    alike: dict[str, list[str]] = {}  # one note for the tasks measured alike
    for task in order:
        if task in notes:
            alike.setdefault(notes[task], []).append(task)
    return "\n".join(
        [
            f"`python bench/promotion_loop.py --tasks TASK --write` (`--optimizer {DEFAULT_OPTIMIZER} "
            f"--seeds {DEFAULT_SEEDS}`), other options as a row's note says:",
            "",
            HEADER,
            "|---|---|---:|---:|---:|---|---|---|---|---:|---:|---:|",
            *(rows[task] for task in order),
            "",
            *(f"- {', '.join(tasks)}: {how}" for how, tasks in alike.items()),
        ]
    )


if __name__ == "__main__":
    main()
