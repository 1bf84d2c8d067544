"""Which training tasks an LLM call feeds, and the example it contributes to each.

This is the export contract: it behaves as elizaOS's `trajectory-task-datasets.js`, including the
JavaScript corners (see `jscompat`): `^` under the `m` flag also matches after `\\r`, U+2028 and U+2029;
`/i` folds ASCII only; `trim()` strips U+FEFF; prompts are clamped in UTF-16 units.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, Literal

import hyperscan

from training_pipeline.jscompat import JS_LINE_TERMINATORS, js_trim, utf16_prefix
from training_pipeline.privacy.prefilter import PatternDatabase

Task = Literal["should_respond", "context_routing", "action_planner", "response", "media_description"]
TASKS: tuple[Task, ...] = (
    "should_respond",
    "context_routing",
    "action_planner",
    "response",
    "media_description",
)
TASK_FILE_NAMES: dict[Task, str] = {task: f"{task}_trajectories.jsonl" for task in TASKS}
#: Beside each task file in the Dagster assets: the source trajectory id of each line, as JSON.
PROVENANCE_FILE_NAMES: dict[Task, str] = {task: f"{task}_trajectories.ids.jsonl" for task in TASKS}
SUMMARY_FILE_NAME = "trajectory_dataset_summary.json"
#: elizaOS clamps the should_respond system prompt at this many UTF-16 units before stripping it.
MAX_TRAJECTORY_TEXT_LENGTH = 200_000

_A, _I = re.ASCII, re.IGNORECASE
_LINE_START = rf"(?:^|(?<=[{JS_LINE_TERMINATORS}]))"  # JavaScript's ^ under the m flag

_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_NOT_TOKEN = re.compile(r"[^a-z0-9:_-]+")
_EDGE_UNDERSCORES = re.compile(r"^_+|_+$")
_UNDERSCORES = re.compile(r"_+")

_ROUTING_FIELD_LINE = re.compile(rf"{_LINE_START}(?:primaryContext|secondaryContexts|evidenceTurnIds):")
_ACTIONS_LINE = re.compile(rf"{_LINE_START}actions:")

_PROMPT_ROUTING_LINES = re.compile(r"\n- (?:primaryContext|secondaryContexts|evidenceTurnIds):[^\n]*")
_RESPONSE_ROUTING_LINES = re.compile(r"\n(?:primaryContext|secondaryContexts|evidenceTurnIds):[^\n]*")
_RESPONSE_ROUTING_TAGS = tuple(
    re.compile(rf"<{name}>.*?</{name}>", _A | _I | re.DOTALL)
    for name in ("primaryContext", "secondaryContexts", "evidenceTurnIds")
)
_BLANK_RUNS = re.compile(r"\n{3,}")

_SHOULD_RESPOND_HINTS = frozenset({"should_respond", "response_handler", "shouldrespond"})
_PLANNER_HINTS = frozenset({"action_planner", "planner", "action", "runtime_use_model"})
_MEDIA_HINTS = frozenset(
    {"media_description", "image_description", "describe_image", "describe_audio", "describe_video"}
)
_RESPONSE_HINTS = frozenset({"response", "reply", "message_response"})


def normalize_token(value: Any) -> str:
    """camelCase to snake_case, lower case, anything else to `_` (elizaOS's `normalizeToken`)."""
    return _normalize(value) if isinstance(value, str) else ""


@lru_cache(maxsize=65_536)
def _normalize(value: str) -> str:
    """Cached: a day holds few distinct hint values, each seen on thousands of calls."""
    value = _CAMEL.sub(r"\1_\2", js_trim(value)).lower()
    value = _NOT_TOKEN.sub("_", value)
    return _UNDERSCORES.sub("_", _EDGE_UNDERSCORES.sub("", value))


def call_hints(call: dict[str, Any]) -> frozenset[str]:
    metadata = call.get("metadata") or {}
    if not isinstance(metadata, dict):
        metadata = {}
    tags = call.get("tags")
    values = (
        call.get("purpose"),
        call.get("stepType"),
        call.get("actionType"),
        call.get("model"),
        metadata.get("modelType"),
        metadata.get("purpose"),
        metadata.get("model_type"),
        metadata.get("stepType"),
        *(tags if isinstance(tags, list) else ()),
    )
    try:
        return _hints(values)
    except TypeError:  # a value that cannot be hashed (a list, a dict) is no token anyway
        return _hints(tuple(value if isinstance(value, str) else None for value in values))


@lru_cache(maxsize=4096)
def _hints(values: tuple[Any, ...]) -> frozenset[str]:
    """Cached: a day's calls carry a handful of distinct combinations of hint values."""
    return frozenset(token for token in map(normalize_token, values) if token)


# Case-insensitive literals are tested as substrings of `str.lower()`: the same answer as JavaScript's
# ASCII-only `/i`, since the only non-ASCII characters that lower-case to ASCII are U+0130 (to "i" plus
# U+0307, which no literal here contains) and U+212A (to "k", in none of them). Far faster on long texts.


def _has_routing_fields(text: str, lowered: str) -> bool:
    if (
        "primaryContext:" in text or "secondaryContexts:" in text or "evidenceTurnIds:" in text
    ) and _ROUTING_FIELD_LINE.search(text):
        return True
    return "<primarycontext>" in lowered or "<secondarycontexts>" in lowered or "<evidenceturnids>" in lowered


def _looks_like_planner(call: dict[str, Any], response: str, lowered: str) -> bool:
    if "<actions>" in lowered or ("actions:" in response and _ACTIONS_LINE.search(response)):
        return True
    if "thought" in lowered and "text" in lowered:
        return True
    # elizaOS tests `system + "\n" + user`; neither literal holds a newline, so each part can be tested alone
    system, user = call.get("systemPrompt"), call.get("userPrompt")
    return (isinstance(system, str) and _system_names_actions(system)) or (
        isinstance(user, str) and _names_actions_in(user)
    )


@lru_cache(maxsize=256)
def _system_names_actions(prompt: str) -> bool:
    """Cached: an agent's system prompt (often kilobytes) comes back in every one of its calls."""
    return _names_actions_in(prompt)


def _names_actions_in(prompt: str) -> bool:
    return bool(prompt) and bool(_names_actions().matching(prompt.encode("utf-8", "surrogatepass")))


@cache
def _names_actions() -> PatternDatabase:
    """Finds `available actions` or `actionnames`, ASCII letters in either case, in a prompt's UTF-8 bytes:
    JavaScript's `/i` exactly (no byte of a character outside ASCII is an ASCII letter, and a lone
    surrogate's three bytes are none either), and one scan instead of lowering a whole prompt."""
    flags = hyperscan.HS_FLAG_CASELESS | hyperscan.HS_FLAG_SINGLEMATCH
    return PatternDatabase([b"available actions", b"actionnames"], [flags, flags])


def infer_tasks(call: dict[str, Any]) -> set[Task]:
    """The tasks a call is an example of; a call with only a response defaults to `response`."""
    hints = call_hints(call)
    response = call.get("response") or ""
    tasks: set[Task] = set()
    if hints & _SHOULD_RESPOND_HINTS:
        tasks.add("should_respond")
    lowered = response.lower()
    if _has_routing_fields(response, lowered):
        tasks.update(("context_routing", "should_respond"))
    if hints & _PLANNER_HINTS or _looks_like_planner(call, response, lowered):
        tasks.add("action_planner")
    if hints & _MEDIA_HINTS:
        tasks.add("media_description")
    if hints & _RESPONSE_HINTS:
        tasks.add("response")
    if not tasks and isinstance(call.get("response"), str) and js_trim(call["response"]):
        tasks.add("response")
    return tasks


def strip_routing_prompt(prompt: str) -> str:
    clamped = utf16_prefix(prompt, MAX_TRAJECTORY_TEXT_LENGTH)
    start = clamped.find("\ncontext_routing:")
    if start != -1:
        end = clamped.find("\ndecision_note:", start + len("\ncontext_routing:"))
        if end != -1:
            clamped = clamped[:start] + clamped[end:]
    return js_trim(_PROMPT_ROUTING_LINES.sub("", clamped))


def strip_routing_response(response: str) -> str:
    response = _RESPONSE_ROUTING_LINES.sub("", response)
    if "<" in response:
        lowered = response.lower()
        for name, pattern in zip(
            ("primarycontext", "secondarycontexts", "evidenceturnids"), _RESPONSE_ROUTING_TAGS, strict=True
        ):
            if f"</{name}>" in lowered:  # no closing tag, nothing to strip: skip the lazy scan
                response = pattern.sub("", response)
    return js_trim(_BLANK_RUNS.sub("\n\n", response))


def build_example(call: dict[str, Any], task: Task) -> dict[str, list[dict[str, str]]] | None:
    """`{"messages": [system, user, model]}`, or None when any of the three is empty after trim()."""
    system, user, response = (call.get(k) for k in ("systemPrompt", "userPrompt", "response"))
    if not (isinstance(system, str) and isinstance(user, str) and isinstance(response, str)):
        return None
    system, user, response = js_trim(system), js_trim(user), js_trim(response)
    if not (system and user and response):
        return None
    if task == "should_respond":
        system, response = strip_routing_prompt(system), strip_routing_response(response)
    return {
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
            {"role": "model", "content": response},
        ]
    }


def ids_path(dataset: Path) -> Path:
    """The trajectory-id sidecar of a window dataset (one JSON id per example line)."""
    return dataset.with_name(dataset.name.removesuffix(".jsonl") + ".ids.jsonl")
