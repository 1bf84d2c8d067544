"""The deployment's settings: every environment variable that shapes the code location and its
resources, read in one place into one typed model.

`definitions.py` loads them once (`load_settings()`) and hands them to the partitions, the automation,
sensors, executors and resources it builds; nothing reads the environment at import. A typo fails
with the variable's name. Secrets are kept as `SecretStr` only to know that they are set: resources
get them as Dagster `EnvVar`s (resolved when a run starts), so run config shows a name, never a value.
Core code that runs inside a step (the sandbox mode, the record-size cap, the step configuration file)
reads the process's settings through `settings()`, which loads them once.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator


class SettingsError(ValueError):
    pass


class Settings(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    # --- the code location's shape (fixed when it loads) ---
    #: `bwrap` confines task code; `off` runs it as the pipeline (an explicit, logged choice)
    sandbox: Literal["bwrap", "off"] = Field("bwrap", alias="TRAINING_PIPELINE_SANDBOX")
    #: the ceilings of every sandbox (task code, env servers, the scrub): a task's `limits` can lower
    #: them, never raise them or switch them off
    sandbox_max_cpu_seconds: int = Field(3600, alias="TRAINING_PIPELINE_SANDBOX_MAX_CPU_SECONDS", ge=1)
    sandbox_max_memory_mb: int = Field(4096, alias="TRAINING_PIPELINE_SANDBOX_MAX_MEMORY_MB", ge=64)
    sandbox_max_processes: int = Field(256, alias="TRAINING_PIPELINE_SANDBOX_MAX_PROCESSES", ge=4)
    sandbox_max_file_size_mb: int = Field(1024, alias="TRAINING_PIPELINE_SANDBOX_MAX_FILE_SIZE_MB", ge=1)
    sandbox_max_disk_mb: int = Field(4096, alias="TRAINING_PIPELINE_SANDBOX_MAX_DISK_MB", ge=1)
    #: records bigger than this many bytes are quarantined by position and size, never held whole
    max_record_bytes: int = Field(8 * 1024 * 1024, alias="TRAINING_PIPELINE_MAX_RECORD_BYTES", ge=1024)
    #: seconds the redaction of one record (or one stored text) may take before the record is
    #: quarantined (the text stored as a placeholder); 0: no budget
    redaction_budget_seconds: float = Field(30.0, alias="TRAINING_PIPELINE_REDACTION_BUDGET_SECONDS", ge=0)
    #: the first daily partition (unset: the source's first day, `trajectories.earliest.first_day`)
    start_date: str | None = Field(None, alias="TRAINING_PIPELINE_START_DATE", pattern=r"^\d{4}-\d{2}-\d{2}$")
    #: when the nightly automation builds yesterday (UTC)
    nightly_cron: str = Field("0 2 * * *", alias="TRAINING_PIPELINE_NIGHTLY_CRON")
    #: how often the daemon evaluates the training threshold sensor
    sensor_interval_seconds: int = Field(60, alias="TRAINING_PIPELINE_SENSOR_INTERVAL_SECONDS", ge=1)
    #: the executor of the asset jobs, and of task jobs (`async`, `in_process`, `multiprocess`, `celery`)
    executor: str = Field("in_process", alias="TRAINING_PIPELINE_EXECUTOR")
    task_executor: str = Field("async", alias="TRAINING_PIPELINE_TASK_EXECUTOR")
    #: the Celery broker and result backend of the `celery` executor
    celery_broker_url: str | None = Field(None, alias="CELERY_BROKER_URL")
    celery_backend_url: str | None = Field(None, alias="CELERY_BACKEND_URL")
    #: a folder of the user's task files (each becomes a job), besides the bundled examples
    tasks_dir: str | None = Field(None, alias="TRAINING_PIPELINE_TASKS_DIR")
    #: a `training_pipeline.toml` naming extra step implementations
    config: str | None = Field(None, alias="TRAINING_PIPELINE_CONFIG")

    # --- where trajectories come from and files go ---
    #: where files go (datasets, run records, task runs, the LLM cache)
    data: str = Field("data", alias="TRAINING_PIPELINE_DATA")
    #: elizaOS's trajectory table; when set it is the source instead of a folder
    trajectory_db_url: SecretStr | None = Field(None, alias="TRAJECTORY_DB_URL")
    trajectory_db_table: str = Field("trajectories", alias="TRAJECTORY_DB_TABLE")
    #: a folder of trajectory files (default: the bundled sample days)
    trajectory_dir: str | None = Field(None, alias="TRAJECTORY_DIR")
    #: every dataset also written as OpenAI chat JSONL or Parquet with a card (`datasets.formats`)
    dataset_format: Literal["elizaos", "openai-chat", "parquet"] = Field(
        "elizaos", alias="TRAINING_PIPELINE_DATASET_FORMAT"
    )
    #: which dataset a trace's LLM call feeds, by its agent's name: `PATTERN=DATASET,…` (docs/traces.md)
    trace_routes: str = Field("", alias="TRAINING_PIPELINE_TRACE_ROUTES")
    #: the entity directory (default: the sample's, with the sample data)
    entities: str | None = Field(None, alias="TRAINING_PIPELINE_ENTITIES")
    privacy_profile: Literal["strict", "elizaos"] = Field("strict", alias="TRAINING_PIPELINE_PRIVACY_PROFILE")
    #: the kinds of personal data `strict` redacts: all, none, or a comma-separated list
    personal_data: str = Field("all", alias="TRAINING_PIPELINE_PERSONAL_DATA")
    #: an installed spaCy pipeline that also finds names (read where a filter is built: `environment`)
    ner_model: str | None = Field(None, alias="TRAINING_PIPELINE_NER_MODEL")
    #: processes that redact, filter and export a day (0: one per core)
    workers: int = Field(0, alias="TRAINING_PIPELINE_WORKERS", ge=0)
    #: the key that keeps trajectory ids the redaction changed apart (`privacy.id_key`; unset: one made
    #: in the data folder)
    id_key: SecretStr | None = Field(None, alias="TRAINING_PIPELINE_ID_KEY")
    #: an fsspec URL the day's datasets and the run records are copied to (may hold a password)
    shared_url: SecretStr | None = Field(None, alias="TRAINING_PIPELINE_SHARED_URL")

    # --- the LLM of the native backend, task agents and judges ---
    llm_base_url: str | None = Field(None, alias="LLM_BASE_URL")
    llm_model: str = Field("default", alias="LLM_MODEL")
    llm_api_key: SecretStr | None = Field(None, alias="LLM_API_KEY")
    #: how decisions are held to their fixed answers (`resources.llm.LLMResource.constrained_decoding`)
    llm_constrained_decoding: Literal["auto", "grammar", "json_schema", "off"] = Field(
        "auto", alias="LLM_CONSTRAINED_DECODING"
    )
    #: the model's context window in tokens (`resources.llm.LLMResource.context_tokens`)
    llm_context_tokens: int | None = Field(None, alias="LLM_CONTEXT_TOKENS", ge=256)
    #: threads of the local model's server (`llm.local.local_model_threads` reads it where it starts;
    #: validated here with the others); unset: one per core
    local_model_threads: int | None = Field(None, alias="TRAINING_PIPELINE_LOCAL_MODEL_THREADS", ge=1)

    # --- the training policy's deployment-wide values and the backends ---
    trigger_threshold: int | None = Field(None, alias="TRAINING_PIPELINE_TRIGGER_THRESHOLD", ge=1)
    #: comma-separated, in order of preference
    backends: str | None = Field(None, alias="TRAINING_PIPELINE_BACKENDS")
    atropos_data_dir: str | None = Field(None, alias="ATROPOS_DATA_DIR")
    atropos_command: str | None = Field(None, alias="ATROPOS_COMMAND")
    tinker_api_key: SecretStr | None = Field(None, alias="TINKER_API_KEY")
    #: default: the SDK's (Thinking Machines' production service)
    tinker_base_url: str | None = Field(None, alias="TINKER_BASE_URL")
    tinker_base_model: str = Field("meta-llama/Llama-3.1-8B-Instruct", alias="TINKER_BASE_MODEL")
    #: `llama-models` (the package's Llama 3 tokenizer), a local path, or a Hugging Face hub id
    tinker_tokenizer: str = Field("llama-models", alias="TINKER_TOKENIZER")
    openai_api_key: SecretStr | None = Field(None, alias="OPENAI_API_KEY")
    openai_base_url: str = Field("https://api.openai.com/v1", alias="OPENAI_BASE_URL")
    openai_poll_interval_seconds: float = Field(30.0, alias="OPENAI_POLL_INTERVAL_SECONDS", gt=0)
    vertex_project_id: str | None = Field(None, alias="VERTEX_PROJECT_ID")
    vertex_region: str = Field("us-central1", alias="VERTEX_REGION")
    vertex_gcs_bucket: str | None = Field(None, alias="VERTEX_GCS_BUCKET")
    vertex_access_token: SecretStr | None = Field(None, alias="VERTEX_ACCESS_TOKEN")

    @field_validator("backends")
    @classmethod
    def _known_backends(cls, value: str | None) -> str | None:
        """A misspelt backend (`atropus`) is an error when the settings load, naming the known ones:
        dropped, it left a training run "skipped: no backend configured"."""
        from training_pipeline.training.policy import BACKENDS  # the policy module imports pydantic models

        unknown = [name.strip() for name in (value or "").split(",") if name.strip() not in (*BACKENDS, "")]
        if unknown:
            raise ValueError(f"unknown backend {', '.join(map(repr, unknown))}; known: {', '.join(BACKENDS)}")
        return value

    @field_validator("personal_data")
    @classmethod
    def _known_kinds(cls, value: str) -> str:
        """A misspelt kind (`EMAIL`) is an error when the settings load, naming the known ones."""
        from training_pipeline.privacy.personal.kinds import kinds_from_setting

        kinds_from_setting(value)
        return value

    @field_validator("trace_routes")
    @classmethod
    def _routes(cls, value: str) -> str:
        """A route without its dataset, a dataset name no file could carry, or one of elizaOS's tasks
        (training is partitioned by both: they would be one partition) is an error at load."""
        from training_pipeline.datasets.training_tasks import TASKS
        from training_pipeline.traces.routes import TraceRouting

        taken = sorted(set(TraceRouting.parse(value).datasets) & set(TASKS))
        if taken:
            raise ValueError(
                f"trace route dataset {', '.join(taken)} is one of elizaOS's tasks: name it otherwise"
            )
        return value

    def backend_list(self) -> list[str] | None:
        if not self.backends:
            return None
        return [name.strip() for name in self.backends.split(",") if name.strip()]


#: every variable the model reads (its aliases)
VARIABLES = tuple(field.alias for field in Settings.model_fields.values() if field.alias)


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings of `environ` (default: the process's); an empty variable counts as unset."""
    environ = os.environ if environ is None else environ
    values = {name: environ[name] for name in VARIABLES if environ.get(name)}
    try:
        return Settings.model_validate(values)
    except ValidationError as err:
        problems = "; ".join(
            f"{e['loc'][0]}: {e['msg'].removeprefix('Value error, ')}" for e in err.errors(include_url=False)
        )
        raise SettingsError(problems) from None


def settings_with(variables: Mapping[str, str]) -> Settings:
    """The process's settings with `variables` (by their environment names) in place of its own: a
    Component's attributes over the deployment's environment."""
    return load_settings({**os.environ, **variables})


@functools.cache
def settings() -> Settings:
    """The process's settings, read once."""
    return load_settings()
