"""What a span says about an agent, read by the conventions instrumentations write: an LLM call with its
whole message list, tools and answer; an agent's or a tool's step; or nothing we keep.

Conventions read, the first that holds the messages winning, so a span written in two of them is one call:
1. GenAI, attributes form (semantic conventions 1.37+, `OTEL_SEMCONV_STABILITY_OPT_IN=
   gen_ai_latest_experimental`): `gen_ai.input.messages`, `gen_ai.output.messages`,
   `gen_ai.system_instructions`, `gen_ai.tool.definitions`, messages made of typed parts.
2. OpenInference (Arize): `llm.input_messages.N.message.role/content/tool_calls.M.tool_call.…`,
   `llm.output_messages.…`, `llm.tools.N.tool.json_schema`.
3. GenAI, older forms: the `gen_ai.content.prompt` / `gen_ai.content.completion` span events holding
   `gen_ai.prompt` / `gen_ai.completion` as JSON, the per-message events (`gen_ai.user.message`, …,
   `gen_ai.choice`), and the flattened `gen_ai.prompt.N.role/content` attributes (OpenLLMetry).

Messages come out in the OpenAI chat shape every trainer takes: `role` (`system`, `user`, `assistant`,
`tool`), `content`, `tool_calls` (`id`, `type: function`, `function: {name, arguments}` with the
arguments as a JSON string), `tool_call_id`. Of the other attributes only model, provider, token usage,
finish reasons, sampling settings and timing are kept; the rest is never stored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from training_pipeline.traces.otlp import Span

__all__ = ["InferenceCall", "NoContent", "SpanProblem", "Step", "read_span"]

_INFERENCE_OPERATIONS = {"chat", "text_completion", "generate_content", "completion"}
_AGENT_OPERATIONS = {"invoke_agent", "create_agent"}
_TOOL_OPERATIONS = {"execute_tool"}


@dataclass(frozen=True, slots=True)
class InferenceCall:
    span: Span
    messages: list[dict[str, Any]]
    output: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    convention: str
    model: str | None
    provider: str | None
    input_tokens: int | None
    output_tokens: int | None
    finish_reasons: list[str]
    temperature: float | None
    max_tokens: int | None


@dataclass(frozen=True, slots=True)
class Step:
    """An agent's invocation or a tool's execution: a step of the trajectory, no example of its own."""

    span: Span
    kind: str  # "agent" | "tool"
    name: str | None
    tool_call_id: str | None = None
    arguments: str | None = None
    result: str | None = None


@dataclass(frozen=True, slots=True)
class NoContent:
    """An inference span without its messages (the instrumentation did not capture content)."""

    span: Span


@dataclass(frozen=True, slots=True)
class SpanProblem:
    """An inference span whose messages cannot be read: quarantined with the reason."""

    span: Span
    reason: str


def read_span(span: Span) -> InferenceCall | Step | NoContent | SpanProblem | None:
    """What `span` is to a trajectory; None for a span that is none of ours (HTTP, database...)."""
    attributes = span.attributes
    operation = attributes.get("gen_ai.operation.name")
    openinference = attributes.get("openinference.span.kind")
    try:
        read = _messages(span)
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        return SpanProblem(span, f"unreadable messages: {type(err).__name__}: {err}")
    if read is not None:
        convention, messages, output, tools = read
        return _call(span, convention, messages, output, tools)
    if operation in _INFERENCE_OPERATIONS or openinference == "LLM":
        return NoContent(span)
    if operation in _AGENT_OPERATIONS or openinference == "AGENT":
        name = attributes.get("gen_ai.agent.name") or attributes.get("agent.name") or span.name
        return Step(span, "agent", _text(name))
    if operation in _TOOL_OPERATIONS or openinference == "TOOL":
        return Step(
            span,
            "tool",
            _text(attributes.get("gen_ai.tool.name") or attributes.get("tool.name") or span.name),
            _text(attributes.get("gen_ai.tool.call.id") or attributes.get("tool_call.id")),
            _as_json_text(attributes.get("gen_ai.tool.call.arguments", attributes.get("input.value"))),
            _as_json_text(attributes.get("gen_ai.tool.call.result", attributes.get("output.value"))),
        )
    return None


def _call(
    span: Span,
    convention: str,
    messages: list[dict[str, Any]],
    output: list[dict[str, Any]],
    tools: list[dict[str, Any]],
) -> InferenceCall:
    a = span.attributes
    finish = a.get("gen_ai.response.finish_reasons")
    if isinstance(finish, str):
        finish = [finish]
    if not finish and a.get("llm.finish_reason"):
        finish = [a["llm.finish_reason"]]
    finish = [str(reason) for reason in finish or () if reason]
    if not finish:
        finish = [str(m["finish_reason"]) for m in output if m.get("finish_reason")]
    for message in output:
        message.pop("finish_reason", None)
    return InferenceCall(
        span,
        messages,
        output,
        tools,
        convention,
        _text(a.get("gen_ai.response.model") or a.get("gen_ai.request.model") or a.get("llm.model_name")),
        _text(
            a.get("gen_ai.provider.name")
            or a.get("gen_ai.system")
            or a.get("llm.provider")
            or a.get("llm.system")
        ),
        _int(
            a.get(
                "gen_ai.usage.input_tokens",
                a.get("gen_ai.usage.prompt_tokens", a.get("llm.token_count.prompt")),
            )
        ),
        _int(
            a.get(
                "gen_ai.usage.output_tokens",
                a.get("gen_ai.usage.completion_tokens", a.get("llm.token_count.completion")),
            )
        ),
        finish,
        _float(a.get("gen_ai.request.temperature")),
        _int(a.get("gen_ai.request.max_tokens")),
    )


Read = tuple[str, list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]


def _messages(span: Span) -> Read | None:
    a = span.attributes
    if "gen_ai.input.messages" in a or "gen_ai.output.messages" in a:
        messages = [m for raw in _json_list(a.get("gen_ai.input.messages")) for m in _from_parts(raw)]
        instructions = _json_list(a.get("gen_ai.system_instructions"))
        if instructions:
            text = _joined(_part_text(part) for part in instructions)
            messages.insert(0, {"role": "system", "content": text})
        output = [m for raw in _json_list(a.get("gen_ai.output.messages")) for m in _from_parts(raw)]
        tools = [_tool_definition(tool) for tool in _json_list(a.get("gen_ai.tool.definitions"))]
        return "gen_ai", messages, output, tools
    if any(key.startswith(("llm.input_messages.", "llm.output_messages.")) for key in a):
        tools = [_openai_tool(_json(value)) for _, value in _indexed(a, "llm.tools.", ".tool.json_schema")]
        return (
            "openinference",
            _flattened(a, "llm.input_messages.", ".message."),
            _flattened(a, "llm.output_messages.", ".message."),
            tools,
        )
    older = _older_gen_ai(span)
    if older is not None:
        messages, output = older
        functions = _flattened_objects(a, "llm.request.functions.")
        tools = [_tool_definition(function) for function in functions]
        return "gen_ai-events", messages, output, tools
    return None


# --- GenAI, attributes form ---------------------------------------------------------------------------


def _from_parts(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """A GenAI message (`role`, `parts`) as OpenAI chat messages: tool responses become `tool`
    messages of their own, one per response, as OpenAI's API takes them."""
    role = str(raw.get("role") or "user")
    parts = raw.get("parts")
    if parts is None and "content" in raw:  # some SDKs write OpenAI's shape here
        return [_openai_message(raw)]
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    for part in parts or ():
        kind = part.get("type")
        if kind == "tool_call":
            calls.append(_tool_call(part.get("id"), part.get("name"), part.get("arguments")))
        elif kind == "tool_call_response":
            response = part.get("response", part.get("result"))
            out.append(
                {"role": "tool", "tool_call_id": _text(part.get("id")), "content": _as_json_text(response)}
            )
        else:
            text = _part_text(part)
            if text is not None:
                texts.append(text)
    if texts or calls or not out:
        message: dict[str, Any] = {"role": role, "content": _joined(texts) if texts else None}
        if calls:
            message["tool_calls"] = calls
        if raw.get("finish_reason"):
            message["finish_reason"] = raw["finish_reason"]
        if raw.get("name"):
            message["name"] = str(raw["name"])
        out.insert(0, message)
    return out


