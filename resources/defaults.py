"""The resources a deployment gets, chosen from the environment (never in asset code).

- `TRAJECTORY_DB_URL` set: read elizaOS's `trajectories` table (the URL stays an `EnvVar`, so the
  password is never in run config); otherwise `TRAJECTORY_DIR` (default: the bundled sample days).
- `TRAINING_PIPELINE_DATA`: where files go (default `data/` in the working directory).
- `TRAINING_PIPELINE_ENTITIES`: the entity directory (default: the sample's, with the sample data).
- `TRAINING_PIPELINE_PRIVACY_PROFILE`: `strict` (default) or `elizaos`.
- `TRAINING_PIPELINE_TRIGGER_THRESHOLD`, `TRAINING_PIPELINE_BACKENDS` (comma-separated): the training
  policy's threshold and backends (default 100 and `native`).
- `LLM_BASE_URL`, `LLM_MODEL`, `LLM_API_KEY`: the LLM of the native backend and of task agents and
  judges (default: the bundled local model, when installed).
Task runs write their agents' trajectories to `<data>/agent_trajectories` (file source) or into the
trajectory table (database source), so they feed the next day's datasets.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from dagster import EnvVar
from training_pipeline.resources.backends import (
    AtroposBackend,
    NativeBackend,
    OpenAIBackend,
    TinkerBackend,
    TrainingBackends,
    VertexBackend,
)
from training_pipeline.resources.llm import LLMResource
from training_pipeline.resources.privacy import PrivacySettings
from training_pipeline.resources.sources import (
    DatabaseTrajectorySource,
    FileTrajectorySource,
)
from training_pipeline.resources.storage import DataStore
from training_pipeline.resources.tasks import TaskOverrides
from training_pipeline.resources.training import TrainingSettings

from training_pipeline import SAMPLE_ENTITIES, SAMPLE_TRAJECTORIES


def default_resources(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    env = os.environ if environ is None else environ
    data = env.get("TRAINING_PIPELINE_DATA", "data")
    if env.get("TRAJECTORY_DB_URL"):
        source: Any = DatabaseTrajectorySource(
            url=EnvVar("TRAJECTORY_DB_URL"), table=env.get("TRAJECTORY_DB_TABLE", "trajectories")
        )
        entities = env.get("TRAINING_PIPELINE_ENTITIES")
    else:
        source = FileTrajectorySource(
            path=env.get("TRAJECTORY_DIR", str(SAMPLE_TRAJECTORIES)),
            agent_runs_dir=f"{data}/agent_trajectories",
        )
        entities = env.get("TRAINING_PIPELINE_ENTITIES") or (
            None if env.get("TRAJECTORY_DIR") else str(SAMPLE_ENTITIES)
        )
    llm = LLMResource(
        base_url=env.get("LLM_BASE_URL"),
        model=env.get("LLM_MODEL", "default"),
        api_key=_secret(env, "LLM_API_KEY"),
        cache_dir=f"{data}/llm_cache",
    )
    return {
        "trajectory_source": source,
        "privacy": PrivacySettings(
            profile=env.get("TRAINING_PIPELINE_PRIVACY_PROFILE", "strict"), entity_directory=entities
        ),
        "store": DataStore(root=data, shared_url=_secret(env, "TRAINING_PIPELINE_SHARED_URL")),
        "training": _training(env),
        "llm": llm,
        "task_overrides": TaskOverrides(),
        "training_backends": TrainingBackends(
            native=NativeBackend(llm=llm),
            atropos=AtroposBackend(
                data_dir=env.get("ATROPOS_DATA_DIR", f"{data}/atropos"),
                command=env["ATROPOS_COMMAND"].split() if env.get("ATROPOS_COMMAND") else None,
            ),
            tinker=TinkerBackend(api_key=_secret(env, "TINKER_API_KEY")),
            openai=OpenAIBackend(
                api_key=_secret(env, "OPENAI_API_KEY"),
                base_url=env.get("OPENAI_BASE_URL", "https://api.openai.com/v1"),
                poll_interval_seconds=float(env.get("OPENAI_POLL_INTERVAL_SECONDS", "30")),
            ),
            vertex=VertexBackend(
                project_id=env.get("VERTEX_PROJECT_ID"),
                region=env.get("VERTEX_REGION", "us-central1"),
                gcs_bucket=env.get("VERTEX_GCS_BUCKET"),
                access_token=_secret(env, "VERTEX_ACCESS_TOKEN"),
            ),
        ),
    }


def _training(env: Mapping[str, str]) -> TrainingSettings:
    """The policy's deployment-wide values, when set in the environment (per run: the launchpad)."""
    settings: dict[str, Any] = {}
    if env.get("TRAINING_PIPELINE_TRIGGER_THRESHOLD"):
        settings["trigger_threshold"] = int(env["TRAINING_PIPELINE_TRIGGER_THRESHOLD"])
    if env.get("TRAINING_PIPELINE_BACKENDS"):
        settings["backends"] = [b.strip() for b in env["TRAINING_PIPELINE_BACKENDS"].split(",") if b.strip()]
    return TrainingSettings(**settings)


def _secret(env: Mapping[str, str], name: str) -> Any:
    """The value as an `EnvVar` (so run config shows its name, never its value: a key, or a URL that may
    hold a password), or None when unset."""
    return EnvVar(name) if env.get(name) else None
