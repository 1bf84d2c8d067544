"""Each hostile input of docs/security.md, as a user meets it: what happens, how long it takes and the
peak memory of every process involved (`export_vs_reference.run`: GNU time's largest RSS, and the
whole process tree sampled every 50 ms), each case run `--repeat` times (median, with min-max).

    python bench/hostile_input.py [--repeat 3] [--array-mb 300] [--scrub-mb 250] [--write]

`--write` puts the table into bench/README.md, between this bench's markers.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from readme import write_section

sys.path.insert(0, str(Path(__file__).resolve().parent))
from export_vs_reference import run

from training_pipeline.samples import write_long_sample

CLI = str(Path(sys.executable).parent / "training-pipeline")
T = 1_795_478_500_000


def _trajectory(trajectory_id: str, prompt: str) -> dict:
    call = {"purpose": "response", "systemPrompt": "s", "userPrompt": prompt, "response": "ok"}
    return {"trajectoryId": trajectory_id, "startTime": T, "steps": [{"llmCalls": [call]}]}


def _build(source: Path, out: Path, env: dict[str, str]) -> tuple[float, float, float, str]:
    shutil.rmtree(out, ignore_errors=True)
    seconds, largest, tree = run([CLI, "build-datasets", str(source), str(out), "--workers", "2"], env)
    quarantine = [json.loads(line) for line in (out / "quarantine.jsonl").read_text().splitlines()]
    reasons = sorted({entry["reason"].split(":")[0].split(" (")[0] for entry in quarantine})
    return (
        seconds,
        largest,
        tree,
        f"{len(quarantine)} quarantined" + (f" ({', '.join(reasons)})" if reasons else ""),
    )


def case_backtracking(work: Path, env: dict[str, str]) -> tuple[float, float, float, str]:
    source = work / "redos.jsonl"
    lines = [_trajectory(f"t{i}", "password: " + "a" * 60 + "!") for i in range(1000)]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return _build(source, work / "out-redos", env)


def case_budget(work: Path, env: dict[str, str]) -> tuple[float, float, float, str]:
    source = work / "budget.jsonl"
    hostile = "cohere = " + "a-" * 100_000 + " cohere = " + "aB3d" * 10
    lines = [_trajectory("hostile", hostile), *(_trajectory(f"t{i}", "hello") for i in range(999))]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return _build(source, work / "out-budget", {**env, "TRAINING_PIPELINE_REDACTION_BUDGET_SECONDS": "5"})


def case_logs(work: Path, env: dict[str, str]) -> tuple[float, float, float, str]:
    """A data agent's tool output: 50,000 rows of ten-digit ids, and 16,000 requests with a token each."""
    source = work / "logs.jsonl"
    ids = "\n".join(
        f"2026-12-07T10:{i % 60:02d}:00Z,{4000000000 + i * 7919},req-{i:08d},200" for i in range(50000)
    )
    rng = random.Random(7)
    tokens = "\n".join(
        f"10.0.0.{i % 250} - - GET /api/items/{i} 200 token=ghp_{rng.randbytes(18).hex()}"
        for i in range(16000)
    )
    lines = [_trajectory("ids", "here is the export:\n" + ids), _trajectory("tokens", "the log:\n" + tokens)]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return _build(source, work / "out-logs", env)


def case_fifos(work: Path, env: dict[str, str]) -> tuple[float, float, float, str]:
    folder = work / "fifos"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    write_long_sample(folder / "day.jsonl", 1000)
    os.mkfifo(folder / "pipe.jsonl")
    os.mkfifo(folder / "target")
    (folder / "link.jsonl").symlink_to(folder / "target")
    return _build(folder, work / "out-fifos", env)


