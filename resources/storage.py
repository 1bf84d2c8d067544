"""Where the pipeline's files live: one folder per asset, one file (or folder) per daily partition."""

from __future__ import annotations

from pathlib import Path

from dagster import ConfigurableResource
from pydantic import Field

from training_pipeline.shared_storage import SharedStorage
from training_pipeline.training.run_records import RunStore


class DataStore(ConfigurableResource):
    root: str = Field(description="base directory of every file the pipeline writes")
    shared_url: str | None = Field(
        default=None,
        description="fsspec URL (s3://bucket/prefix, gs://…, file:///mnt/share) that also receives each "
        "day's datasets once their checks pass, and every training run record",
    )

    def shared(self) -> SharedStorage | None:
        return SharedStorage(self.shared_url) if self.shared_url else None

    def _path(self, *parts: str) -> Path:
        # absolute: task code runs in a sandbox whose bind mounts need absolute paths, and a run's
        # subprocesses may not share its working directory
        return Path(self.root).expanduser().absolute().joinpath(*parts)

    def trajectories(self, day: str) -> Path:
        return self._path("trajectories", f"{day}.parquet")

    def quarantine(self, day: str) -> Path:
        return self._path("trajectories", f"{day}.quarantine.jsonl")

    def filtered(self, day: str) -> Path:
        return self._path("filtered_trajectories", f"{day}.parquet")

    def privacy_report(self, day: str) -> Path:
        return self._path("filtered_trajectories", f"{day}.privacy_report.json")

    def datasets(self, day: str) -> Path:
        return self._path("datasets", day)

    def trace_datasets(self, day: str) -> Path:
        return self._path("trace_datasets", day)

    def runs(self) -> RunStore:
        """The training run records, copied to the shared storage when there is one."""
        return RunStore(self.state_dir(), self.shared())

    def task_runs(self) -> Path:
        """One folder per task run (`<run id>/`): its context store, `context.json`, envs, sandboxes."""
        return self._path("task_runs")

    def prompts(self) -> Path:
        """Each task's promoted prompt (`prompts/<task>.json`), published by the promotion gate."""
        return self._path("prompts")

    def state_dir(self) -> Path:
        """Run records and trainer state (`training/runs/<run id>.json`)."""
        return self._path()
