"""Run records: what a training run did and why, one JSON file per run under the state directory.

The fields are elizaOS's (`runId`, `status`, `reason`, `task`, `backend`, `source`, `datasetSize`, ...),
serialised in its camelCase so tools that read elizaOS's records read ours.
"""

from __future__ import annotations

import fcntl
import json
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from training_pipeline.atomic import atomic_write_text
from training_pipeline.privacy.stored import safe_value
from training_pipeline.shared_storage import SharedStorage

Status = Literal["succeeded", "skipped", "failed"]
Source = Literal["threshold", "schedule", "manual", "backfill"]


def new_run_id() -> str:
    """`run-<ms>-<random>` as elizaOS makes them, so names sort by time."""
    return f"run-{int(time.time() * 1000)}-{secrets.token_hex(3)}"


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class RunRecord(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    run_id: str = Field(default_factory=new_run_id)
    status: Status = "skipped"
    reason: str | None = None
    task: str | None = None
    backend: str | None = None
    source: Source = "manual"
    dataset_size: int = 0
    per_task_counts: dict[str, int] = Field(default_factory=dict)
    pulled_trajectories: int = 0
    filtered_trajectories: int = 0
    redaction_count: int = 0
    anonymization_count: int = 0
    dataset_path: str | None = None
    window: list[str] = Field(default_factory=list)
    artifact_path: str | None = None
    dry_run: bool = False
    notes: list[str] = Field(default_factory=list)
    details: dict[str, Any] = Field(default_factory=dict)
    #: the promotion gate's verdict on a native run's candidate (`training/promotion.py`); our addition
    promotion: dict[str, Any] | None = None
    dagster_run_id: str | None = None
    started_at: str = Field(default_factory=now_iso)
    finished_at: str | None = None

    def finish(self, status: Status, reason: str | None = None) -> RunRecord:
        self.status, self.reason, self.finished_at = status, reason, now_iso()
        return self

    def safe(self) -> RunRecord:
        """This record as it is stored and shown: every string redacted."""
        return RunRecord.model_validate(json.loads(self.to_json()))

    def to_json(self) -> str:
        """The stored form: every string redacted (a backend's error may quote what it was sent)."""
        return json.dumps(safe_value(self.model_dump(mode="json", by_alias=True)), indent=2) + "\n"


class RunStore:
    """`<state_dir>/training/runs/<runId>.json`, written atomically."""

    def __init__(self, state_dir: Path, shared: SharedStorage | None = None) -> None:
        self.directory = Path(state_dir) / "training" / "runs"
        self.shared = shared

    @contextmanager
    def task_lock(self, task: str) -> Iterator[bool]:
        """Whether this process holds `task`'s lock: one dispatch per task at a time, whoever launched
        it (sensor, schedule, UI, CLI). The OS releases the lock if the process dies."""
        lock_path = self.directory.parent / "locks" / f"{task}.lock"
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        with lock_path.open("a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def path(self, record: RunRecord) -> Path:
        return self.directory / f"{record.run_id}.json"

    def save(self, record: RunRecord) -> Path:
        """Written here, and copied to the shared storage (`training/runs/<runId>.json`) when there is one."""
        path = self.path(record)
        atomic_write_text(path, record.to_json())
        if self.shared is not None:
            self.shared.put_file(path, "training", "runs", path.name)
        return path

    def find(self, dagster_run_id: str, task: str, among: int = 100) -> RunRecord | None:
        """The record a Dagster run wrote for `task`, among the newest `among` records."""
        for record in self.list(limit=among):
            if record.dagster_run_id == dagster_run_id and record.task == task:
                return record
        return None

    def load(self, run_id: str) -> RunRecord | None:
        path = self.directory / f"{Path(run_id).name}.json"
        if not path.is_file():
            return None
        return RunRecord.model_validate(json.loads(path.read_text(encoding="utf-8")))

    def list(self, limit: int = 20) -> list[RunRecord]:
        """Newest first: run ids start with their creation time in milliseconds."""
        if not self.directory.is_dir():
            return []
        names = sorted((p.name for p in self.directory.glob("run-*.json")), reverse=True)[: max(0, limit)]
        return [
            RunRecord.model_validate(json.loads((self.directory / n).read_text(encoding="utf-8")))
            for n in names
        ]
