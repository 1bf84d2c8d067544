"""Per-backend training-file formats, converted from elizaOS's examples and validated before upload.

Validation fails fast with the offending line number, so nothing malformed is ever uploaded.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from training_pipeline import jscompat
from training_pipeline.atomic import atomic_open
from training_pipeline.backends.base import BackendError

Example = dict[str, Any]


def _messages(example: Example) -> tuple[str, str, str]:
    system, user, model = (m["content"] for m in example["messages"])
    return system, user, model


def to_chat(example: Example) -> Example:
    """OpenAI-style chat (`system`/`user`/`assistant`), which OpenAI fine-tuning and Atropos's SFT
    tooling read."""
    system, user, model = _messages(example)
    messages = [{"role": "system", "content": system}] if system else []
    return {
        "messages": [*messages, {"role": "user", "content": user}, {"role": "assistant", "content": model}]
    }


def to_vertex(example: Example) -> Example:
    """Vertex AI Gemini supervised tuning: `systemInstruction` + `contents` with roles user/model."""
    system, user, model = _messages(example)
    converted: Example = {}
    if system:
        converted["systemInstruction"] = {"role": "system", "parts": [{"text": system}]}
    converted["contents"] = [
        {"role": "user", "parts": [{"text": user}]},
        {"role": "model", "parts": [{"text": model}]},
    ]
    return converted


def _examples(path: Path) -> Iterator[tuple[int, Example]]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                yield number, json.loads(line)


def convert_file(source: Path, target: Path, convert: Callable[[Example], Example]) -> int:
    """Stream `source` through `convert` into `target` (atomically); returns the example count."""
    count = 0
    with atomic_open(target) as out:
        for number, example in _examples(source):
            try:
                out.write(jscompat.dumps(convert(example)) + "\n")
            except (KeyError, ValueError, TypeError) as err:
                raise BackendError(f"{source}:{number}: not an elizaOS example ({err})") from err
            count += 1
    return count


OPENAI_MIN_EXAMPLES = 10
_OPENAI_ROLES = {"system", "user", "assistant", "tool", "function"}
_OPENAI_MESSAGE_KEYS = {"role", "content", "name", "function_call", "tool_calls", "tool_call_id", "weight"}


def validate_openai_file(path: Path) -> int:
    """OpenAI's data-preparation rules for chat fine-tuning; returns the example count."""
    count = 0
    for number, example in _examples(path):
        where = f"{path.name} line {number}"
        messages = example.get("messages") if isinstance(example, dict) else None
        if not isinstance(messages, list) or not messages:
            raise BackendError(f"{where}: missing messages list")
        for message in messages:
            if not isinstance(message, dict) or "role" not in message or "content" not in message:
                raise BackendError(f"{where}: a message lacks role or content")
            if set(message) - _OPENAI_MESSAGE_KEYS:
                raise BackendError(
                    f"{where}: unrecognised message keys {sorted(set(message) - _OPENAI_MESSAGE_KEYS)}"
                )
            if message["role"] not in _OPENAI_ROLES:
                raise BackendError(f"{where}: unrecognised role {message['role']!r}")
            if not isinstance(message["content"], str) or not message["content"]:
                raise BackendError(f"{where}: empty or non-text content")
        if not any(m["role"] == "assistant" for m in messages):
            raise BackendError(f"{where}: no assistant message")
        count += 1
    if count < OPENAI_MIN_EXAMPLES:
        raise BackendError(
            f"{path.name}: OpenAI fine-tuning needs at least {OPENAI_MIN_EXAMPLES} examples, got {count}"
        )
    return count


VERTEX_MIN_EXAMPLES = 16
VERTEX_MAX_FILE_BYTES = 1 << 30  # 1 GB of JSONL
VERTEX_MAX_EXAMPLE_TOKENS = 131_072  # input + output, Gemini 2.5 Flash / Flash-Lite
_CHARS_PER_TOKEN = 4  # a conservative estimate; the service counts exactly


def validate_vertex_file(path: Path) -> int:
    """Vertex's dataset limits and shape for Gemini supervised tuning; returns the example count."""
    if path.stat().st_size > VERTEX_MAX_FILE_BYTES:
        raise BackendError(f"{path.name}: {path.stat().st_size} bytes is over Vertex's 1 GB limit")
    count = 0
    for number, example in _examples(path):
        where = f"{path.name} line {number}"
        contents = example.get("contents") if isinstance(example, dict) else None
        if not isinstance(contents, list) or not contents:
            raise BackendError(f"{where}: missing contents")
        roles = [c.get("role") if isinstance(c, dict) else None for c in contents]
        if (
            roles[0] != "user"
            or roles[-1] != "model"
            or any(roles[i] == roles[i + 1] for i in range(len(roles) - 1))
            or set(roles) - {"user", "model"}
        ):
            raise BackendError(
                f"{where}: contents must alternate user/model, starting with user, ending with model"
            )
        texts = [p.get("text") for c in contents for p in c.get("parts") or [{}]]
        instruction = example.get("systemInstruction")
        if instruction is not None:
            texts += [p.get("text") for p in instruction.get("parts") or [{}]]
        if any(not isinstance(t, str) or not t for t in texts):
            raise BackendError(f"{where}: every part needs non-empty text")
        if sum(len(t) for t in texts) / _CHARS_PER_TOKEN > VERTEX_MAX_EXAMPLE_TOKENS:
            raise BackendError(
                f"{where}: about {sum(len(t) for t in texts) // _CHARS_PER_TOKEN} tokens, over "
                f"Vertex's {VERTEX_MAX_EXAMPLE_TOKENS} per example"
            )
        count += 1
    if count < VERTEX_MIN_EXAMPLES:
        raise BackendError(
            f"{path.name}: Vertex tuning needs at least {VERTEX_MIN_EXAMPLES} examples, got {count}"
        )
    return count
