"""Chat examples as the token ids a model trains on, with the loss on the assistant's turns only.

The tokenizer is a setting with three sources and one code path after it: Meta's `llama-models` package
(its Llama 3 BPE file ships inside the wheel, so nothing is fetched: the default, and the only one that
works without the Hugging Face hub), a local `tokenizer.json` or tiktoken `tokenizer.model`, or a hub
repository id (loaded with `transformers` where the hub can be reached).

Text inside a message is never read as control tokens: a user who writes `<|eot_id|>` gets those
characters, not an end of turn, so training data cannot forge the chat structure.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

PACKAGE = "llama-models"
#: `ipython` is Llama 3.1's role for a tool's result
ROLES = ("system", "user", "assistant", "ipython")

#: how Llama 3.1's chat template offers JSON tools, in the first user message
_TOOLS_PREAMBLE = (
    "Given the following functions, please respond with a JSON for a function call with its proper "
    "arguments that best answers the given prompt.\n\n"
    'Respond in the format {"name": function name, "parameters": dictionary of argument name and its '
    "value}.Do not use variables.\n\n"
)


class TokenizerError(ValueError):
    """The tokenizer could not be loaded from the configured source, or does not fit the model."""


class Tokenizer(Protocol):
    def encode(self, text: str) -> list[int]:
        """Ordinary text: special-token strings in it are plain characters."""

    def special(self, name: str) -> int: ...

    def decode(self, ids: Sequence[int]) -> str: ...


class _MetaTiktoken:
    """Meta's Llama 3 tokenizer (tiktoken BPE plus its 256 special tokens), from `llama-models`."""

    def __init__(self, model_path: Path | None) -> None:
        from llama_models.llama3.tokenizer import Tokenizer as MetaTokenizer

        self._tokenizer = (
            MetaTokenizer.get_instance() if model_path is None else MetaTokenizer(str(model_path))
        )

    def encode(self, text: str) -> list[int]:
        return self._tokenizer.encode(
            text, bos=False, eos=False, allowed_special=set(), disallowed_special=()
        )

    def special(self, name: str) -> int:
        return self._tokenizer.special_tokens[name]

    def decode(self, ids: Sequence[int]) -> str:
        return self._tokenizer.decode(list(ids))


class _HuggingFace:
    """A `tokenizers` tokenizer: from a local tokenizer.json, or a hub repository through transformers."""

    def __init__(self, tokenizer: object) -> None:
        self._tokenizer = tokenizer
        self._tokenizer.encode_special_tokens = True  # type: ignore[attr-defined]

    def encode(self, text: str) -> list[int]:
        return self._tokenizer.encode(text, add_special_tokens=False).ids  # type: ignore[attr-defined]

    def special(self, name: str) -> int:
        token = self._tokenizer.token_to_id(name)  # type: ignore[attr-defined]
        if token is None:
            raise TokenizerError(f"the tokenizer has no {name} token")
        return token

    def decode(self, ids: Sequence[int]) -> str:
        return self._tokenizer.decode(list(ids), skip_special_tokens=False)  # type: ignore[attr-defined]


def load_tokenizer(source: str | None) -> Tokenizer:
    """`None` or `llama-models`: the package's Llama 3 tokenizer; a path: that file or folder's; any
    other string: a Hugging Face hub repository id."""
    if source in (None, "", PACKAGE):
        return _MetaTiktoken(None)
    path = Path(source).expanduser()
    if path.is_dir():
        candidates = [path / "tokenizer.json", path / "tokenizer.model"]
        path = next((p for p in candidates if p.is_file()), path / "tokenizer.json")
    if path.suffix == ".model" and path.is_file():
        return _MetaTiktoken(path)
    if path.suffix == ".json" and path.is_file():
        from tokenizers import Tokenizer as HFTokenizer

        return _HuggingFace(HFTokenizer.from_file(str(path)))
    if source.startswith((".", "/", "~")):
        raise TokenizerError(f"no tokenizer.json or tokenizer.model at {source}")
    try:
        from transformers import AutoTokenizer

        hub = AutoTokenizer.from_pretrained(source)
    except Exception as err:  # offline, gated, or not a repository: the hub's own reasons vary
        raise TokenizerError(
            f"could not load tokenizer {source!r} from the Hugging Face hub ({type(err).__name__}: {err}); "
            f"use {PACKAGE!r} or a local path where the hub cannot be reached"
        ) from None
    return _HuggingFace(hub.backend_tokenizer)


