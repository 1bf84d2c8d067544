"""Training backends as resources. Secrets come from the environment through `EnvVar` (see
`defaults.py`): a backend whose key is not set declines with that reason instead of failing."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

from dagster import ConfigurableResource
from pydantic import Field

from resources.llm import LLMResource
from training_pipeline.backends.atropos import run_atropos
from training_pipeline.backends.base import Backend, DispatchRequest, DispatchResult
from training_pipeline.backends.http import ServiceClient
from training_pipeline.backends.openai_finetune import run_openai_finetune
from training_pipeline.backends.tinker import TinkerConfig, run_tinker
from training_pipeline.backends.vertex import VertexTarget, create_tuning_job
from training_pipeline.optimizers.native import not_a_task, run_native
from training_pipeline.optimizers.programs import DemoStyle, OptimiserConfig, Optimizer
from training_pipeline.stages.session import Budget
from training_pipeline.training.policy import BACKENDS


class NativeBackend(ConfigurableResource):
    """In-process prompt optimisation: one of the Stage-DSL optimisers, run once per seed, chosen on a
    validation split and judged on a test split (docs/stage-dsl.md)."""

    llm: LLMResource
    #: demonstrations picked per question are the default: on the bundled model they are what gains
    #: (bench/README.md); instruction search and reflective evolution need a model that can write prompts
    optimizer: Optimizer = "nearest-fewshot"
    seeds: list[int] = Field(
        default=[0, 1, 2], description="one optimisation per seed; the gate also judges them pooled"
    )
    validation_fraction: float = Field(default=0.35, gt=0, lt=1)
    test_fraction: float = Field(default=0.35, gt=0, lt=1)
    max_validation: int = Field(default=150, ge=1, description="validation examples at most (a call each)")
    max_test: int = Field(default=300, ge=1, description="test examples at most")
    train_batch: int = 8
    rounds: int = 3
    variants: int = 4
    population: int = 4
    generations: int = 3
    k: int = Field(default=5, description="demonstrations per set")
    demo_sets: int = Field(default=4, description="demonstration sets scored on validation")
    neighbours: int = Field(default=3, ge=1, description="nearest-fewshot: demonstrations per question")
    demo_style: DemoStyle = "turns"
    answer_tokens: int = Field(default=512, description="longest answer a prompt may produce when scored")
    max_calls: int | None = Field(default=6000, description="spend cap: LLM calls per run")
    max_tokens: int | None = Field(default=None, description="spend cap: tokens per run")
    max_usd: float | None = Field(default=None, description="spend cap: USD per run (needs llm.prices)")

    def dispatch(self, request: DispatchRequest) -> DispatchResult:
        declined = not_a_task(request)
        if declined is not None:
            return declined
        if not self.llm.available():
            return DispatchResult(
                False,
                reason="no LLM configured for the native backend (set LLM_BASE_URL, "
                "or install the local model with `make local-llm`)",
            )
        cfg = OptimiserConfig(
            optimizer=self.optimizer,
            validation_fraction=self.validation_fraction,
            test_fraction=self.test_fraction,
            max_validation=self.max_validation,
            max_test=self.max_test,
            train_batch=self.train_batch,
            rounds=self.rounds,
            variants=self.variants,
            population=self.population,
            generations=self.generations,
            k=self.k,
            demo_sets=self.demo_sets,
            demo_style=self.demo_style,
            neighbours=self.neighbours,
            max_tokens=self.answer_tokens,
            # a server at base_url says nothing of its window: budget only where it is known
            context_tokens=self.llm.context_tokens or (None if self.llm.base_url else self.llm.context()),
        )
        if self.validation_fraction + self.test_fraction >= 1:
            raise ValueError("validation_fraction + test_fraction must leave a training share (< 1)")
        budget = Budget(self.max_tokens, self.max_usd, self.max_calls)
        with self.llm.open(cache_all_temperatures=True) as client:  # seeded samples replay after a crash
            return run_native(request, client, cfg, budget, seeds=self.seeds or [0])


class AtroposBackend(ConfigurableResource):
    data_dir: str = Field(description="where Atropos reads datasets; one folder per task")
    command: list[str] | None = Field(
        default=None,
        description="command to launch training; {dataset} {validation} {task} {run_id} {data_dir} are "
        "filled in",
    )
    timeout_seconds: float = 24 * 3600

    def dispatch(self, request: DispatchRequest) -> DispatchResult:
        return run_atropos(request, Path(self.data_dir), self.command, self.timeout_seconds)


class TinkerBackend(ConfigurableResource):
    """Thinking Machines Tinker: LoRA supervised fine-tuning driven batch by batch (the `tinker` extra)."""

    api_key: str | None = Field(default=None, description="from EnvVar('TINKER_API_KEY')")
    base_url: str | None = Field(default=None, description="default: the SDK's production service")
    base_model: str = "meta-llama/Llama-3.1-8B-Instruct"
    tokenizer: str = Field(
        default="llama-models",
        description="'llama-models' (Llama 3's tokenizer from that package), a local tokenizer.json or "
        "tokenizer.model, or a Hugging Face hub id",
    )
    lora_rank: int = 32
    learning_rate: float = 1e-4
    epochs: int = 1
    batch_size: int = 32
    max_example_tokens: int = 8192
    seed: int = 0

    def config(self) -> TinkerConfig:
        return TinkerConfig(**{**self.model_dump(), "api_key": self.api_key or ""})

    def dispatch(self, request: DispatchRequest) -> DispatchResult:
        if importlib.util.find_spec("tinker") is None:
            return DispatchResult(
                False,
                reason="tinker SDK not installed",
                notes=["`pip install 'training-pipeline[tinker]'` and set TINKER_API_KEY to enable Tinker"],
            )
        if not self.api_key:
            return DispatchResult(False, reason="TINKER_API_KEY is not set")
        return run_tinker(request, self.config())


class OpenAIBackend(ConfigurableResource):
    api_key: str | None = Field(default=None, description="from EnvVar('OPENAI_API_KEY')")
    base_url: str = "https://api.openai.com/v1"
    model: str = "gpt-4o-mini-2024-07-18"
    wait_for_completion: bool = True
    poll_interval_seconds: float = 30.0
    timeout_seconds: float = 24 * 3600

    def dispatch(self, request: DispatchRequest) -> DispatchResult:
        if not self.api_key:
            return DispatchResult(False, reason="OPENAI_API_KEY is not set")
        client = ServiceClient("OpenAI", self.base_url, self.api_key)
        try:
            return run_openai_finetune(
                request,
                client,
                self.model,
                self.wait_for_completion,
                self.poll_interval_seconds,
                self.timeout_seconds,
            )
        finally:
            client.close()


class VertexBackend(ConfigurableResource):
    """Vertex AI Gemini supervised tuning. The job is created here; `tuned_model` polls it."""

    project_id: str | None = None
    region: str = "us-central1"
    gcs_bucket: str | None = None
    access_token: str | None = Field(
        default=None, description="from EnvVar('VERTEX_ACCESS_TOKEN'); else gcloud"
    )
    base_model: str | None = Field(default=None, description="default: elizaOS's choice for the task")
    epochs: int = 3
    learning_rate_multiplier: float = 1.0
    poll_interval_seconds: float = 60.0
    timeout_seconds: float = 24 * 3600
    api_endpoint: str | None = Field(
        default=None, description="tests only: a loopback stand-in of the service"
    )

    def target(self) -> VertexTarget:
        return VertexTarget(self.project_id or "", self.region, self.gcs_bucket or "", self.api_endpoint)

    def token(self) -> str | None:
        if self.access_token:
            return self.access_token
        if shutil.which("gcloud") is None:
            return None
        proc = subprocess.run(["gcloud", "auth", "print-access-token"], capture_output=True, text=True)
        return proc.stdout.strip() or None if proc.returncode == 0 else None

    def dispatch(self, request: DispatchRequest) -> DispatchResult:
        if not self.project_id or not self.gcs_bucket:
            return DispatchResult(
                False,
                reason="vertex backend needs project_id and gcs_bucket",
                notes=["set project_id and gcs_bucket on the vertex backend resource"],
            )
        token = self.token()
        if not token:
            return DispatchResult(
                False, reason="no Google access token (set VERTEX_ACCESS_TOKEN or log in with gcloud)"
            )
        return create_tuning_job(
            request, self.target(), token, self.base_model, self.epochs, self.learning_rate_multiplier
        )


class TrainingBackends(ConfigurableResource):
    """Every backend, by the name the training policy uses."""

    native: NativeBackend
    atropos: AtroposBackend
    tinker: TinkerBackend
    openai: OpenAIBackend
    vertex: VertexBackend

    def get(self, name: str) -> Backend | None:
        return getattr(self, name) if name in BACKENDS else None
