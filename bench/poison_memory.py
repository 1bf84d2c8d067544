"""Peak memory when the input is hostile: one 50 MB line among ordinary trajectories, and 100,000
trajectories, through `training-pipeline build-datasets` (both workers).

    python bench/poison_memory.py [--work DIR] [--trajectories N] [--hog K] [--write]

The giant line is measured in pieces and quarantined by position and size (it is over the default
8 MiB record cap), so the build's memory should not grow with it. `--hog K` runs K busy processes
beside the builds: a starved writer must slow the reading, not pile up results. `--write` puts the
figures into bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from export_vs_reference import run
from readme import machine, write_section

from training_pipeline.samples import write_long_sample

CLI = str(Path(sys.executable).parent / "training-pipeline")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", type=Path)
    parser.add_argument("--trajectories", type=int, default=100_000)
    parser.add_argument("--hog", type=int, default=0, help="busy processes beside the builds")
    parser.add_argument("--write", action="store_true", help="put the figures into bench/README.md")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="poison-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    giant = work / "giant.jsonl"
    ordinary = work / "ordinary.jsonl"
    write_long_sample(ordinary, 1000)
    with giant.open("w") as out:
        out.write(ordinary.read_text())
        blob = "a" * (50 * 1024 * 1024)
        out.write(json.dumps({"trajectoryId": "giant", "startTime": 1795478500000, "metadata": {"x": blob}}))
        out.write("\n")
    many = work / "many.jsonl"
    write_long_sample(many, args.trajectories)
    env = {"PATH": "/usr/bin:/bin"}
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.hog)]
    try:
        said = _measure(giant, many, work, env, args.trajectories)
    finally:
        for hog in hogs:
            hog.kill()
    if args.write:
        options = f" --trajectories {args.trajectories}" if args.trajectories != 100_000 else ""
        options += f" --hog {args.hog}" if args.hog else ""
        write_section(
            "poison_memory",
            f"`python bench/poison_memory.py{options}` on {machine()}, `strict`, two "
            "workers: " + "; ".join(said) + ".",
        )
    if args.work is None:
        shutil.rmtree(work)


def _measure(giant: Path, many: Path, work: Path, env: dict[str, str], trajectories: int) -> list[str]:
    said = []
    for name, source in (
        ("1,000 trajectories + one 50 MB line", giant),
        (f"{trajectories:,} trajectories", many),
    ):
        out = work / f"out-{source.stem}"
        shutil.rmtree(out, ignore_errors=True)
        seconds, largest, tree = run([CLI, "build-datasets", str(source), str(out), "--workers", "2"], env)
        quarantined = sum(1 for _ in (out / "quarantine.jsonl").open())
        said.append(
            f"{name}: {seconds:.1f} s, {largest:.0f} MB largest process (RSS), {tree:.0f} MB all (PSS), "
            f"{quarantined} quarantined"
        )
        print(said[-1])
    return said


if __name__ == "__main__":
    main()