@dataclass(frozen=True)
class Rendered:
    """One example as the model reads it: `tokens`, and per token whether its prediction is trained."""

    tokens: list[int]
    weights: list[float]


class Llama3Chat:
    """Llama 3's chat format, as Meta's `ChatFormat` writes it:
    `<|begin_of_text|>` then per message `<|start_header_id|>role<|end_header_id|>\\n\\n` + content +
    `<|eot_id|>`. The loss covers each assistant message's content and its `<|eot_id|>`, so the model
    learns to answer and to stop, and nothing of the prompt."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        try:
            self._begin = tokenizer.special("<|begin_of_text|>")
            self._start = tokenizer.special("<|start_header_id|>")
            self._end = tokenizer.special("<|end_header_id|>")
            self._eot = tokenizer.special("<|eot_id|>")
        except KeyError as err:
            raise TokenizerError(f"not a Llama 3 tokenizer: it lacks {err}") from None
        self._headers = {
            role: [self._start, *tokenizer.encode(role), self._end, *tokenizer.encode("\n\n")]
            for role in ROLES
        }

    def render(self, messages: Sequence[dict[str, str]]) -> Rendered:
        tokens, weights = [self._begin], [0.0]
        for message in messages:
            header = self._headers[message["role"]]
            body = [*self.tokenizer.encode(message["content"]), self._eot]
            trained = 1.0 if message["role"] == "assistant" else 0.0
            tokens += header + body
            weights += [0.0] * len(header) + [trained] * len(body)
        return Rendered(tokens, weights)

    def prompt(self, messages: Sequence[dict[str, str]]) -> list[int]:
        """The tokens a model continues to answer `messages`: them, then the assistant's header."""
        return self.render(messages).tokens + self._headers["assistant"]

    @property
    def end_of_turn(self) -> int:
        return self._eot

    def answer(self, tokens: Sequence[int]) -> str:
        """What a model wrote after `prompt`, up to its end of turn."""
        ids = list(tokens)
        return self.tokenizer.decode(ids[: ids.index(self._eot)] if self._eot in ids else ids)


def llama_messages(example: dict[str, Any]) -> list[dict[str, str]]:
    """An OpenAI chat example as Llama 3.1's JSON tool calling writes it (its chat template, tools in the
    user message): with tools, the system message starts `Environment: ipython` and the first user
    message lists the tools as JSON; an assistant's tool call is its `{"name", "parameters"}` JSON (one
    call a message, as Llama 3.1 makes them); a tool's result is an `ipython` message. Without tools and
    tool messages the messages are as they were."""
    tools = [tool.get("function", tool) for tool in example.get("tools") or ()]
    messages: list[dict[str, str]] = []
    offered = False
    for message in example["messages"]:
        role, content = message["role"], message.get("content")
        if role == "assistant":
            if content:
                messages.append({"role": "assistant", "content": content})
            for call in message.get("tool_calls") or ():
                function = call["function"]
                arguments = function.get("arguments") or "{}"
                parameters = json.loads(arguments) if isinstance(arguments, str) else arguments
                text = json.dumps({"name": function["name"], "parameters": parameters}, ensure_ascii=False)
                messages.append({"role": "assistant", "content": text})
            continue
        if role == "tool":
            role = "ipython"
        elif role == "user" and tools and not offered:
            listed = "".join(json.dumps(tool, indent=4, ensure_ascii=False) + "\n\n" for tool in tools)
            content, offered = _TOOLS_PREAMBLE + listed + (content or ""), True
        text = content if isinstance(content, str) else "" if content is None else json.dumps(content)
        messages.append({"role": role, "content": text})
    if tools:
        if messages and messages[0]["role"] == "system":
            messages[0] = {"role": "system", "content": "Environment: ipython\n" + messages[0]["content"]}
        else:
            messages.insert(0, {"role": "system", "content": "Environment: ipython\n"})
    return messages


def chat_format(base_model: str, tokenizer: Tokenizer) -> Llama3Chat:
    """The chat format of `base_model`'s family. Only Llama 3's is implemented: its tokenizer ships in a
    package, so its encodings are checked here against Meta's own chat format code."""
    if "llama-3" not in base_model.lower():
        raise TokenizerError(
            f"no chat format for {base_model}: the tinker backend trains Llama 3 models "
            "(meta-llama/Llama-3.1-8B-Instruct, Llama-3.2-1B, Llama-3.3-70B-Instruct, ...)"
        )
    return Llama3Chat(tokenizer)
