"""Retries inside a leaf, decided by a failure analyser: what kind of failure, and is it transient?"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import ValidationError

from training_pipeline.llm.client import LLMError
from training_pipeline.stages.records import FailureInfo

FailureAnalyser = Callable[[BaseException], FailureInfo]


def default_analyser(error: BaseException) -> FailureInfo:
    """LLM errors know whether they are transient; timeouts and dropped connections are; bad data
    (validation, values, types) is not; anything else is unknown."""
    kind = type(error).__name__
    if isinstance(error, LLMError):
        return FailureInfo(kind=kind, message=str(error), transient=error.transient)
    if isinstance(error, TimeoutError | ConnectionError):
        return FailureInfo(kind=kind, message=str(error), transient=True)
    if isinstance(error, ValidationError | ValueError | KeyError | TypeError):
        return FailureInfo(kind=kind, message=str(error)[:500], transient=False)
    return FailureInfo(kind=kind, message=str(error)[:500], transient=None)


class Backoff(enum.Enum):
    FIXED = "fixed"
    LINEAR = "linear"
    EXPONENTIAL = "exponential"


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 3
    backoff: Backoff = Backoff.EXPONENTIAL
    base_seconds: float = 0.5
    max_seconds: float = 30.0
    #: Conservative (False) never retries a failure the analyser cannot classify; lenient does.
    lenient: bool = False
    analyser: FailureAnalyser = field(default=default_analyser)

    def should_retry(self, failure: FailureInfo, attempt: int) -> bool:
        if attempt >= self.max_attempts:
            return False
        return failure.transient is True or (failure.transient is None and self.lenient)

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based)."""
        if self.backoff is Backoff.FIXED:
            seconds = self.base_seconds
        elif self.backoff is Backoff.LINEAR:
            seconds = self.base_seconds * attempt
        else:
            seconds = self.base_seconds * 2 ** (attempt - 1)
        return min(seconds, self.max_seconds)
