"""What Dagster adds to a day: the daily graph materialised on a real instance, against the core's
one-pass build of the same file.

    python bench/dagster_overhead.py [N] [WORKERS] [--rounds R]

WORKERS: processes of the day's pass (`TRAINING_PIPELINE_WORKERS`; default 0, one per core).

Each measurement runs in a process of its own, as a user's would: the core build in a process that
has imported the pipeline but not Dagster (as `training-pipeline build-datasets` runs), the Dagster day
in one that has imported Dagster and made its instance, where the day's run is the first (its pool's
fork server starts in it, as in every new run's process). Both set up before the clock starts (imports,
the strict rule set). R rounds alternate the two, so both see the same hours of this machine, whose
speed moves by a third within minutes; the ratio is of the medians, with each round's ratio beside it.

The Dagster path does more than the core (a Parquet store of the validated day and of the filtered day,
the detect-secrets inspection of every message, made in the pass and confirmed by the 17 asset checks,
event-log writes), so the figure is the price of lineage, checks and partition bookkeeping.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from training_pipeline.samples import write_long_sample

DAY = "2026-11-01"


def core_child(source: Path, out: Path) -> None:
    from training_pipeline.datasets.build import build_datasets
    from training_pipeline.privacy.filter import PrivacyFilter

    privacy = PrivacyFilter("strict")
    privacy.redact("warm the rules and their gate")
    started = time.perf_counter()
    build_datasets(source, out, privacy, workers=1)
    print(time.perf_counter() - started)


def dagster_child(source: Path, data: Path, workers: int) -> None:
    """The day with its checks, then the assets alone (the pool's server then running): seconds of
    each."""
    from dagster import DagsterInstance, materialize

    from assets.datasets.definitions import daily_graph
    from assets.partitions import daily_partitions
    from resources.defaults import default_resources
    from training_pipeline.privacy.filter import PrivacyFilter
    from training_pipeline.settings import load_settings

    PrivacyFilter("strict").redact("warm the rules and their gate")  # as the core's child does
    settings = load_settings(
        {
            "TRAINING_PIPELINE_DATA": str(data),
            "TRAJECTORY_DIR": str(source),
            "TRAINING_PIPELINE_WORKERS": str(workers),
        }
    )
    resources = default_resources(settings)
    graph = daily_graph(daily_partitions(settings))
    seconds = []
    for selection in ([*graph.assets, *graph.checks], graph.assets):
        with DagsterInstance.ephemeral() as instance:
            started = time.perf_counter()
            result = materialize(selection, partition_key=DAY, resources=resources, instance=instance)
            seconds.append(time.perf_counter() - started)
            assert result.success
    print(*seconds)


def measure(*args: str) -> list[float]:
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    return [float(value) for value in done.stdout.split()]


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def main(n: int, workers: int, rounds: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="tp-overhead-"))
    source = work / "in"
    source.mkdir()
    write_long_sample(source / f"{DAY}.jsonl", n)
    print(f"{n} trajectories, {(source / f'{DAY}.jsonl').stat().st_size / 1e6:.1f} MB, one day")
    core: list[float] = []
    checked: list[float] = []
    assets: list[float] = []
    try:
        for round_ in range(rounds):
            core += measure("--core", str(source), str(work / f"core-{round_}"))
            day, alone = measure("--dagster", str(source), str(work / f"data-{round_}"), str(workers))
            checked.append(day)
            assets.append(alone)
            print(
                f"round {round_ + 1}: core {core[-1]:.2f} s, with checks {day:.2f} s "
                f"({day / core[-1]:.2f}x), assets only {alone:.2f} s ({alone / core[-1]:.2f}x)"
            )
    finally:
        shutil.rmtree(work)  # each round writes the day's outputs twice: gigabytes at 10,000
    base = statistics.median(core)
    print(f"{'run':<34} {'median (min-max) s':>20} {'vs core':>8}")
    print(f"{'core build (1 process, strict)':<34} {spread(core):>20} {1:>7.2f}x")
    for name, values in (("with checks", checked), ("assets only (pool warm)", assets)):
        ratios = ", ".join(f"{value / seconds:.2f}" for value, seconds in zip(values, core, strict=True))
        median = statistics.median(values)
        print(f"{'Dagster day, ' + name:<34} {spread(values):>20} {median / base:>7.2f}x  (rounds: {ratios})")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--core"]:
        core_child(Path(sys.argv[2]), Path(sys.argv[3]))
    elif sys.argv[1:2] == ["--dagster"]:
        dagster_child(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
    else:
        parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
        parser.add_argument("n", nargs="?", type=int, default=5000)
        parser.add_argument("workers", nargs="?", type=int, default=0)
        parser.add_argument("--rounds", type=int, default=5)
        options = parser.parse_args()
        main(options.n, options.workers, options.rounds)
