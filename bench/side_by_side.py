"""This tree's `build-datasets` against another commit's, on the same input, in one run, alternating;
and each tree's daily Dagster graph on one day.

    python bench/side_by_side.py --against REV [N] [--rounds R] [--day-trajectories D] [--write]

Checks out REV into a temporary git worktree and runs both trees' CLI (`python -m training_pipeline`
from each tree's folder, with this venv) on N generated trajectories (`samples.write_long_sample`), for
both privacy profiles, R rounds each, the two trees alternating so the machine's drift falls on both.
Reports wall seconds and CPU seconds (the CLI and every worker it reaped: `wait4`'s rusage), peak PSS of
the whole process tree, and a bare `orjson` parse of the same file for scale. The datasets of the two
trees must be byte for byte the same (the summary's `generatedAt` aside), or it says so and fails.

`dagster-day`: each tree's `datasets_job` (`strict`, with its checks) on one generated day of D
trajectories, on the README's SQLite instance made by a run of an empty day first, in a process that
loads the code location as a run's does (each tree's own `bench/million_calls.py --child`); wall and
CPU of that process and its pool, and the five datasets the same in both.

Use it when code on the build's path shrinks or changes: "no slower" is a claim about two trees
measured side by side, not against a figure written on another day.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from instances import SETUP_DAY, instance_homes
from million_calls import DAY, child
from process_tree import timed
from readme import machine, spread, write_section

from training_pipeline.datasets.training_tasks import SUMMARY_FILE_NAME, TASK_FILE_NAMES
from training_pipeline.samples import day_of_trajectories, write_long_sample

ROOT = Path(__file__).resolve().parents[1]
SECRET = "tok-live-0f9e8d7c6b5a"
PROFILES = ("elizaos", "strict", "dagster-day")


def same_datasets(a: Path, b: Path) -> list[str]:
    differ = [name for name in TASK_FILE_NAMES.values() if (a / name).read_bytes() != (b / name).read_bytes()]
    summaries = [json.loads((d / SUMMARY_FILE_NAME).read_text(encoding="utf-8")) for d in (a, b)]
    for summary in summaries:
        summary.pop("generatedAt", None)
    if summaries[0] != summaries[1]:
        differ.append(SUMMARY_FILE_NAME)
    return differ


def day_datasets(data: Path) -> dict[str, bytes]:
    """The five datasets a Dagster day wrote under `data`, by file name."""
    return {path.name: path.read_bytes() for name in TASK_FILE_NAMES.values() for path in data.rglob(name)}


def dagster_day(tree: Path, source: Path, work: Path) -> tuple[float, float, float]:
    """`tree`'s day of `source` on a fresh SQLite instance; its datasets are left in `work / "data"`."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    with instance_homes(["sqlite"], work) as environments:
        env = {**environments["sqlite"], "PYTHONPATH": str(tree)}
        (work / "no-input").mkdir()
        script = tree / "bench" / "million_calls.py"
        setup = child(work / "no-input", work / "setup", "sqlite", SETUP_DAY, script)
        subprocess.run(setup, cwd=tree, env=env, check=True, capture_output=True)
        return timed(child(source, work / "data", "sqlite", DAY, script), tree, env)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--against", required=True, help="the commit to compare with (e.g. main, HEAD~3)")
    parser.add_argument("n", type=int, nargs="?", default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=0, help="build processes (default: all cores)")
    parser.add_argument("--day-trajectories", type=int, default=10_000, help="the Dagster day's (10,000)")
    parser.add_argument("--profiles", default=",".join(PROFILES), help="comma-separated (default: all three)")
    parser.add_argument(
        "--datasets-may-differ",
        action="store_true",
        help="name the datasets that differ instead of stopping (the trees redact differently)",
    )
    parser.add_argument("--write", action="store_true", help="put the table into bench/README.md")
    args = parser.parse_args()
    differing: dict[str, list[str]] = {}
    profiles = [profile for profile in args.profiles.split(",") if profile]
    work = Path(tempfile.mkdtemp(prefix="tp-side-by-side-"))
    other = work / "other-tree"
    revision = subprocess.run(
        ["git", "rev-parse", "--short", args.against], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()
    here = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True
    ).stdout
    here += "+changes" if dirty.strip() else ""
    subprocess.run(["git", "worktree", "add", "--detach", "-q", str(other), revision], cwd=ROOT, check=True)
    try:
        source = work / "trajectories.jsonl"
        write_long_sample(source, args.n, SECRET)
        env = {**os.environ, "BENCH_SECRET_TOKEN": SECRET}
        trees = {"this": ROOT, "other": other}
        figures: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
        if "dagster-day" in profiles:
            days = work / "days"
            days.mkdir()
            with (days / f"{DAY.isoformat()}.jsonl").open("w", encoding="utf-8") as handle:
                for trajectory in day_of_trajectories(DAY, args.day_trajectories):
                    handle.write(json.dumps(trajectory) + "\n")
        for round_ in range(args.rounds):
            for profile in profiles:
                order = list(trees.items()) if round_ % 2 == 0 else list(trees.items())[::-1]
                for name, tree in order:
                    out = work / f"{name}-{profile}"
                    if profile == "dagster-day":
                        figures.setdefault((name, profile), []).append(dagster_day(tree, days, out))
                        continue
                    shutil.rmtree(out, ignore_errors=True)
                    command = [
                        sys.executable,
                        "-m",
                        "training_pipeline",
                        "build-datasets",
                        str(source),
                        str(out),
                        "--privacy-profile",
                        profile,
                        "--env-secrets",
                        "BENCH_SECRET_*",
                    ]
                    if args.workers:
                        command += ["--workers", str(args.workers)]
                    figures.setdefault((name, profile), []).append(timed(command, tree, env))
                if profile == "dagster-day":
                    mine, theirs = (day_datasets(work / f"{name}-{profile}" / "data") for name in trees)
                    differ = sorted(set(mine) ^ set(theirs) | {n for n in mine if mine[n] != theirs.get(n)})
                else:
                    differ = same_datasets(work / f"this-{profile}", work / f"other-{profile}")
                if (differ and not args.datasets_may_differ) or (profile == "dagster-day" and not mine):
                    raise SystemExit(f"{profile}: the two trees' datasets differ: {differ or 'none written'}")
                if differ:
                    differing[profile] = differ
            print(f"round {round_ + 1} of {args.rounds} done", flush=True)
        parse = [
            timed(
                [
                    sys.executable,
                    "-c",
                    "import orjson,sys\nfor l in open(sys.argv[1],'rb'): orjson.loads(l)",
                    str(source),
                ],
                ROOT,
                env,
            )
            for _ in range(args.rounds)
        ]
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=ROOT, check=False)
        shutil.rmtree(work, ignore_errors=True)
    workers = args.workers or os.cpu_count()
    day = f"; dagster-day: {args.day_trajectories:,} trajectories" if "dagster-day" in profiles else ""
    same = (
        "differing datasets: " + ", ".join(f"{p} {len(names)} files" for p, names in differing.items())
        if differing
        else "the same datasets"
    )
    lines = [
        f"`python bench/side_by_side.py --against {args.against} {args.n} --rounds {args.rounds}"
        f"{' --datasets-may-differ' if args.datasets_may_differ else ''}` "
        f"on {machine()}, {workers} build processes; {here} against {revision}, "
        f"{same}{day}. "
        "Median (min–max); CPU: all its processes'.",
        "",
        "| profile | tree | wall s | CPU s | peak PSS MB (all processes) | wall ÷ other | CPU ÷ other |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for profile in profiles:
        base = figures[("other", profile)]
        for name, label in (("this", here), ("other", revision)):
            runs = figures[(name, profile)]
            wall_ratio = statistics.median(r[0] for r in runs) / statistics.median(r[0] for r in base)
            cpu_ratio = statistics.median(r[1] for r in runs) / statistics.median(r[1] for r in base)
            lines.append(
                f"| {profile} | {label} | {spread([r[0] for r in runs])} | {spread([r[1] for r in runs])} | "
                f"{statistics.median(r[2] for r in runs):.0f} | {wall_ratio:.3f} | {cpu_ratio:.3f} |"
            )
    lines.append(
        f"| bare `orjson` parse | — | {spread([r[0] for r in parse])} | {spread([r[1] for r in parse])} | "
        f"{statistics.median(r[2] for r in parse):.0f} | | |"
    )
    table = "\n".join(lines)
    print(table)
    if args.write:
        write_section("side_by_side", table)


if __name__ == "__main__":
    main()
