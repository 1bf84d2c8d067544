"""The Dagster instances a bench's day runs on: Dagster's in-memory one, or one a user runs.

`ephemeral` is Dagster's in-memory instance (`materialize` in a test: the cost of Dagster's own work);
`sqlite` is the embedded default a user of the README runs (`dagster.yaml`: Dagster's SQLite storage
under `DAGSTER_HOME`); `postgres` is the production instance (`deploy/dagster.yaml`: Dagster's
PostgreSQL storage) on a throwaway PostgreSQL server on loopback.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' PostgreSQL server

KINDS = ("ephemeral", "sqlite", "postgres")
#: a day without input, run on a real instance before a bench measures so that its databases exist
SETUP_DAY = date(2026, 10, 31)
_FILES = {"sqlite": ROOT / "dagster.yaml", "postgres": ROOT / "deploy" / "dagster.yaml"}


@contextlib.contextmanager
def instance_homes(kinds: list[str], work: Path) -> Iterator[dict[str, dict[str, str]]]:
    """For each kind, the environment a child process runs its day with (`DAGSTER_HOME` and what
    `deploy/dagster.yaml` reads); PostgreSQL runs until the block ends. The caller makes the instance's
    databases with a run of another day before it measures, as a deployment's exist before its runs."""
    environments: dict[str, dict[str, str]] = {}
    servers = []
    try:
        for kind in kinds:
            environment = dict(os.environ)
            if kind != "ephemeral":
                home = work / f"dagster-home-{kind}"
                home.mkdir()
                shutil.copy(_FILES[kind], home / "dagster.yaml")
                environment["DAGSTER_HOME"] = str(home)
            if kind == "postgres":
                from tests.postgres_server import PostgresServer

                server = PostgresServer()
                servers.append(server)
                server.start()
                environment.update(
                    DAGSTER_PG_HOST="127.0.0.1",
                    DAGSTER_PG_PORT=str(server.port),
                    DAGSTER_PG_DB="postgres",
                    DAGSTER_PG_USER="postgres",
                    DAGSTER_PG_PASSWORD="",
                    DAGSTER_SHARED_DIR=str(work / "dagster-shared"),
                )
            environments[kind] = environment
        yield environments
    finally:
        for server in servers:
            server.stop()
            server.remove()


def code_location(source: Path, data: Path, workers: int = 0) -> Any:
    """In a child: the code location's `Definitions`, loaded as a run's process loads them before its
    run (`dagster api execute_run`, a Celery worker), for days read from `source` and written under
    `data` by `workers` processes (0: one per core)."""
    os.environ.update(
        TRAINING_PIPELINE_DATA=str(data), TRAJECTORY_DIR=str(source), TRAINING_PIPELINE_WORKERS=str(workers)
    )
    from training_pipeline.definitions import defs

    return defs


def instance_of(kind: str) -> Any:
    """In a child: the instance of `kind` (a real one from the `DAGSTER_HOME` its parent set)."""
    from dagster import DagsterInstance

    return DagsterInstance.ephemeral() if kind == "ephemeral" else DagsterInstance.get()
