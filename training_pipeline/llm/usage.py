"""Token usage and cost, attributed to whatever is running in the current context.

The Stage DSL opens a sink around each leaf (an agent run or a prompt execution); every call the client
makes inside it reports there. A `ContextVar` keeps concurrent leaves apart: each thread or task sees
only its own sink.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from pydantic import BaseModel


class Usage(BaseModel):
    """Tokens, calls and (with a price table) cost; also the `consumption` of the Stage DSL's records."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    calls: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.calls += other.calls
        if other.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + other.cost_usd

    def plus(self, other: Usage) -> Usage:
        total = self.model_copy()
        total.add(other)
        return total


@dataclass
class UsageSink:
    usage: Usage = field(default_factory=Usage)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, usage: Usage) -> None:
        with self._lock:
            self.usage.add(usage)


_current: ContextVar[tuple[UsageSink, ...]] = ContextVar("training_pipeline_usage", default=())


@contextmanager
def capture_usage() -> Iterator[UsageSink]:
    """Collect the usage of every call made in this context (nested captures each see their calls)."""
    sink = UsageSink()
    token = _current.set((*_current.get(), sink))
    try:
        yield sink
    finally:
        _current.reset(token)


def report_usage(usage: Usage) -> None:
    for sink in _current.get():
        sink.add(usage)
