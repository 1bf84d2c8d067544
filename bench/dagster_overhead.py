"""What Dagster adds to a day: the daily graph materialised on a real instance, against the core's
one-pass build of the same file.

    python bench/dagster_overhead.py [N] [WORKERS] [--rounds R] [--instances KINDS] [--write]

WORKERS: processes of the day's pass (`TRAINING_PIPELINE_WORKERS`; default 0, one per core).
KINDS: where the Dagster days keep their runs and events (`instances.py`; default the in-memory
instance and the README's SQLite one). A real instance's databases are made by a run of an empty day
before the rounds, as a deployment's exist before its runs.

Each measurement runs in a process of its own, as a user's would: the core build in a process that
has imported the pipeline but not Dagster (as `training-pipeline build-datasets` runs), the Dagster day
in one that has loaded the code location and made its instance, as a run's process does before its run
(`dagster api execute_run`), and runs `datasets_job` for the day as its first run (its pool's fork
server starts in it, as in every new run's process). Both set up before the clock starts (imports,
the strict rule set). R rounds alternate them, so all see the same hours of this machine, whose
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

from instances import KINDS, SETUP_DAY, code_location, instance_homes, instance_of
from readme import machine, spread, write_section

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


def dagster_child(source: Path, data: Path, workers: int, kind: str, days: list[str]) -> None:
    """The day's `datasets_job` (its checks included), then its assets alone (the pool's server then
    running), on an instance of `kind`, in a process that loaded the code location as a run's does:
    seconds of each (of the first alone when `days` names one day)."""
    from dagster import materialize

    from training_pipeline.privacy.filter import PrivacyFilter

    defs = code_location(source, data, workers)
    job = defs.resolve_job_def("datasets_job")
    keys = job.asset_layer.selected_asset_keys
    assets = [asset for asset in defs.assets or () if set(getattr(asset, "keys", ())) & keys]
    PrivacyFilter("strict").redact("warm the rules and their gate")  # as the core's child does
    seconds = []
    for day, checked in zip(days, (True, False), strict=False):
        with instance_of(kind) as instance:
            started = time.perf_counter()
            if checked:
                result = job.execute_in_process(partition_key=day, instance=instance)
            else:
                result = materialize(assets, partition_key=day, resources=defs.resources, instance=instance)
            seconds.append(time.perf_counter() - started)
            assert result.success
    print(*seconds)


def measure(*args: str, environment: dict[str, str] | None = None) -> list[float]:
    done = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=False, env=environment
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    return [float(value) for value in done.stdout.split()]


def main(n: int, workers: int, rounds: int, kinds: list[str], write: bool = False) -> None:
    work = Path(tempfile.mkdtemp(prefix="tp-overhead-"))
    source = work / "in"
    source.mkdir()
    (work / "no-input").mkdir()
    write_long_sample(source / f"{DAY}.jsonl", n)
    print(f"{n} trajectories, {(source / f'{DAY}.jsonl').stat().st_size / 1e6:.1f} MB, one day")
    core: list[float] = []
    checked: dict[str, list[float]] = {kind: [] for kind in kinds}
    assets: dict[str, list[float]] = {kind: [] for kind in kinds}
    try:
        with instance_homes(kinds, work) as environments:
            for kind in kinds:
                if kind != "ephemeral":
                    setup = (
                        "--dagster",
                        str(work / "no-input"),
                        str(work / f"setup-{kind}"),
                        "1",
                        kind,
                        SETUP_DAY.isoformat(),
                    )
                    measure(*setup, environment=environments[kind])
            for round_ in range(rounds):
                core += measure("--core", str(source), str(work / f"core-{round_}"))
                line = f"round {round_ + 1}: core {core[-1]:.2f} s"
                for kind in kinds:
                    data = work / f"data-{kind}-{round_}"
                    day, alone = measure(
                        "--dagster",
                        str(source),
                        str(data),
                        str(workers),
                        kind,
                        DAY,
                        DAY,
                        environment=environments[kind],
                    )
                    shutil.rmtree(data)  # the day's outputs twice: gigabytes at 10,000
                    checked[kind].append(day)
                    assets[kind].append(alone)
                    line += f"; {kind} {day:.2f} s ({day / core[-1]:.2f}x), assets only {alone:.2f} s"
                print(line)
    finally:
        shutil.rmtree(work)
    base = statistics.median(core)
    lines = [
        f"`python bench/dagster_overhead.py {n} --rounds {rounds} --instances {','.join(kinds)}` on "
        f"{machine()}: {n:,} trajectories, one day, `strict`. Seconds, median (min–max) of the rounds.",
        "",
        "| run | seconds | ÷ core build |",
        "|---|---:|---:|",
        f"| core build (one process) | {spread(core)} | 1.00x |",
    ]
    for kind in kinds:
        runs = (("with its checks", checked[kind]), ("assets only, pool warm", assets[kind]))
        for name, values in runs:
            lines.append(
                f"| Dagster day ({kind}), {name} | {spread(values)} "
                f"| {statistics.median(values) / base:.2f}x |"
            )
    table = "\n".join(lines)
    print(table)
    if write:
        write_section("dagster_overhead", table)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--core"]:
        core_child(Path(sys.argv[2]), Path(sys.argv[3]))
    elif sys.argv[1:2] == ["--dagster"]:
        dagster_child(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6:])
    else:
        parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
        parser.add_argument("n", nargs="?", type=int, default=5000)
        parser.add_argument("workers", nargs="?", type=int, default=0)
        parser.add_argument("--rounds", type=int, default=5)
        parser.add_argument(
            "--instances", default="ephemeral,sqlite", help=f"comma-separated, of {', '.join(KINDS)}"
        )
        parser.add_argument("--write", action="store_true", help="put the table into bench/README.md")
        options = parser.parse_args()
        kinds = options.instances.split(",")
        if not set(kinds) <= set(KINDS):
            parser.error(f"unknown instance in {options.instances!r}; choose of {', '.join(KINDS)}")
        main(options.n, options.workers, options.rounds, kinds, options.write)