def case_array(work: Path, env: dict[str, str], megabytes: int) -> tuple[float, float, float, str]:
    lines = work / "array-source.jsonl"
    if not lines.exists():
        write_long_sample(lines, max(1, megabytes * 1024 * 1024 // 10_000))
    source = work / "array.json"
    if not source.exists():
        with lines.open("rb") as records, source.open("wb") as out:
            out.write(b"[")
            for index, line in enumerate(records):
                out.write((b"," if index else b"") + line.rstrip(b"\n"))
            out.write(b"]")
    seconds, largest, tree, _ = _build(source, work / "out-array", env)
    summary = json.loads((work / "out-array" / "trajectory_dataset_summary.json").read_text())
    size = source.stat().st_size / 1024 / 1024
    return (
        seconds,
        largest,
        tree,
        f"{size:.0f} MB array: {summary['trajectoryCount']:,} trajectories, each a record",
    )


def case_scrub(work: Path, env: dict[str, str], megabytes: int) -> tuple[float, float, float, str]:
    run_dir = work / "scrub-run"
    shutil.rmtree(run_dir, ignore_errors=True)
    folder = run_dir / "envs" / "email"
    folder.mkdir(parents=True)
    db = sqlite3.connect(folder / "env.sqlite")
    db.executescript(
        """
        CREATE TABLE t (body TEXT); CREATE TABLE sink (blob BLOB);
        CREATE TRIGGER bomb AFTER UPDATE ON t BEGIN
            INSERT INTO sink WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
            SELECT randomblob(1000000) FROM n;
        END;
        INSERT INTO t VALUES ('key ghp_C3J27XDCG2LmlZGEONYlgCtjfIZ4SOcMz9CP');
        CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID;
        INSERT INTO kv VALUES ('a', 'ghp_C3J27XDCG2LmlZGEONYlgCtjfIZ4SOcMz9CP');
        """
    )
    db.close()
    line = b"an ordinary line of an env's log, nothing in it to redact at all\n"
    with (folder / "env.log").open("wb") as out:
        for _ in range(megabytes * 1024 * 1024 // len(line)):
            out.write(line)
    code = (
        "import json; from pathlib import Path; "
        "from training_pipeline.privacy.scrub import scrub_confined; "
        f"r = scrub_confined(Path({str(run_dir)!r}), ('envs',), ()); print(json.dumps(r.to_dict()))"
    )
    seconds, largest, tree = run([sys.executable, "-c", code], {**env, "PATH": os.environ["PATH"]})
    size = (folder / "env.sqlite").stat().st_size / 1024
    return (
        seconds,
        largest,
        tree,
        f"{megabytes} MB log streamed; trigger dropped, never fired (database {size:.0f} KB)",
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--array-mb", type=int, default=300)
    parser.add_argument("--scrub-mb", type=int, default=250)
    parser.add_argument("--work", type=Path)
    parser.add_argument("--write", action="store_true", help="put the table into bench/README.md")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="hostile-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")}
    cases: list[tuple[str, Callable[[], tuple[float, float, float, str]]]] = [
        (
            "`password: ` + 60 letters + `!` in 1,000 prompts (backtracked for hours)",
            lambda: case_backtracking(work, env),
        ),
        (
            "a 200 KB prompt at a rule's worst case, budget 5 s (29 s unbudgeted)",
            lambda: case_budget(work, env),
        ),
        (
            "a prompt of 50,000 rows of ids (2.5 MB; over the 30 s budget before), one of 16,000 tokens",
            lambda: case_logs(work, env),
        ),
        (
            "a FIFO and a link to one named `.jsonl`, beside 1,000 trajectories (hung)",
            lambda: case_fifos(work, env),
        ),
        (
            f"a {args.array_mb} MB `.json` array (one record over the cap before)",
            lambda: case_array(work, env, args.array_mb),
        ),
        (
            f"the run-end scrub: a trigger bomb, a WITHOUT ROWID table, a {args.scrub_mb} MB log",
            lambda: case_scrub(work, env, args.scrub_mb),
        ),
    ]
    rows = []
    for name, case in cases:
        results = [case() for _ in range(args.repeat)]
        seconds = [r[0] for r in results]
        spread = f"{statistics.median(seconds):.2f} ({min(seconds):.2f}-{max(seconds):.2f})"
        largest, tree = max(r[1] for r in results), max(r[2] for r in results)
        rows.append(f"| {name} | {results[-1][3]} | {spread} | {largest:.0f} MB | {tree:.0f} MB |")
        print(rows[-1], flush=True)
    machine = f"{os.cpu_count()} cores, Python {platform.python_version()}, {datetime.now(UTC):%Y-%m-%d}"
    table = "\n".join(
        [
            f"`python bench/hostile_input.py --repeat {args.repeat}` on {machine}; seconds: median "
            f"(min-max) of {args.repeat} runs, memory: the highest peak of them.",
            "",
            "| input | outcome | seconds | largest process | all processes |",
            "|---|---|---:|---:|---:|",
            *rows,
        ]
    )
    if args.write:
        write_section("hostile_input", table)
    if args.work is None:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
