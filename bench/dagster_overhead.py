"""What Dagster adds to a day: the daily graph materialised on a real instance, against the core's
one-pass build on the same trajectories.

    python bench/dagster_overhead.py [N] [WORKERS]

WORKERS: processes of the day's pass (`TRAINING_PIPELINE_WORKERS`; default 0, one per core).

The Dagster path does more than the core (a Parquet store of the validated day and of the filtered day,
the detect-secrets inspection of every message, made in the pass and confirmed by the 17 asset checks,
event-log writes), so the figure is the price of lineage, checks and partition bookkeeping.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from dagster import DagsterInstance, materialize

from assets.datasets.definitions import daily_graph
from assets.partitions import daily_partitions
from resources.defaults import default_resources
from training_pipeline.datasets.build import build_datasets
from training_pipeline.privacy.filter import PrivacyFilter
from training_pipeline.samples import write_long_sample
from training_pipeline.settings import load_settings


def main(n: int, workers: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="tp-overhead-"))
    source = work / "in"
    source.mkdir()
    write_long_sample(source / "2026-11-01.jsonl", n)
    print(f"{n} trajectories, {(source / '2026-11-01.jsonl').stat().st_size / 1e6:.1f} MB, one day")

    # the strict rule set is built on first use, once per process: here, before either is timed (the
    # Dagster runs below share this process and would find it built by the core build)
    privacy = PrivacyFilter("strict")
    privacy.redact("warm the rules and their gate")
    started = time.perf_counter()
    build_datasets(source, work / "core", privacy, workers=1)
    core = time.perf_counter() - started

    settings = load_settings(
        {
            "TRAINING_PIPELINE_DATA": str(work / "data"),
            "TRAJECTORY_DIR": str(source),
            "TRAINING_PIPELINE_WORKERS": str(workers),
        }
    )
    resources = default_resources(settings)
    graph = daily_graph(daily_partitions(settings))
    runs = {}
    # the day with its checks first: it pays for starting the pool's fork server, as every new run
    # process does; the assets-only run after it finds the server running
    for name, selection in (
        ("assets + checks", [*graph.assets, *graph.checks]),
        ("assets only (pool warm)", graph.assets),
    ):
        with DagsterInstance.ephemeral() as instance:
            started = time.perf_counter()
            result = materialize(
                selection, partition_key="2026-11-01", resources=resources, instance=instance
            )
            runs[name] = time.perf_counter() - started
            assert result.success
    print(f"{'run':<34} {'seconds':>8} {'vs core':>8}")
    print(f"{'core build (1 process, strict)':<34} {core:>8.2f} {1:>7.2f}x")
    for name, seconds in runs.items():
        print(f"{'Dagster day, ' + name:<34} {seconds:>8.2f} {seconds / core:>7.2f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5000, int(sys.argv[2]) if len(sys.argv) > 2 else 0)
