"""Instructions per trajectory, counted by valgrind: a figure that does not move with the hour.

    python bench/instructions.py [N] [--sample long|day]

This machine's speed moves 1.5-2x within an hour (its host's other tenants), which hides any change of
a few percent in a wall-clock bench; the instructions a pass executes do not move. For each privacy
profile, two passes over the same N generated trajectories (`long`: those of `export_vs_reference.py`,
10 KB each, with its environment's secret values; `day`: those of `million_calls.py`, 2.7 KB each) run
in one process each, under callgrind:

- the core build (`build_datasets`, what `training-pipeline build-datasets` does per share);
- the daily pass (`build_day` with the checks' inspection: the Dagster step's work, without Dagster
  and without a pool), which also stores the day as Parquet and inspects every example.

Each child sets up (imports, the rules, a warm-up pass over ten trajectories), then passes over the N
trajectories between two calls of `os.sched_yield`, which callgrind is told to dump its counts before
(`--dump-before`): the part between them is the pass's own work. The ratio of the two passes is the
daily pass's work over the core build's. Left out: OpenSSL's SHA-256 (the daily pass's digests of its
files), which valgrind runs without the CPU's SHA extensions, at about ten times the instructions it
takes natively (a sixth of the daily pass's count, under 1% of its time). Needs valgrind
(`apt install valgrind`); about a minute per child at N = 1,000 (the set-up's imports are most of a
child under valgrind).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from datetime import date
from pathlib import Path

from export_vs_reference import ENV

from training_pipeline.samples import day_of_trajectories, write_long_sample

ROOT = Path(__file__).resolve().parents[1]
DAY = date(2026, 11, 1)
PASSES = ("core", "daily")
PROFILES = ("elizaos", "strict")
#: shared objects whose instructions are left out (see above)
_LEFT_OUT = {"libcrypto.so.3"}


def child(kind: str, profile: str, warm: Path, source: Path, work: Path) -> None:
    """A pass over `warm`, then one over `source` between two `os.sched_yield` calls: callgrind's dumps."""
    from training_pipeline.datasets.build import build_datasets
    from training_pipeline.datasets.daily import DayFiles, build_day
    from training_pipeline.intake.filtered import FilteredDay
    from training_pipeline.privacy.filter import PrivacyFilter, secret_env_values
    from training_pipeline.trajectories.files import unparsed_shares

    # as `export_vs_reference.py` runs the build: its environment's secret values looked for too
    privacy = PrivacyFilter(profile, None, secret_env_values(profile, ENV, "REFERENCE_SECRET_*"))
    for name, path in (("warm", warm), ("measured", source)):
        out = work / name
        if name == "measured":
            os.sched_yield()
        if kind == "core":
            build_datasets(path, out / "datasets", privacy, workers=1)
        else:
            files = DayFiles(
                out / "trajectories.parquet",
                out / "quarantine.jsonl",
                FilteredDay(out / "filtered.parquet", out / "report.json"),
                out / "datasets",
            )
            build_day(
                files,
                lambda: privacy,
                records=lambda path=path: unparsed_shares(path, DAY),
                source="bench",
                workers=1,
                scanner_secrets=privacy.env_secrets,
            )
    os.sched_yield()


def instructions(kind: str, profile: str, warm: Path, source: Path) -> int:
    """The instructions of the pass over `source` alone (the second of callgrind's three dumps)."""
    with tempfile.TemporaryDirectory(prefix="tp-instructions-") as work:
        counts = Path(work, "callgrind.out")
        command = [
            "valgrind",
            "--tool=callgrind",
            "--dump-before=sched_yield",
            f"--callgrind-out-file={counts}",
            sys.executable,
            __file__,
            "--child",
            kind,
            profile,
            str(warm),
            str(source),
            work,
        ]
        env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(ROOT)}
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        part = Path(f"{counts}.2")
        # a third dump would mean something else in the pass called sched_yield: the parts are not ours
        if done.returncode or not part.exists() or Path(f"{counts}.3").exists():
            raise SystemExit(f"{kind} {profile} failed under valgrind:\n{done.stderr[-2000:]}")
        by_object = _self_costs(part)
    return sum(count for name, count in by_object.items() if Path(name).name not in _LEFT_OUT)


def _self_costs(path: Path) -> Counter[str]:
    """Instructions by shared object, from a callgrind dump (`ob=` names an object, compressed as `(id)`
    once named; the line after `calls=` is a call's inclusive cost, counted in the callee already)."""
    names: dict[str, str] = {}
    costs: Counter[str] = Counter()
    current = "?"
    skip = False
    for line in path.read_text().splitlines():
        if skip:
            skip = False
        elif line.startswith(("ob=", "cob=")):
            ident, _, name = line.partition("=")[2].partition(" ")
            if name:
                names[ident] = name
            if line.startswith("ob="):
                current = names[ident]
        elif line.startswith("calls="):
            skip = True
        elif line[:1].isdigit() or line[:1] in ("+", "-", "*"):
            costs[current] += int(line.split()[-1])
    return costs


def write_sample(sample: str, warm: Path, source: Path, n: int) -> None:
    """Ten trajectories to warm up on, and the `n` measured."""
    if sample == "long":
        write_long_sample(warm, 10)
        write_long_sample(source, n, ENV["REFERENCE_SECRET_TOKEN"])
        return
    for path, count, seed in ((warm, 10, 1), (source, n, 0)):
        with path.open("w", encoding="utf-8") as handle:
            for trajectory in day_of_trajectories(DAY, count, seed=seed):
                handle.write(json.dumps(trajectory) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("n", type=int, nargs="?", default=1000)
    parser.add_argument("--sample", choices=("long", "day"), default="long")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("needs valgrind: apt install valgrind")
    with tempfile.TemporaryDirectory(prefix="tp-instructions-") as folder:
        warm, source = Path(folder, "warm.jsonl"), Path(folder, "day.jsonl")
        write_sample(args.sample, warm, source, args.n)
        size = source.stat().st_size / 1e6
        print(f"{args.n} trajectories ({args.sample}), {size:.1f} MB; instructions per trajectory")
        print(f"{'profile':<8} {'core build':>11} {'daily pass':>11} {'daily / core':>13}")
        for profile in PROFILES:
            per = {kind: instructions(kind, profile, warm, source) / args.n for kind in PASSES}
            core, daily = per["core"], per["daily"]
            print(f"{profile:<8} {core:>11,.0f} {daily:>11,.0f} {daily / core:>12.2f}x")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        kind, profile, warm, source, work = sys.argv[2:7]
        child(kind, profile, Path(warm), Path(source), Path(work))
    else:
        main()
