"""The resources a deployment gets, built from its settings (`training_pipeline/settings.py`, never in
asset code).

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

from typing import Any

from dagster import EnvVar
from pydantic import SecretStr

from resources.backends import (
    AtroposBackend,
    NativeBackend,
    OpenAIBackend,
    TinkerBackend,
    TrainingBackends,
    VertexBackend,
)
from resources.layers_io import LAYERS_IO_MANAGER, LayersIOManager
from resources.llm import LLMResource
from resources.privacy import PrivacySettings
from resources.sources import (
    DatabaseTrajectorySource,
    FileTrajectorySource,
)
from resources.storage import DataStore
from resources.tasks import TaskOverrides
from resources.training import TrainingSettings
from training_pipeline import SAMPLE_ENTITIES, SAMPLE_TRAJECTORIES
from training_pipeline.settings import Settings


def default_resources(settings: Settings) -> dict[str, Any]:
    """Every resource: what the CLI and single-job callers bind (the code location binds each domain's
    part in its own module: `shared_resources` at the top, the others beside their jobs)."""
    shared = shared_resources(settings)
    return {**shared, **training_resources(settings, shared["training_pipeline_llm"]), **task_resources()}


def shared_resources(settings: Settings) -> dict[str, Any]:
    """The source, the privacy profile, the store, the LLM and the IO manager: used by more than one
    domain."""
    data = settings.data
    if settings.trajectory_db_url:
        source: Any = DatabaseTrajectorySource(
            url=EnvVar("TRAJECTORY_DB_URL"), table=settings.trajectory_db_table
        )
        entities = settings.entities
    else:
        source = FileTrajectorySource(
            path=settings.trajectory_dir or str(SAMPLE_TRAJECTORIES),
            agent_runs_dir=f"{data}/agent_trajectories",
            trace_routes=settings.trace_routes,
        )
        entities = settings.entities or (None if settings.trajectory_dir else str(SAMPLE_ENTITIES))
    store = DataStore(root=data, shared_url=_secret(settings.shared_url, "TRAINING_PIPELINE_SHARED_URL"))
    return {
        "training_pipeline_source": source,
        "training_pipeline_privacy": PrivacySettings(
            profile=settings.privacy_profile,
            entity_directory=entities,
            workers=settings.workers,
            personal_data=settings.personal_data,
            id_key=_secret(settings.id_key, "TRAINING_PIPELINE_ID_KEY"),
            id_key_folder=data,
        ),
        "training_pipeline_store": store,
        LAYERS_IO_MANAGER: LayersIOManager(store=store),
        "training_pipeline_llm": LLMResource(
            base_url=settings.llm_base_url,
            model=settings.llm_model,
            api_key=_secret(settings.llm_api_key, "LLM_API_KEY"),
            cache_dir=f"{data}/llm_cache",
            constrained_decoding=settings.llm_constrained_decoding,
            context_tokens=settings.llm_context_tokens,
        ),
    }


def training_resources(settings: Settings, llm: LLMResource) -> dict[str, Any]:
    """The training policy's deployment-wide values (per run: the launchpad) and the backends."""
    policy: dict[str, Any] = {}
    if settings.trigger_threshold:
        policy["trigger_threshold"] = settings.trigger_threshold
    if settings.backend_list():
        policy["backends"] = settings.backend_list()
    return {
        "training_pipeline_policy": TrainingSettings(**policy),
        "training_pipeline_backends": TrainingBackends(
            native=NativeBackend(llm=llm),
            atropos=AtroposBackend(
                data_dir=settings.atropos_data_dir or f"{settings.data}/atropos",
                command=settings.atropos_command.split() if settings.atropos_command else None,
            ),
            tinker=TinkerBackend(
                api_key=_secret(settings.tinker_api_key, "TINKER_API_KEY"),
                base_url=settings.tinker_base_url,
                base_model=settings.tinker_base_model,
                tokenizer=settings.tinker_tokenizer,
            ),
            openai=OpenAIBackend(
                api_key=_secret(settings.openai_api_key, "OPENAI_API_KEY"),
                base_url=settings.openai_base_url,
                poll_interval_seconds=settings.openai_poll_interval_seconds,
            ),
            vertex=VertexBackend(
                project_id=settings.vertex_project_id,
                region=settings.vertex_region,
                gcs_bucket=settings.vertex_gcs_bucket,
                access_token=_secret(settings.vertex_access_token, "VERTEX_ACCESS_TOKEN"),
            ),
        ),
    }


def task_resources() -> dict[str, Any]:
    return {"training_pipeline_task_overrides": TaskOverrides()}


def _secret(value: SecretStr | None, name: str) -> EnvVar | None:
    """The variable as an `EnvVar` (run config shows its name, never its value: a key, or a URL that
    may hold a password), or None when unset."""
    return EnvVar(name) if value else None
