"""Per-backend training-file formats, converted from a window's examples and validated before upload.

A window holds elizaOS's examples (`{"messages": [system, user, model]}`) or a trace dataset's OpenAI
chat examples (multi-turn, `tool_calls`, `tool` results, the `tools` offered). Each is first read as
OpenAI chat (`chat_converter`), which OpenAI fine-tuning and Atropos take as it is; Vertex's and
Tinker's forms are made from that one shape, so every backend trains on either kind of dataset.

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
from training_pipeline.datasets.trace_datasets import chat_line_problem

__all__ = [
    "Ask",
    "answer_text",
    "calls_text",
    "chat_converter",
    "convert_file",
    "to_chat",
    "to_vertex",
    "validate_openai_file",
    "validate_vertex_file",
]

Example = dict[str, Any]
#: a model behind an endpoint: the conversation so far (OpenAI chat messages) and the tools offered,
#: to its answer as text (`answer_text`'s form)
Ask = Callable[[list[dict[str, Any]], list[dict[str, Any]] | None], str]


def answer_text(message: dict[str, Any]) -> str:
    """An assistant message as the text a scorer compares: its content, or its tool calls as JSON
    (`[{"arguments", "name"}]`, arguments parsed) when it calls tools instead."""
    calls = message.get("tool_calls") or []
    if calls:
        return calls_text([(c["function"]["name"], _arguments(c["function"])) for c in calls])
    return message.get("content") or ""


def calls_text(calls: list[tuple[str, Any]]) -> str:
    """Tool calls (name, parsed arguments) as the one text every service's answer is compared in."""
    return json.dumps([{"name": name, "arguments": arguments} for name, arguments in calls], sort_keys=True)


def _messages(example: Example) -> tuple[str, str, str]:
    system, user, model = (m["content"] for m in example["messages"])
    return system, user, model


def to_chat(example: Example) -> Example:
    """An elizaOS example as OpenAI-style chat (`system`/`user`/`assistant`)."""
    system, user, model = _messages(example)
    messages = [{"role": "system", "content": system}] if system else []
    return {
        "messages": [*messages, {"role": "user", "content": user}, {"role": "assistant", "content": model}]
    }


def as_chat(example: Example) -> Example:
    """A trace dataset's line, checked to be the chat example it should be (`chat_line_problem`)."""
    problem = chat_line_problem(example)
    if problem is not None:
        raise ValueError(problem)
    return example


def chat_converter(dataset_format: str) -> Callable[[Example], Example]:
    """What reads a line of a window in `dataset_format` as OpenAI chat."""
    return to_chat if dataset_format == "elizaos" else as_chat


def to_vertex(example: Example) -> Example:
    """An OpenAI chat example as Vertex AI Gemini supervised tuning reads it: `systemInstruction`,
    `contents` alternating `user`/`model` (a tool call is a model's `functionCall` part, a tool's
    result a user's `functionResponse` part; consecutive turns of one role are one content), and the
    `tools` offered as `functionDeclarations`."""
    system: list[dict[str, Any]] = []
    contents: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # tool call id -> the function it called, which a result must name

    def add(role: str, parts: list[dict[str, Any]]) -> None:
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        elif parts:
            contents.append({"role": role, "parts": parts})

    for message in example["messages"]:
        role, text = message["role"], message.get("content")
        if role == "system":
            system.extend([{"text": text}] if text else [])
        elif role == "user":
            add("user", [{"text": text}] if text else [])
        elif role == "assistant":
            parts: list[dict[str, Any]] = [{"text": text}] if text else []
            for call in message.get("tool_calls") or ():
                function = call["function"]
                names[call.get("id", "")] = function["name"]
                parts.append({"functionCall": {"name": function["name"], "args": _arguments(function)}})
            add("model", parts)
        else:  # a tool's result, answering the call it names
            name = names.get(message.get("tool_call_id", ""), message.get("name") or "tool")
            add("user", [{"functionResponse": {"name": name, "response": {"content": text or ""}}}])
    converted: Example = {}
    if system:
        converted["systemInstruction"] = {"role": "system", "parts": system}
    converted["contents"] = contents
    declarations = [tool["function"] for tool in example.get("tools") or () if "function" in tool]
    if declarations:
        converted["tools"] = [{"functionDeclarations": declarations}]
    return converted


def _arguments(function: dict[str, Any]) -> dict[str, Any]:
    """A tool call's arguments as the object Gemini takes (OpenAI sends them as a JSON string)."""
    arguments = function.get("arguments") or "{}"
    parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    return parsed if isinstance(parsed, dict) else {"value": parsed}


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
                raise BackendError(f"{source}:{number}: not a training example ({err})") from err
            count += 1
    return count


OPENAI_MIN_EXAMPLES = 10
_OPENAI_ROLES = {"system", "user", "assistant", "tool", "function"}
_OPENAI_MESSAGE_KEYS = {"role", "content", "name", "function_call", "tool_calls", "tool_call_id", "weight"}


def validate_openai_file(path: Path, minimum: int = OPENAI_MIN_EXAMPLES) -> int:
    """OpenAI's data-preparation rules for chat fine-tuning (at least `minimum` examples); returns the
    example count."""
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
            calls = message["role"] == "assistant" and message.get("tool_calls")
            if not (isinstance(message["content"], str) and message["content"]) and not (
                calls and message["content"] in (None, "")
            ):
                raise BackendError(f"{where}: empty or non-text content")
        if not any(m["role"] == "assistant" for m in messages):
            raise BackendError(f"{where}: no assistant message")
        count += 1
    if count < minimum:
        raise BackendError(f"{path.name}: OpenAI fine-tuning needs at least {minimum} examples, got {count}")
    return count


VERTEX_MIN_EXAMPLES = 16
VERTEX_MAX_FILE_BYTES = 1 << 30  # 1 GB of JSONL
VERTEX_MAX_EXAMPLE_TOKENS = 131_072  # input + output, Gemini 2.5 Flash / Flash-Lite
_CHARS_PER_TOKEN = 4  # a conservative estimate; the service counts exactly


def validate_vertex_file(path: Path, minimum: int = VERTEX_MIN_EXAMPLES) -> int:
    """Vertex's dataset limits and shape for Gemini supervised tuning (at least `minimum` examples: a
    validation set may be smaller than a training set); returns the example count."""
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
        parts = [p for c in contents for p in c.get("parts") or [{}]]
        instruction = example.get("systemInstruction")
        if instruction is not None:
            parts += instruction.get("parts") or [{}]
        if any(not _part_ok(p) for p in parts):
            raise BackendError(f"{where}: every part needs text, or a named function call or response")
        texts = [p.get("text") or json.dumps(p) for p in parts]
        if sum(len(t) for t in texts) / _CHARS_PER_TOKEN > VERTEX_MAX_EXAMPLE_TOKENS:
            raise BackendError(
                f"{where}: about {sum(len(t) for t in texts) // _CHARS_PER_TOKEN} tokens, over "
                f"Vertex's {VERTEX_MAX_EXAMPLE_TOKENS} per example"
            )
        count += 1
    if count < minimum:
        raise BackendError(f"{path.name}: Vertex tuning needs at least {minimum} examples, got {count}")
    return count


def _part_ok(part: Any) -> bool:
    if not isinstance(part, dict):
        return False
    if "text" in part:
        return isinstance(part["text"], str) and bool(part["text"])
    call = part.get("functionCall") or part.get("functionResponse")
    return isinstance(call, dict) and isinstance(call.get("name"), str) and bool(call["name"])
