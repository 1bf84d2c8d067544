"""A day of a million LLM calls through the daily Dagster assets (with their checks), in bounded memory.

    python bench/million_calls.py [CALLS] [--instance KIND] [--write]   # 1,000,000; sqlite (instances.py)

Generates one UTC day of trajectories holding CALLS LLM calls in all, runs that day's `datasets_job`
(trajectories → filtered_trajectories → the five datasets, 17 checks) in a child process that loaded
the code location as a run's process does, on the instance (`instances.py`; by default the README's
SQLite one, its databases made by a run of an empty day first), and prints the wall time, the peak
RSS of its largest process and of all its processes (the pool's workers included), and the day's
counts. `--write` puts the figures into bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

from instances import KINDS, SETUP_DAY, code_location, instance_homes, instance_of
from process_tree import Peaks
from readme import machine, write_section

DAY = date(2026, 11, 1)


def generate(path: Path, calls: int) -> tuple[int, int]:
    from training_pipeline.samples import day_of_trajectories

    written = trajectories = 0
    batch = 50_000
    with path.open("w") as handle:
        seed = 0
        while written < calls:
            for trajectory in day_of_trajectories(DAY, batch, seed=seed):
                handle.write(json.dumps(trajectory) + "\n")
                trajectories += 1
                written += sum(len(step.get("llmCalls") or ()) for step in trajectory["steps"])
                if written >= calls:
                    break
            seed += 1
    return trajectories, written


def materialise(source: Path, data: Path, kind: str, day: date) -> None:
    """The child: one day's `datasets_job` on an instance of `kind`, in a process that loaded the code
    location as a run's does; its metadata counts printed as JSON."""
    job = code_location(source, data).resolve_job_def("datasets_job")
    with instance_of(kind) as instance:
        result = job.execute_in_process(partition_key=day.isoformat(), instance=instance)
    counts = {}
    for event in result.get_asset_materialization_events():
        metadata = event.materialization.metadata
        if "examples" in metadata:
            counts[event.asset_key.to_user_string()] = metadata["examples"].value
    checks = [e.passed for e in result.get_asset_check_evaluations()]
    print(
        json.dumps(
            {
                "success": result.success,
                "examples": counts,
                "checks_passed": sum(checks),
                "checks": len(checks),
            }
        )
    )


def child(source: Path, data: Path, kind: str, day: date, script: Path = Path(__file__)) -> list[str]:
    """The command of a child's day; `script`: another tree's copy of this file (`side_by_side.py`)."""
    return [sys.executable, str(script), "--child", str(source), str(data), kind, day.isoformat()]


def main(calls: int, kind: str, write: bool) -> None:
    work = Path(tempfile.mkdtemp(prefix="tp-million-"))
    try:
        with instance_homes([kind], work) as environments:
            figures = run(calls, work, kind, environments[kind])
        if write:
            write_section(
                "million_calls",
                f"`python bench/million_calls.py {calls}{'' if kind == 'sqlite' else f' --instance {kind}'}` "
                f"on {machine()}, one measurement: {figures}.",
            )
    finally:
        shutil.rmtree(work)  # the day's input and outputs: over 2 GB


def run(calls: int, work: Path, kind: str, environment: dict[str, str]) -> str:
    """The day's figures, said in one sentence."""
    if kind != "ephemeral":
        (work / "no-input").mkdir()
        setup = child(work / "no-input", work / "setup", kind, SETUP_DAY)
        subprocess.run(setup, env=environment, check=True, capture_output=True)
    source = work / "in"
    source.mkdir()
    file = source / f"{DAY.isoformat()}.jsonl"
    started = time.perf_counter()
    trajectories, written = generate(file, calls)
    print(
        f"generated {trajectories:,} trajectories, {written:,} LLM calls, "
        f"{file.stat().st_size / 1e6:,.0f} MB in {time.perf_counter() - started:.0f} s"
    )
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        day = subprocess.Popen(
            child(source, work / "data", kind, DAY), stdout=out, stderr=err, env=environment
        )
        peaks = Peaks(day.pid)
        while day.poll() is None:  # the Dagster process, its fork server and the pool's workers
            peaks.sample()
            time.sleep(0.1)
        elapsed = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # the day's, the largest
    if day.returncode != 0:
        raise SystemExit(stderr[-3000:])
    outcome = json.loads(stdout.strip().splitlines()[-1])
    print(
        f"Dagster day: {elapsed:.0f} s, {written / elapsed:,.0f} LLM calls/s, peak RSS {peak_mb:,.0f} MB "
        f"(largest process), {peaks.rss_kb / 1024:,.0f} MB "
        f"(all processes; PSS {peaks.pss_kb / 1024:,.0f} MB)"
    )
    print(json.dumps(outcome))
    return (
        f"{trajectories:,} trajectories, {written:,} LLM calls ({file.stat().st_size / 1e6:,.0f} MB) in "
        f"{elapsed:.0f} s, {written / elapsed:,.0f} calls/s; peak PSS of all processes "
        f"{peaks.pss_kb / 1024:,.0f} MB, largest process {peak_mb:,.0f} MB; "
        f"checks passed {outcome['checks_passed']} of {outcome['checks']}"
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        materialise(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4], date.fromisoformat(sys.argv[5]))
    else:
        parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
        parser.add_argument("calls", nargs="?", type=int, default=1_000_000)
        parser.add_argument("--instance", choices=KINDS, default="sqlite")
        parser.add_argument("--write", action="store_true", help="put the figures into bench/README.md")
        options = parser.parse_args()
        main(options.calls, options.instance, options.write)
