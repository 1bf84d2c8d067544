"""The Tinker backend's tokenizer sources and chat format, checked against Meta's own chat format code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from llama_models.datatypes import RawMessage, StopReason
from llama_models.llama3.chat_format import ChatFormat
from llama_models.llama3.tokenizer import Tokenizer as MetaTokenizer

from training_pipeline.backends.base import BackendError
from training_pipeline.backends.chat_tokens import TokenizerError, chat_format, load_tokenizer
from training_pipeline.backends.formats import calls_text
from training_pipeline.backends.tinker import tool_call_text, validate_chat_file

DIALOG = [
    {"role": "system", "content": "You are Eliza, a helpful agent."},
    {"role": "user", "content": "Can you check the deploy? It says <|eot_id|> in the log."},
    {"role": "assistant", "content": "Sure — the deploy failed at step 3.\n\nRetrying now."},
    {"role": "user", "content": "Thanks!"},
    {"role": "assistant", "content": "You're welcome."},
]


@pytest.fixture(scope="module")
def llama3_json(tmp_path_factory) -> Path:
    """Llama 3's tokenizer as a `tokenizers` tokenizer.json, converted from the package's BPE file:
    the form a local path or the hub provides."""
    from transformers.convert_slow_tokenizer import TikTokenConverter

    meta = MetaTokenizer.get_instance()
    specials = sorted(meta.special_tokens, key=meta.special_tokens.get)
    model_file = Path(__import__("llama_models.llama3", fromlist=["x"]).__file__).parent / "tokenizer.model"
    target = tmp_path_factory.mktemp("tokenizer") / "tokenizer.json"
    TikTokenConverter(vocab_file=str(model_file), extra_special_tokens=specials).converted().save(str(target))
    return target


def test_the_package_tokenizer_encodes_as_meta_documents() -> None:
    tokenizer = load_tokenizer("llama-models")
    # Meta's own test vectors (llama_models/llama3/tests/api/test_tokenizer.py)
    assert tokenizer.encode("This is a test sentence.") == [2028, 374, 264, 1296, 11914, 13]
    assert tokenizer.special("<|begin_of_text|>") == 128000 and tokenizer.special("<|eot_id|>") == 128009


def test_rendering_matches_metas_chat_format_and_trains_only_the_assistant() -> None:
    chat = chat_format("meta-llama/Llama-3.1-8B-Instruct", load_tokenizer(None))
    rendered = chat.render(DIALOG)
    meta = ChatFormat(MetaTokenizer.get_instance())
    messages = [
        RawMessage(role=m["role"], content=m["content"], stop_reason=StopReason.end_of_turn) for m in DIALOG
    ]
    expected = meta.encode_dialog_prompt(messages).tokens
    header = [128006, *meta.tokenizer.encode("assistant", bos=False, eos=False), 128007, 271]
    assert expected[-len(header) :] == header  # Meta's prompt ends by opening the next assistant turn
    assert rendered.tokens == expected[: -len(header)]

    trained = [t for t, w in zip(rendered.tokens, rendered.weights, strict=True) if w]
    eot = "<|eot_id|>"
    assert chat.tokenizer.decode(trained) == f"{DIALOG[2]['content']}{eot}{DIALOG[4]['content']}{eot}"
    # the user's literal "<|eot_id|>" stays text: exactly one end-of-turn token per message
    assert rendered.tokens.count(128009) == len(DIALOG)


def test_a_sampler_is_prompted_and_read_as_metas_chat_format_says() -> None:
    chat = chat_format("meta-llama/Llama-3.1-8B-Instruct", load_tokenizer(None))
    meta = ChatFormat(MetaTokenizer.get_instance())
    asked = DIALOG[:4]
    messages = [
        RawMessage(role=m["role"], content=m["content"], stop_reason=StopReason.end_of_turn) for m in asked
    ]
    # the prompt opens the assistant's turn exactly as Meta's does
    assert chat.prompt(asked) == meta.encode_dialog_prompt(messages).tokens

    # what was sampled is read up to the end of the turn; a JSON tool call as Meta's code reads it
    call = '{"name": "get_weather", "parameters": {"city": "Paris"}}'
    sampled = [*chat.tokenizer.encode(call), chat.end_of_turn, *chat.tokenizer.encode("after the turn")]
    assert chat.answer(sampled) == call
    [parsed] = meta.decode_assistant_message(
        sampled[: sampled.index(chat.end_of_turn) + 1], StopReason.end_of_turn
    ).tool_calls
    assert tool_call_text(chat.answer(sampled)) == calls_text([(parsed.tool_name, parsed.arguments)])
    assert tool_call_text("Sunny in Paris.") == "Sunny in Paris."
    assert chat.answer(chat.tokenizer.encode("cut off at max_tokens")) == "cut off at max_tokens"


def test_a_local_tokenizer_json_encodes_exactly_as_the_package(llama3_json: Path) -> None:
    package, local = load_tokenizer(None), load_tokenizer(str(llama3_json.parent))
    texts = [m["content"] for m in DIALOG] + ["Ünïcödé — 日本語 🤖\n\n  spaces\tand 1234567", "x" * 300]
    for text in texts:
        assert local.encode(text) == package.encode(text)
    chat = "meta-llama/Llama-3.2-1B"
    assert chat_format(chat, local).render(DIALOG) == chat_format(chat, package).render(DIALOG)


def test_tokenizer_sources_fail_clearly(tmp_path: Path) -> None:
    with pytest.raises(TokenizerError, match=r"no tokenizer\.json or tokenizer\.model at"):
        load_tokenizer(str(tmp_path / "missing"))
    # a hub id where the hub cannot be reached (offline mode, so the client does not retry for a minute)
    hub = subprocess.run(
        [
            sys.executable,
            "-c",
            "from training_pipeline.backends.chat_tokens import load_tokenizer as l\n"
            "l('meta-llama/Llama-3.1-8B-Instruct')",
        ],
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
    )
    assert hub.returncode == 1
    assert (
        "could not load tokenizer 'meta-llama/Llama-3.1-8B-Instruct' from the Hugging Face hub" in hub.stderr
    )
    assert "use 'llama-models' or a local path where the hub cannot be reached" in hub.stderr
    with pytest.raises(TokenizerError, match="no chat format for Qwen/Qwen3-8B"):
        chat_format("Qwen/Qwen3-8B", load_tokenizer(None))


def test_the_chat_file_is_validated_before_anything_is_sent(tmp_path: Path) -> None:
    chat = chat_format("meta-llama/Llama-3.2-1B", load_tokenizer(None))
    good = json.dumps({"messages": DIALOG[:3]})
    cases = {
        "not json": "line 2: not a chat example",
        json.dumps({"messages": [{"role": "user", "content": "hi"}]}): "line 2: the last message must be",
        json.dumps(
            {"messages": [{"role": "narrator", "content": "x"}]}
        ): "line 2: every message needs a role",
        json.dumps({"messages": [{"role": "user", "content": ""}, DIALOG[2]]}): "line 2: empty or non-text",
        json.dumps(
            {"messages": [{"role": "user", "content": "word " * 200}, DIALOG[2]]}
        ): "line 2: 2\\d\\d tokens",
    }
    path = tmp_path / "chat.jsonl"
    for bad, message in cases.items():
        path.write_text(f"{good}\n{bad}\n{good}\n")
        with pytest.raises(BackendError, match=message):
            validate_chat_file(path, chat, max_tokens=200)
    path.write_text(f"{good}\n\n{good}\n")
    assert validate_chat_file(path, chat, max_tokens=200) == [0, len(good) + 2]
    path.write_text("\n")
    with pytest.raises(BackendError, match="no examples"):
        validate_chat_file(path, chat, max_tokens=200)
