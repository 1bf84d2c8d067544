"""The LLM the pipeline talks to: any OpenAI-compatible chat-completions server."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from dagster import ConfigurableResource
from pydantic import Field

from training_pipeline.llm.client import ChatClient, Constraint, Price
from training_pipeline.llm.local import (
    LOCAL_CONTEXT_TOKENS,
    LocalModelServer,
    local_model_available,
    local_model_name,
)


class LLMResource(ConfigurableResource):
    base_url: str | None = Field(
        default=None, description="e.g. http://127.0.0.1:8080/v1 (llama.cpp, vLLM, Ollama)"
    )
    model: str = "default"
    api_key: str | None = Field(
        default=None, description="from EnvVar('LLM_API_KEY') when the server needs one"
    )
    timeout_seconds: float = 120.0
    max_retries: int = 3
    max_concurrency: int = 4
    cache_dir: str | None = Field(
        default=None, description="response cache, so a re-run pays only for new calls"
    )
    prices: dict[str, list[float]] = Field(
        default_factory=dict, description='USD per million tokens, e.g. {"gpt-4o-mini": [0.15, 0.6]}'
    )
    local_model: bool = Field(
        default=True, description="without base_url, serve the bundled SmolLM2 on loopback (make local-llm)"
    )
    context_tokens: int | None = Field(
        default=None,
        ge=256,
        description="the model's context window in tokens: the local model's server is started with it "
        "(default 2048), and the native backend leaves out examples longer than half of it, counted",
    )
    constrained_decoding: Literal["auto", "grammar", "json_schema", "off"] = Field(
        default="auto",
        description="how a decision's answer is held to its fixed choices: a GBNF `grammar` (llama.cpp "
        "servers), an OpenAI `json_schema` response format (OpenAI, vLLM, most hosted servers), or `off`; "
        "auto: grammar for the local model, json_schema for base_url",
    )

    def context(self) -> int:
        """The context window the native backend budgets for: the setting, else the local model's."""
        return self.context_tokens or LOCAL_CONTEXT_TOKENS

    def available(self) -> bool:
        return bool(self.base_url) or (self.local_model and local_model_available())

    @contextmanager
    def open(self, cache_all_temperatures: bool = False) -> Iterator[ChatClient]:
        """A client for the configured server, or for the local model, started here and stopped after."""
        if self.base_url:
            client = self.client(cache_all_temperatures)
            try:
                yield client
            finally:
                client.close()
            return
        if not (self.local_model and local_model_available()):
            raise ValueError("no LLM configured: set base_url (LLM_BASE_URL) or install the local model")
        with LocalModelServer(context_size=self.context()) as server:
            client = self.local_client(server.base_url, cache_all_temperatures)
            try:
                yield client
            finally:
                client.close()

    def local_client(self, base_url: str, cache_all_temperatures: bool = False) -> ChatClient:
        """A client of the local model's server at `base_url` (`LocalModelServer`): by its model's
        name, and holding decisions to their form with a grammar, which llama.cpp's server takes (it
        refuses a `json_schema` response format)."""
        model = local_model_name()
        local = self.model_copy(update={"base_url": base_url, "model": model})
        return local.client(cache_all_temperatures, default_constraint="grammar")

    def client(
        self, cache_all_temperatures: bool = False, default_constraint: Constraint = "json_schema"
    ) -> ChatClient:
        if not self.base_url:
            raise ValueError("no LLM configured: set base_url (LLM_BASE_URL)")
        return ChatClient(
            self.base_url,
            self.model,
            self.api_key,
            timeout=self.timeout_seconds,
            max_retries=self.max_retries,
            max_concurrency=self.max_concurrency,
            cache_dir=Path(self.cache_dir) if self.cache_dir else None,
            cache_all_temperatures=cache_all_temperatures,
            prices={model: Price(*pair) for model, pair in self.prices.items()},
            constraint=default_constraint
            if self.constrained_decoding == "auto"
            else self.constrained_decoding,
        )
