"""A backfill of the daily assets: one run per day against the days in one run (the assets'
`BackfillPolicy.single_run`), and the core build of the same files, on the README's SQLite instance.

    python bench/backfill.py [--days 30,90] [--per-day 2000] [--write]

Each run is a process of its own that loads the code location and opens the instance, as a run worker
does (`dagster api execute_run`), so a run's fixed cost is in the figure: one process per day for
"a run per day", one process for all the days in "one run". The core build (`build-datasets`'s pass,
no Dagster, no Parquet store, no checks) reads the same files in one process. Wall time, and CPU
time of the processes and everything under them, pool workers included (user + system).

`--write` puts the table into bench/README.md, between this bench's markers.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from instances import SETUP_DAY, code_location, instance_homes, instance_of
from process_tree import adopt_orphans, reap_orphans
from readme import write_section

from training_pipeline.samples import write_long_sample

FIRST = date(2026, 6, 1)


def core_child(source: Path, out: Path, days: list[str]) -> None:
    from training_pipeline.datasets.build import build_datasets
    from training_pipeline.privacy.filter import PrivacyFilter

    for day in days:
        build_datasets(source / f"{day}.jsonl", out / day, PrivacyFilter("strict"), workers=0)


def dagster_child(source: Path, data: Path, first: str, last: str) -> None:
    """`datasets_job` over first..last (one day when they are equal) as one run, checks included."""
    defs = code_location(source, data)
    job = defs.resolve_job_def("datasets_job")
    tags = (
        {"dagster/partition": first}
        if first == last
        else {"dagster/asset_partition_range_start": first, "dagster/asset_partition_range_end": last}
    )
    with instance_of("sqlite") as instance:
        assert job.execute_in_process(instance=instance, tags=tags).success


def timed(args: list[str], environment: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of `args` in a child: the child and every process under it (its pool's
    fork server and workers, adopted and reaped here once the child has gone: `adopt_orphans`)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, *args], env=environment, capture_output=True, text=True)
    wall = time.perf_counter() - started
    reap_orphans()
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def measure(
    days: int, per_day: int, work: Path, environment: dict[str, str]
) -> dict[str, tuple[float, float]]:
    source = work / f"in-{days}"
    source.mkdir()
    names = [(FIRST + timedelta(days=i)).isoformat() for i in range(days)]
    for name in names:
        write_long_sample(source / f"{name}.jsonl", per_day, day=date.fromisoformat(name))
    figures = {"core": timed(["--core", str(source), str(work / "core"), *names], environment)}
    shutil.rmtree(work / "core")
    wall = cpu = 0.0
    for name in names:
        step_wall, step_cpu = timed(
            ["--dagster", str(source), str(work / "per-day"), name, name], environment
        )
        wall, cpu = wall + step_wall, cpu + step_cpu
    figures["per_day"] = (wall, cpu)
    shutil.rmtree(work / "per-day")
    figures["one_run"] = timed(
        ["--dagster", str(source), str(work / "one-run"), names[0], names[-1]], environment
    )
    shutil.rmtree(work / "one-run")
    shutil.rmtree(source)
    return figures


def table(results: dict[int, dict[str, tuple[float, float]]], per_day: int) -> str:
    machine = f"{os.cpu_count()} cores, Python {platform.python_version()}, {datetime.now(UTC):%Y-%m-%d}"
    lines = [
        f"`python bench/backfill.py --days {','.join(map(str, results))} --per-day {per_day}` on {machine}; "
        "one measurement each (a 90-day backfill is minutes; rerun for the spread). Seconds, wall / CPU.",
        "",
        "| days | core build | one run per day | one run (single-run policy) | per-day ÷ one run |",
        "|---:|---:|---:|---:|---:|",
    ]
    for days, figures in results.items():
        core, per, one = figures["core"], figures["per_day"], figures["one_run"]
        lines.append(
            f"| {days} | {core[0]:.1f} / {core[1]:.1f} | {per[0]:.1f} / {per[1]:.1f} | "
            f"{one[0]:.1f} / {one[1]:.1f} | {per[0] / one[0]:.2f}x wall, {per[1] / one[1]:.2f}x CPU |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", default="30,90")
    parser.add_argument("--per-day", type=int, default=2000)
    parser.add_argument("--write", action="store_true", help="put the table into bench/README.md")
    args = parser.parse_args()
    adopt_orphans()
    work = Path(tempfile.mkdtemp(prefix="tp-backfill-"))
    results = {}
    try:
        with instance_homes(["sqlite"], work) as environments:
            environment = environments["sqlite"]
            (work / "no-input").mkdir()
            setup = SETUP_DAY.isoformat()  # the instance's databases exist before the runs measured
            timed(["--dagster", str(work / "no-input"), str(work / "setup"), setup, setup], environment)
            for days in (int(value) for value in args.days.split(",")):
                results[days] = measure(days, args.per_day, work, environment)
                print(table({days: results[days]}, args.per_day).splitlines()[-1], flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rendered = table(results, args.per_day)
    print(rendered)
    if args.write:
        write_section("backfill", rendered)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--core"]:
        core_child(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4:])
    elif sys.argv[1:2] == ["--dagster"]:
        dagster_child(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4], sys.argv[5])
    else:
        main()
