"""Chat completions over HTTP, the OpenAI-compatible protocol every local and hosted server speaks.

Transient failures (timeouts, refused connections, 408/409/425/429/5xx) are retried with exponential
backoff, honouring `Retry-After`; anything else fails at once with the server's message. A semaphore caps
concurrent requests. Usage (and cost, given a price table) is reported to the caller's context.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from training_pipeline.http_errors import TRANSIENT_STATUS, error_message, retry_after
from training_pipeline.llm.answer_form import AnswerForm
from training_pipeline.llm.cache import ResponseCache, request_key
from training_pipeline.llm.usage import Usage, report_usage

#: how a server is told an answer's form (`answer_form.AnswerForm`): a GBNF grammar (llama.cpp's
#: servers), an OpenAI `json_schema` response format (OpenAI, vLLM, and most hosted servers), or not at all
Constraint = Literal["grammar", "json_schema", "off"]


class LLMError(RuntimeError):
    def __init__(self, message: str, *, transient: bool, status: int | None = None) -> None:
        super().__init__(message)
        self.transient = transient
        self.status = status


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    prompt: float
    completion: float

    def cost(self, usage: Usage) -> float:
        return (usage.prompt_tokens * self.prompt + usage.completion_tokens * self.completion) / 1_000_000


@dataclass
class ChatResponse:
    content: str | None
    tool_calls: list[dict[str, Any]]
    usage: Usage
    model: str
    finish_reason: str | None
    cached: bool = False
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def message(self) -> dict[str, Any]:
        """The assistant message to append to the conversation."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = self.tool_calls
        return message


class ChatClient:
    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        timeout: float = 120.0,
        max_retries: int = 3,
        backoff_seconds: float = 0.5,
        max_concurrency: int = 4,
        cache_dir: Path | None = None,
        cache_all_temperatures: bool = False,
        prices: Mapping[str, Price] | None = None,
        constraint: Constraint = "json_schema",
    ) -> None:
        self.model = model
        self.constraint = constraint
        self._retries = max_retries
        self._backoff = backoff_seconds
        self._gate = threading.Semaphore(max_concurrency)
        self._cache = ResponseCache(cache_dir) if cache_dir else None
        self._cache_all = cache_all_temperatures
        self._prices = dict(prices or {})
        import httpx  # here, not at import: every process that loads the code location imports this module

        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout, headers=headers)

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        json_mode: bool = False,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        model: str | None = None,
        seed: int | None = None,
        answer_form: AnswerForm | None = None,
        **extra: Any,
    ) -> ChatResponse:
        """One chat completion. With `answer_form`, the answer is held to that form (by the client's
        `constraint`; with "off" the model answers freely and the caller's scorer judges what it
        wrote)."""
        body: dict[str, Any] = {
            "model": model or self.model,
            "messages": list(messages),
            "temperature": temperature,
        }
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if json_mode:
            body["response_format"] = {"type": "json_object"}
        if tools:
            body["tools"] = list(tools)
        if tool_choice is not None:
            body["tool_choice"] = tool_choice
        if seed is not None:
            body["seed"] = seed
        if answer_form and self.constraint == "grammar":
            body["grammar"] = answer_form.grammar()
        elif answer_form and self.constraint == "json_schema":
            body["response_format"] = answer_form.response_format()
        body.update(extra)

        cacheable = self._cache is not None and (temperature == 0 or self._cache_all)
        key = request_key("/chat/completions", body) if cacheable else ""
        if cacheable and (hit := self._cache.get(key)) is not None:  # type: ignore[union-attr]
            response = self._parse(hit, cached=True)  # already paid for: no usage, no call, no cost
        else:
            raw = self._post(body)
            if cacheable:
                self._cache.put(key, raw)  # type: ignore[union-attr]
            response = self._parse(raw, cached=False)
            report_usage(response.usage)
        if answer_form and self.constraint == "json_schema":
            response.content = answer_form.from_json(response.content)
        return response

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        import httpx

        for attempt in range(self._retries + 1):
            try:
                with self._gate:
                    answer = self._http.post("/chat/completions", json=body)
            except httpx.TransportError as err:
                error = LLMError(f"{type(err).__name__}: {err}", transient=True)
                wait = None
            else:
                if answer.is_success:
                    try:
                        return answer.json()
                    except ValueError as err:
                        raise LLMError(
                            f"server sent invalid JSON: {answer.text[:200]}", transient=False
                        ) from err
                transient = answer.status_code in TRANSIENT_STATUS
                error = LLMError(
                    f"HTTP {answer.status_code}: {error_message(answer)}",
                    transient=transient,
                    status=answer.status_code,
                )
                wait = retry_after(answer)
            if not error.transient or attempt == self._retries:
                raise error
            time.sleep(wait if wait is not None else self._backoff * 2**attempt)
        raise AssertionError("unreachable")

    def _parse(self, raw: dict[str, Any], cached: bool) -> ChatResponse:
        try:
            choice = raw["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError) as err:
            raise LLMError(f"unexpected response shape: {str(raw)[:200]}", transient=False) from err
        usage_raw = raw.get("usage") or {}
        usage = Usage(
            prompt_tokens=int(usage_raw.get("prompt_tokens") or 0),
            completion_tokens=int(usage_raw.get("completion_tokens") or 0),
            calls=1,
        )
        model = raw.get("model") or self.model
        price = self._prices.get(model) or self._prices.get(self.model)
        if price is not None:
            usage.cost_usd = price.cost(usage)
        return ChatResponse(
            message.get("content"),
            list(message.get("tool_calls") or []),
            usage,
            model,
            choice.get("finish_reason"),
            cached,
            raw,
        )

    def close(self) -> None:
        self._http.close()
