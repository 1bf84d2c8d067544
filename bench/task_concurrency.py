"""What running task steps through Dagster costs: a 16-wide task of 2-second waits and a 50-step chain
of no-op steps, run as task jobs on a real (temporary, SQLite) instance with the default executor.

    python bench/task_concurrency.py [--executor async|multiprocess|in_process]

Prints, per task, the run's wall time (run start to run end, from the run record), the critical path,
and the overhead per step. Targets (issue 6): wide within 1.5 s of its 2 s critical path; chain under
0.1 s per step.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from dagster import DagsterInstance, build_reconstructable_job, execute_job


def _task(folder: Path, name: str, steps: list[dict]) -> Path:
    path = folder / f"{name}.json"
    path.write_text(json.dumps(steps))
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--executor", default="async", choices=("async", "multiprocess", "in_process"))
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tp-task-bench-"))
    os.environ["TRAINING_PIPELINE_DATA"] = str(work / "data")
    home = work / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text((Path(__file__).resolve().parents[1] / "dagster.yaml").read_text())
    os.environ["DAGSTER_HOME"] = str(home)
    wide = [{"id": f"wait_{i}", "type": "wait", "seconds": 2.0, "depends_on": []} for i in range(16)]
    chain = [{"id": f"step_{i}", "type": "wait", "seconds": 0} for i in range(50)]
    cases = [("wide", _task(work, "wide", wide), 2.0, 16), ("chain", _task(work, "chain", chain), 0.0, 50)]
    print(f"executor: {args.executor}")
    print(f"{'task':<6} {'steps':>5} {'wall s':>7} {'critical s':>10} {'overhead s':>10} {'per step s':>10}")
    with DagsterInstance.get() as instance:
        for name, path, critical, steps in cases:
            job = build_reconstructable_job(
                "assets.tasks.jobs",
                "job_for_file",
                reconstructable_args=(str(path), args.executor),
            )
            started = time.perf_counter()
            result = execute_job(job, instance)
            total = time.perf_counter() - started
            assert result.success, f"{name} failed"
            record = instance.get_run_record_by_id(result.run_id)
            wall = record.end_time - record.start_time
            overhead = wall - critical
            per_step = overhead / (steps if name == "chain" else 1)
            print(
                f"{name:<6} {steps:>5} {wall:>7.2f} {critical:>10.2f} {overhead:>10.2f} {per_step:>10.3f}"
                f"   (with process start and job load: {total:.2f} s)"
            )


if __name__ == "__main__":
    main()
