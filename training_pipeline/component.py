"""The Component that adds the pipeline to a Dagster project: `dg scaffold defs
training_pipeline.component.TrainingPipelineComponent <folder>`, then edit its `defs.yaml`.

Every attribute is optional; what a project leaves out comes from the environment as in this
repository's own code location (`TRAINING_PIPELINE_*`, `TRAJECTORY_*`, `LLM_*`; docs/adopting.md), so a
deployment can keep secrets and machine paths out of the YAML. Credentials are never attributes: the
database URL, API keys and tokens are read from their environment variables when a run starts
(Dagster `EnvVar`s), so no run config, event or log holds their values. A `{{ env.X }}` template would
resolve to the value itself and put it in the run config; that is why there is none for them.

What it leaves to the project: the executor, the IO managers and the run queue are the project's; the
evaluation sensor, the threshold sensor and the nightly automation are off until someone turns them on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import dagster as dg
from pydantic import Field

from assets.definitions import DOMAINS, Domain, build_definitions
from assets.keys import Keys
from assets.partitions import GROUP
from training_pipeline.settings import settings_with

__all__ = ["TrainingPipelineComponent"]


class TrainingPipelineComponent(dg.Component, dg.Resolvable, dg.Model):
    """Privacy-safe training datasets from LLM agent trajectories, training runs on them and their
    evaluation: daily assets (trajectories, filtered trajectories, five per-task datasets) with
    blocking checks, task-partitioned training assets with a promotion gate, and a job per task file."""

    key_prefix: list[str] = Field(
        default=[], description="prefix of every asset key, e.g. [agents] gives agents/response"
    )
    group_name: str = Field(default=GROUP, description="the asset group of every asset")
    include: list[Domain] = Field(
        default=list(DOMAINS),
        description="the parts to add: datasets (the daily layers), training (needs datasets), tasks",
    )
    data_root: str | None = Field(
        default=None, description="where the files go (TRAINING_PIPELINE_DATA); relative to the project"
    )
    trajectory_source: Literal["files", "database"] | None = Field(
        default=None,
        description="files: export files under trajectory_dir (TRAJECTORY_DIR); database: elizaOS's "
        "table at the URL in the TRAJECTORY_DB_URL environment variable",
    )
    trajectory_dir: str | None = Field(
        default=None,
        description="folder of elizaOS export files (.jsonl/.json) and OpenTelemetry trace files "
        "(OTLP/JSON lines or protobuf, plain or gzip); relative to the project",
    )
    trace_routes: list[str] | None = Field(
        default=None,
        description="which dataset a trace's LLM call feeds, by its agent's name: PATTERN=DATASET "
        "(shell globs, first match wins); unnamed calls go to tool_use when tools were offered, else chat",
    )
    trajectory_table: str | None = Field(default=None, description="the database table (TRAJECTORY_DB_TABLE)")
    dataset_format: Literal["elizaos", "openai-chat", "parquet"] | None = Field(
        default=None,
        description="every dataset also as OpenAI chat JSONL (openai-chat/) or Parquet with a dataset card "
        "(parquet/) beside the JSONL files; elizaos (the default): the files as they are",
    )
    start_date: str | None = Field(
        default=None,
        description="the first daily partition, YYYY-MM-DD (UTC days); unset: the source's first day",
    )
    privacy_profile: Literal["strict", "elizaos"] | None = Field(
        default=None, description="strict (the default) or elizaos (exactly elizaOS's filter)"
    )
    entity_directory: str | None = Field(
        default=None, description="JSON or CSV of (platform, handle) → entity and privacy level"
    )
    backends: list[str] | None = Field(
        default=None, description="training backends in order of preference (native, atropos, ...)"
    )
    llm_base_url: str | None = Field(
        default=None, description="OpenAI-compatible endpoint of the native backend, agents and judges"
    )
    llm_model: str | None = Field(default=None, description="the model name at llm_base_url")
    tasks_dir: str | None = Field(
        default=None, description="a folder of the project's task files, each a job (relative to the project)"
    )
    owners: list[str] = Field(default=[], description="owners of every asset (team:… or emails)")

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        settings = settings_with(self._variables(context.project_root))
        if self.trajectory_source == "database" and settings.trajectory_db_url is None:
            raise ValueError("trajectory_source is database: set TRAJECTORY_DB_URL in the environment")
        return build_definitions(
            settings,
            Keys.of(self.key_prefix),
            self.group_name,
            self.include,
            owners=self.owners or None,
        )

    def _variables(self, root: Path) -> dict[str, str]:
        """The attributes as the settings' environment variables (paths made absolute)."""

        def path(value: str | None) -> str | None:
            return None if value is None else str((root / value).resolve())

        variables = {
            "TRAINING_PIPELINE_DATA": path(self.data_root),
            "TRAJECTORY_DIR": path(self.trajectory_dir),
            "TRAJECTORY_DB_TABLE": self.trajectory_table,
            "TRAINING_PIPELINE_TRACE_ROUTES": ",".join(self.trace_routes)
            if self.trace_routes is not None
            else None,
            "TRAINING_PIPELINE_DATASET_FORMAT": self.dataset_format,
            "TRAINING_PIPELINE_START_DATE": self.start_date,
            "TRAINING_PIPELINE_PRIVACY_PROFILE": self.privacy_profile,
            "TRAINING_PIPELINE_ENTITIES": path(self.entity_directory),
            "TRAINING_PIPELINE_BACKENDS": ",".join(self.backends) if self.backends is not None else None,
            "LLM_BASE_URL": self.llm_base_url,
            "LLM_MODEL": self.llm_model,
            "TRAINING_PIPELINE_TASKS_DIR": path(self.tasks_dir),
        }
        chosen = {name: value for name, value in variables.items() if value is not None}
        if self.trajectory_source == "files":
            chosen["TRAJECTORY_DB_URL"] = ""  # files were chosen: a database URL in the environment is not
        return chosen
