"""Trajectory sources: a directory of export files or an elizaOS database."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path

import sqlalchemy as sa
from dagster import ConfigurableResource
from pydantic import Field

from training_pipeline import SAMPLE_DATA
from training_pipeline.trajectories.database import read_table
from training_pipeline.trajectories.files import read_files
from training_pipeline.trajectories.records import ParsedRecord

SAMPLE_TRAJECTORIES = SAMPLE_DATA / "trajectories"


class TrajectorySource(ConfigurableResource):
    """Anything that can hand over one UTC day of trajectories, bad records included."""

    retries: int = Field(default=3, description="step retries while the source is unavailable")
    retry_wait_seconds: float = Field(default=30.0, description="wait between those retries")

    def read_day(self, day: date) -> Iterator[ParsedRecord]:
        raise NotImplementedError

    def describe(self) -> str:
        """Where the data came from, safe to show (no credentials)."""
        raise NotImplementedError


class FileTrajectorySource(TrajectorySource):
    """`.jsonl` / `.json` export files under `path` (searched recursively)."""

    path: str = Field(description="export file or directory of export files")

    def read_day(self, day: date) -> Iterator[ParsedRecord]:
        return read_files(Path(self.path), day)

    def describe(self) -> str:
        return f"files:{self.path}"


class DatabaseTrajectorySource(TrajectorySource):
    """elizaOS's `trajectories` table in SQLite or PostgreSQL (an SQLAlchemy URL, e.g.
    `postgresql+psycopg://user:pass@host/db` or `sqlite:///path/to/eliza.db`). Pass the URL with
    `EnvVar` when it holds a password."""

    url: str = Field(description="SQLAlchemy database URL")
    table: str = "trajectories"

    def read_day(self, day: date) -> Iterator[ParsedRecord]:
        engine = sa.create_engine(self.url)
        try:
            yield from read_table(engine, self.table, day)
        finally:
            engine.dispose()

    def describe(self) -> str:
        return f"database:{sa.make_url(self.url).render_as_string(hide_password=True)}/{self.table}"
