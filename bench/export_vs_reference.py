"""Dataset build speed and memory against elizaOS's own code, on the same generated input.

    python bench/export_vs_reference.py [N] [--work DIR] [--no-reference] [--hog K] [--write]

Generates N realistic trajectories (long conversation prompts, credentials, @handles), runs
`../shared/reference/run-reference.sh` and `training-pipeline build-datasets --privacy-profile elizaos`
on the same file, checks the five datasets agree line for line (parsed JSON) and the summaries match,
then runs the default `strict` profile, and prints throughput, the ratio and each run's peak memory.
`--hog K` runs K busy processes beside our builds (not the reference), to see that memory stays bounded
when the machine is busy and the workers' results wait on a starved parent. `--write` puts the table
into bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from process_tree import Peaks
from readme import machine, write_section

from training_pipeline.datasets.training_tasks import SUMMARY_FILE_NAME, TASK_FILE_NAMES
from training_pipeline.samples import write_long_sample

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT.parent / "shared" / "reference" / "run-reference.sh"
ENV = {"REFERENCE_SECRET_DB_PASSWORD": "hunter2hunter2", "REFERENCE_SECRET_TOKEN": "tok-live-0f9e8d7c6b5a"}


def run(command: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """Wall seconds, and peak memory in MB: the largest process's RSS (GNU time's %M, exact, for the
    command and what it waited for; sampled for the rest, a fork server's workers) and the whole
    process tree's PSS (shared pages once), sampled (`Peaks`)."""
    with tempfile.TemporaryFile("w+") as stderr:
        started = time.perf_counter()
        proc = subprocess.Popen(
            ["/usr/bin/time", "-f", "%M", *command], env=env, stdout=subprocess.DEVNULL, stderr=stderr
        )
        peaks = Peaks(proc.pid)
        while proc.poll() is None:
            peaks.sample()
            time.sleep(0.05)
        seconds = time.perf_counter() - started
        stderr.seek(0)
        errors = stderr.read()
    if proc.returncode:
        raise SystemExit(f"{command[0]} failed: {errors[-2000:]}")
    largest = max(peaks.largest_kb, int(errors.strip().splitlines()[-1]))
    return seconds, largest / 1024, peaks.pss_kb / 1024


def agree(ours: Path, theirs: Path) -> list[str]:
    problems = []
    for name in TASK_FILE_NAMES.values():
        a = [json.loads(x) for x in (ours / name).read_text(encoding="utf-8").splitlines()]
        b = [json.loads(x) for x in (theirs / name).read_text(encoding="utf-8").splitlines()]
        if a != b:
            problems.append(f"{name}: {len(a)} vs {len(b)} lines")
    summaries = [json.loads((d / SUMMARY_FILE_NAME).read_text()) for d in (ours, theirs)]
    for summary in summaries:
        summary.pop("generatedAt")
    if summaries[0] != summaries[1]:
        problems.append("summaries differ")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("n", type=int, nargs="?", default=20_000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/tp-bench"))
    parser.add_argument("--no-reference", action="store_true")
    parser.add_argument("--hog", type=int, default=0, help="busy processes beside our builds")
    parser.add_argument("--write", action="store_true", help="put the table into bench/README.md")
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    source = args.work / "trajectories.jsonl"
    write_long_sample(source, args.n, ENV["REFERENCE_SECRET_TOKEN"])
    megabytes = source.stat().st_size / 1e6
    print(f"input: {args.n} trajectories, {megabytes:.1f} MB")
    env = {**os.environ, **ENV}
    cli = str(Path(sys.executable).parent / "training-pipeline")
    rows = []
    if not args.no_reference:
        seconds, rss, tree = run(["bash", str(REFERENCE), str(source), str(args.work / "reference")], env)
        rows.append(("elizaOS reference", seconds, rss, tree))
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.hog)]
    for profile in ("elizaos", "strict"):
        seconds, rss, tree = run(
            [
                cli,
                "build-datasets",
                str(source),
                str(args.work / profile),
                "--privacy-profile",
                profile,
                "--env-secrets",
                "REFERENCE_SECRET_*",
            ],
            env,
        )
        rows.append((f"ours, {profile}", seconds, rss, tree))
    for hog in hogs:
        hog.kill()
    agreement = ""
    if not args.no_reference:
        problems = agree(args.work / "elizaos", args.work / "reference")
        agreement = (
            "; `elizaos` datasets equal the reference's" if not problems else f"; OUTPUTS DIFFER: {problems}"
        )
        print(agreement.lstrip("; "))
    base = rows[0][1]
    lines = [
        f"`python bench/export_vs_reference.py {args.n}{f' --hog {args.hog}' if args.hog else ''}` on "
        f"{machine()}: {args.n:,} trajectories, {megabytes:.0f} MB, one measurement each{agreement}.",
        "",
        "| run | seconds | trajectories/s | vs first row | peak RSS MB, largest process "
        "| PSS MB, all processes |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, seconds, rss, tree in rows:
        lines.append(
            f"| {name} | {seconds:.2f} | {args.n / seconds:,.0f} | {base / seconds:.2f}x "
            f"| {rss:.0f} | {tree:.0f} |"
        )
    table = "\n".join(lines)
    print(table)
    if args.write:
        write_section("export_vs_reference", table)


if __name__ == "__main__":
    main()