def _part_text(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return None
    if part.get("type", "text") in ("text", "reasoning") or "content" in part:
        value = part.get("content", part.get("text"))
        return value if isinstance(value, str) else None
    return None


def _tool_definition(tool: dict[str, Any]) -> dict[str, Any]:
    """A tool definition in OpenAI's shape, from GenAI's flat one or OpenAI's own."""
    if "function" in tool:
        return _openai_tool(tool)
    function = {"name": tool.get("name")}
    if tool.get("description") is not None:
        function["description"] = tool["description"]
    parameters = tool.get("parameters")
    if isinstance(parameters, str):
        parameters = _json(parameters)
    if parameters is not None:
        function["parameters"] = parameters
    return {"type": "function", "function": function}


def _openai_tool(tool: Any) -> dict[str, Any]:
    if not isinstance(tool, dict):
        raise ValueError("a tool definition is not an object")
    return tool if "function" in tool else _tool_definition(tool)


# --- OpenInference and OpenLLMetry's flattened attributes ---------------------------------------------


def _indexed(attributes: dict[str, Any], prefix: str, suffix: str) -> list[tuple[int, Any]]:
    found = []
    for key, value in attributes.items():
        if key.startswith(prefix) and key.endswith(suffix):
            index = key[len(prefix) : len(key) - len(suffix)]
            if index.isdigit():
                found.append((int(index), value))
    return sorted(found, key=lambda item: item[0])


_FLAT_KEY = re.compile(r"(\d+)\.(.+)")


def _flattened_objects(attributes: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """`prefix` + `N.key.sub…` attributes as a list of nested dicts, in N's order (lists where the keys
    are indices)."""
    objects: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(prefix):
            continue
        match = _FLAT_KEY.fullmatch(key[len(prefix) :])
        if match is None:
            continue
        node = objects.setdefault(int(match[1]), {})
        path = match[2].split(".")
        for name in path[:-1]:
            node = node.setdefault(name, {})
            if not isinstance(node, dict):
                raise ValueError(f"attribute {key} conflicts with another")
        node[path[-1]] = value
    return [_lists(objects[index]) for index in sorted(objects)]


def _lists(node: Any) -> Any:
    if isinstance(node, dict):
        if node and all(key.isdigit() for key in node):
            return [_lists(node[key]) for key in sorted(node, key=int)]
        return {key: _lists(value) for key, value in node.items()}
    return node


def _flattened(attributes: dict[str, Any], prefix: str, inner: str) -> list[dict[str, Any]]:
    """OpenInference's messages: `prefix` N `inner` field…"""
    messages = []
    for raw in _flattened_objects(attributes, prefix):
        message = raw.get(inner.strip("."), raw)
        messages.append(_openinference_message(message))
    return messages


def _openinference_message(raw: dict[str, Any]) -> dict[str, Any]:
    content = raw.get("content")
    if content is None and isinstance(raw.get("contents"), list):
        texts = [
            (item.get("message_content") or {}).get("text")
            for item in raw["contents"]
            if isinstance(item, dict) and (item.get("message_content") or {}).get("type", "text") == "text"
        ]
        content = _joined(text for text in texts if isinstance(text, str)) if texts else None
    message: dict[str, Any] = {"role": str(raw.get("role") or "user"), "content": content}
    calls = [
        _tool_call(
            (call.get("tool_call") or call).get("id"),
            ((call.get("tool_call") or call).get("function") or {}).get("name"),
            ((call.get("tool_call") or call).get("function") or {}).get("arguments"),
        )
        for call in raw.get("tool_calls") or ()
    ]
    if calls:
        message["tool_calls"] = calls
    if raw.get("tool_call_id"):
        message["tool_call_id"] = str(raw["tool_call_id"])
    if raw.get("name"):
        message["name"] = str(raw["name"])
    return message


# --- GenAI, older forms --------------------------------------------------------------------------------

_MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def _older_gen_ai(span: Span) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    prompt = completion = None
    messages: list[dict[str, Any]] = []
    output: list[dict[str, Any]] = []
    for event in span.events:
        if event.name == "gen_ai.content.prompt" and "gen_ai.prompt" in event.attributes:
            prompt = [_openai_message(m) for m in _json_list(event.attributes["gen_ai.prompt"])]
        elif event.name == "gen_ai.content.completion" and "gen_ai.completion" in event.attributes:
            completion = [_openai_message(m) for m in _json_list(event.attributes["gen_ai.completion"])]
        elif event.name in _MESSAGE_EVENTS:
            messages.append(_openai_message({"role": _MESSAGE_EVENTS[event.name], **event.attributes}))
        elif event.name == "gen_ai.choice":
            body = event.attributes.get("message", event.attributes)
            if isinstance(body, str):
                body = _json(body)
            choice = _openai_message({"role": "assistant", **body})
            if event.attributes.get("finish_reason"):
                choice["finish_reason"] = event.attributes["finish_reason"]
            output.append(choice)
    if prompt is not None or completion is not None:
        return prompt or [], completion or []
    if messages or output:
        return messages, output
    flat_prompt = _flattened_objects(span.attributes, "gen_ai.prompt.")
    flat_completion = _flattened_objects(span.attributes, "gen_ai.completion.")
    if flat_prompt or flat_completion:
        return [_openai_message(m) for m in flat_prompt], [_openai_message(m) for m in flat_completion]
    return None


def _openai_message(raw: Any) -> dict[str, Any]:
    """A message in (or near) OpenAI's shape, normalised: tool calls as OpenAI's, flat or nested."""
    if not isinstance(raw, dict):
        raise ValueError("a message is not an object")
    content = raw.get("content")
    if isinstance(content, list):  # OpenAI's content parts
        content = _joined(t for t in (_part_text(part) for part in content) if t is not None)
    message: dict[str, Any] = {"role": str(raw.get("role") or "user"), "content": content}
    calls = raw.get("tool_calls")
    if isinstance(calls, str):
        calls = _json(calls)
    if calls:
        message["tool_calls"] = [
            _tool_call(
                call.get("id"),
                (call.get("function") or call).get("name"),
                (call.get("function") or call).get("arguments"),
            )
            for call in calls
        ]
    tool_call_id = raw.get("tool_call_id", raw.get("id") if message["role"] == "tool" else None)
    if tool_call_id:
        message["tool_call_id"] = str(tool_call_id)
    if raw.get("finish_reason"):
        message["finish_reason"] = raw["finish_reason"]
    if raw.get("name") and message["role"] != "tool":
        message["name"] = str(raw["name"])
    return message


# --- values --------------------------------------------------------------------------------------------


def _tool_call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    return {
        "id": _text(call_id),
        "type": "function",
        "function": {"name": _text(name), "arguments": _as_json_text(arguments) or "{}"},
    }


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _json_list(value: Any) -> list[Any]:
    """An attribute holding a JSON array (a string), or an array already."""
    if value is None:
        return []
    value = _json(value)
    if isinstance(value, dict):
        return [value]
    if not isinstance(value, list):
        raise ValueError(f"expected a JSON array, got {type(value).__name__}")
    return value


def _as_json_text(value: Any) -> str | None:
    """Tool arguments and results as text: a string as it is, anything else as JSON."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _joined(texts: Iterable[str]) -> str:
    return "\n".join(texts)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _int(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def _float(value: Any) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None
