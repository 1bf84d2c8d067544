"""The one redaction for everything the project keeps or hands to Dagster outside the datasets: the
quarantine, the task context store and its JSON form, step outputs, log messages, metadata and run
records. It is the strict profile plus the secret values of this process's environment, so a key an
agent read in an email, a script printed, or a service echoed in an error is stored as its label.

(The trajectory store itself gets the day's privacy profile, as the datasets do: see `ingest`.)
"""

from __future__ import annotations

import functools
from typing import Any

from training_pipeline.environment import process_environment
from training_pipeline.privacy.budget import OverBudget, budget
from training_pipeline.privacy.filter import PrivacyFilter, secret_env_values
from training_pipeline.privacy.strings import free_key

#: what a stored text becomes when its redaction ran past its budget: nothing of it is kept
OVER_BUDGET = "<REDACTED:over-budget>"


def stored_filter() -> PrivacyFilter:
    """The strict filter with the environment's secret values as they are now (a test or a worker may
    have set more since the last call). Looked up by the environment's items: picking the secrets out
    of it costs a pattern test per variable, and this runs for every stored text."""
    return _filter_for(tuple(process_environment().items()))


@functools.lru_cache(maxsize=8)
def _filter_for(environment: tuple[tuple[str, str], ...]) -> PrivacyFilter:
    return _filter(secret_env_values("strict", dict(environment)))


@functools.lru_cache(maxsize=8)
def _filter(env_secrets: tuple[str, ...]) -> PrivacyFilter:
    return PrivacyFilter("strict", None, env_secrets)


def safe_text(text: str) -> str:
    redactor = stored_filter()
    try:
        with budget(redactor.budget_seconds):
            return redactor.redact(text)
    except OverBudget:
        return OVER_BUDGET


def safe_bytes(data: bytes) -> bytes:
    """Bytes redacted: as UTF-8 text when they are, else through Latin-1 (a quarantined record that is
    not UTF-8, a binary file), which maps every byte to one character and back, so ASCII credentials
    inside them are found and the rest is kept."""
    try:
        return safe_text(data.decode("utf-8")).encode("utf-8")
    except UnicodeDecodeError:
        return safe_text(data.decode("latin-1")).encode("latin-1")


def safe_value(value: Any, redactor: PrivacyFilter | None = None) -> Any:
    """A copy of a JSON-like value with every string (keys too) redacted; iterative, so no nesting
    depth can exhaust the stack."""
    redactor = redactor or stored_filter()
    try:
        with budget(redactor.budget_seconds):
            return _redacted_copy(value, redactor)
    except OverBudget:
        return OVER_BUDGET


def _redacted_copy(value: Any, redactor: PrivacyFilter) -> Any:
    def copy(item: Any) -> Any:
        if isinstance(item, str):
            return redactor.redact(item)
        if isinstance(item, dict):
            fresh: dict[str, Any] = {}
            pending.append((item, fresh))
            return fresh
        if isinstance(item, list | tuple):
            fresh_list: list[Any] = []
            pending.append((item, fresh_list))
            return fresh_list
        return item

    pending: list[tuple[Any, Any]] = []
    root = copy(value)
    while pending:
        source, target = pending.pop()
        if isinstance(source, dict):
            for key, item in source.items():
                target[free_key(redactor.redact(str(key)), target)] = copy(item)
        else:
            target.extend(copy(item) for item in source)
    return root


class SafeLog:
    """A logger (Dagster's `context.log` or the standard library's) whose every message is redacted
    before it is handed on: what a step or service says may quote what it read."""

    def __init__(self, log: Any) -> None:
        self._log = log

    def _say(self, level: str, message: object, args: tuple[Any, ...], **kwargs: Any) -> None:
        text = str(message) % args if args else str(message)
        getattr(self._log, level)(safe_text(text), **kwargs)

    def debug(self, message: object, *args: Any, **kwargs: Any) -> None:
        self._say("debug", message, args, **kwargs)

    def info(self, message: object, *args: Any, **kwargs: Any) -> None:
        self._say("info", message, args, **kwargs)

    def warning(self, message: object, *args: Any, **kwargs: Any) -> None:
        self._say("warning", message, args, **kwargs)

    def error(self, message: object, *args: Any, **kwargs: Any) -> None:
        self._say("error", message, args, **kwargs)
