"""The LLM the pipeline talks to: any OpenAI-compatible chat-completions server."""

from __future__ import annotations

from pathlib import Path

from dagster import ConfigurableResource
from pydantic import Field

from training_pipeline.llm.client import ChatClient, Price


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

    def client(self, cache_all_temperatures: bool = False) -> ChatClient:
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
        )
