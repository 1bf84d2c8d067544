"""Trajectory sources: a directory of export files or an elizaOS database."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from dagster import ConfigurableResource
from pydantic import Field

from training_pipeline import jscompat
from training_pipeline.atomic import atomic_open
from training_pipeline.shared_storage import public_url
from training_pipeline.traces.routes import TraceRouting
from training_pipeline.traces.source import day_shares
from training_pipeline.trajectories.database import read_table, write_trajectory
from training_pipeline.trajectories.files import Unparsed, UnparsedSpan, with_spans_read
from training_pipeline.trajectories.models import start_day
from training_pipeline.trajectories.parsing import ParsedRecord
from training_pipeline.trajectories.remote import is_url, local_input


class TrajectorySource(ConfigurableResource):
    """Anything that can hand over one UTC day of trajectories, bad records included."""

    retries: int = Field(default=3, description="step retries while the source is unavailable")
    retry_wait_seconds: float = Field(default=30.0, description="wait between those retries")

    def read_day(self, day: date) -> Iterator[ParsedRecord]:
        raise NotImplementedError

    def day_records(self, day: date) -> Iterator[ParsedRecord | Unparsed | UnparsedSpan]:
        """The day for the daily pass, whose pool reads and parses what comes unparsed (default:
        `read_day`)."""
        return self.read_day(day)

    def describe(self) -> str:
        """Where the data came from, safe to show (no credentials)."""
        raise NotImplementedError

    def write(self, trajectory: dict[str, Any]) -> None:
        """Add one trajectory (a task run's agent conversation), to be read back with its day."""
        raise NotImplementedError


class FileTrajectorySource(TrajectorySource):
    """`.jsonl` / `.json` export files under `path` (searched recursively), and OpenTelemetry trace files
    (OTLP/JSON lines or protobuf, plain or gzip: told by their content, docs/traces.md)."""

    path: str = Field(
        description="export file or directory of export files and trace files, or any fsspec URL of one "
        "(s3://bucket/traces/, gs://…, sftp://…), read through a local mirror"
    )
    agent_runs_dir: str | None = Field(
        default=None, description="where task runs write their agents' trajectories; read with `path`"
    )
    trace_routes: str = Field(
        default="",
        description="which dataset a trace's LLM call feeds, by its agent's name: 'PATTERN=DATASET,…' "
        "(shell globs); unnamed calls go to `tool_use` when tools were offered, else `chat`",
    )

    def read_day(self, day: date) -> Iterator[ParsedRecord]:
        for unparsed in with_spans_read(self.day_records(day)):
            parsed = unparsed.parse()
            if parsed is not None:
                yield parsed

    def day_records(self, day: date) -> Iterator[Unparsed | UnparsedSpan]:
        """Not parsed, and `.jsonl` files not even read: the pool's workers read their spans, and parse
        (which the day check needs)."""
        routing = TraceRouting.parse(self.trace_routes)
        for folder in self._folders():
            yield from day_shares(folder, day, routing)

    def _folders(self) -> list[Path]:
        """`path`, and the task runs' folder unless it is inside `path` (read once)."""
        folders = [local_input(self.path)]
        runs = Path(self.agent_runs_dir) if self.agent_runs_dir else None
        if runs is not None and runs.is_dir() and not runs.resolve().is_relative_to(folders[0].resolve()):
            folders.append(runs)
        return folders

    def write(self, trajectory: dict[str, Any]) -> None:
        if not self.agent_runs_dir:
            raise ValueError(
                "set agent_runs_dir on the file trajectory source to keep task runs' trajectories"
            )
        day = start_day(trajectory["startTime"]).isoformat()
        target = Path(self.agent_runs_dir) / day / f"{trajectory['trajectoryId']}.jsonl"
        with atomic_open(target) as handle:
            handle.write(jscompat.dumps(trajectory) + "\n")

    def describe(self) -> str:
        return f"files:{public_url(self.path) if is_url(self.path) else self.path}"


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

    def write(self, trajectory: dict[str, Any]) -> None:
        engine = sa.create_engine(self.url)
        try:
            write_trajectory(engine, self.table, trajectory)
        finally:
            engine.dispose()

    def describe(self) -> str:
        return f"database:{sa.make_url(self.url).render_as_string(hide_password=True)}/{self.table}"
