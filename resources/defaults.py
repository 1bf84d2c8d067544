"""The resources a deployment gets, chosen from the environment (never in asset code).

- `TRAJECTORY_DB_URL` set: read elizaOS's `trajectories` table (the URL stays an `EnvVar`, so the
  password is never in run config); otherwise `TRAJECTORY_DIR` (default: the bundled sample days).
- `TRAINING_PIPELINE_DATA`: where files go (default `data/` in the working directory).
- `TRAINING_PIPELINE_ENTITIES`: the entity directory (default: the sample's, with the sample data).
- `TRAINING_PIPELINE_PRIVACY_PROFILE`: `strict` (default) or `elizaos`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from dagster import EnvVar
from training_pipeline.resources.privacy import SAMPLE_ENTITIES, PrivacySettings
from training_pipeline.resources.sources import (
    SAMPLE_TRAJECTORIES,
    DatabaseTrajectorySource,
    FileTrajectorySource,
)
from training_pipeline.resources.storage import DataStore


def default_resources(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    env = os.environ if environ is None else environ
    if env.get("TRAJECTORY_DB_URL"):
        source: Any = DatabaseTrajectorySource(
            url=EnvVar("TRAJECTORY_DB_URL"), table=env.get("TRAJECTORY_DB_TABLE", "trajectories")
        )
        entities = env.get("TRAINING_PIPELINE_ENTITIES")
    else:
        source = FileTrajectorySource(path=env.get("TRAJECTORY_DIR", str(SAMPLE_TRAJECTORIES)))
        entities = env.get("TRAINING_PIPELINE_ENTITIES") or (
            None if env.get("TRAJECTORY_DIR") else str(SAMPLE_ENTITIES)
        )
    return {
        "trajectory_source": source,
        "privacy": PrivacySettings(
            profile=env.get("TRAINING_PIPELINE_PRIVACY_PROFILE", "strict"), entity_directory=entities
        ),
        "store": DataStore(root=env.get("TRAINING_PIPELINE_DATA", "data")),
    }
