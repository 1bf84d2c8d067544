"""The LLM client against HTTP servers on loopback: protocol, errors, retries, cache, usage."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.fake_chat import FakeChatServer
from training_pipeline.llm.answer_form import AnswerForm
from training_pipeline.llm.client import ChatClient, LLMError, Price
from training_pipeline.llm.usage import capture_usage


def test_a_call_speaks_the_protocol_and_reports_usage_and_cost() -> None:
    with FakeChatServer() as server:
        client = ChatClient(
            server.base_url, "tiny-model", api_key="k-123", prices={"tiny-model": Price(100, 200)}
        )
        with capture_usage() as sink:
            response = client.chat(
                [{"role": "user", "content": "hello there"}], json_mode=True, max_tokens=5, seed=7
            )
    assert response.content == "echo: hello there" and response.finish_reason == "stop"
    request = server.requests[0]
    assert request["response_format"] == {"type": "json_object"} and request["max_tokens"] == 5
    assert request["temperature"] == 0.0 and request["seed"] == 7 and request["model"] == "tiny-model"
    assert server.headers[0]["Authorization"] == "Bearer k-123"
    assert (sink.usage.prompt_tokens, sink.usage.completion_tokens, sink.usage.calls) == (2, 4, 1)
    assert sink.usage.cost_usd == pytest.approx((2 * 100 + 4 * 200) / 1e6)


def test_tool_calls_come_back_as_a_message_to_append() -> None:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "send_email", "arguments": '{"to": "dana"}'},
    }
    with FakeChatServer(lambda body: {"tool_calls": [call]}) as server:
        tools = [{"type": "function", "function": {"name": "send_email", "parameters": {"type": "object"}}}]
        response = ChatClient(server.base_url, "m").chat([{"role": "user", "content": "x"}], tools=tools)
    assert response.tool_calls == [call] and response.finish_reason == "tool_calls"
    assert response.message == {"role": "assistant", "content": None, "tool_calls": [call]}
    assert server.requests[0]["tools"] == tools


def test_transient_errors_are_retried_honouring_retry_after_and_permanent_ones_are_not() -> None:
    answers = iter(
        [
            {"status": 503, "error": "overloaded"},
            {"status": 429, "error": "slow down", "headers": {"Retry-After": "0.2"}},
            {"content": "finally"},
        ]
    )
    with FakeChatServer(lambda body: next(answers)) as server:
        client = ChatClient(server.base_url, "m", backoff_seconds=0.01)
        started = time.perf_counter()
        assert client.chat([{"role": "user", "content": "x"}]).content == "finally"
        assert time.perf_counter() - started >= 0.2
        assert len(server.requests) == 3
    with FakeChatServer(lambda body: {"status": 400, "error": "context length exceeded"}) as server:
        with pytest.raises(LLMError) as err:
            ChatClient(server.base_url, "m", backoff_seconds=0.01).chat([{"role": "user", "content": "x"}])
        assert not err.value.transient and err.value.status == 400
        assert "context length exceeded" in str(err.value) and len(server.requests) == 1


def test_an_unreachable_server_is_a_transient_error_after_retries() -> None:
    client = ChatClient("http://127.0.0.1:1/v1", "m", max_retries=2, backoff_seconds=0.01)
    with pytest.raises(LLMError) as err:
        client.chat([{"role": "user", "content": "x"}])
    assert err.value.transient and "ConnectError" in str(err.value)


def test_the_cache_answers_repeated_temperature_zero_calls_only(tmp_path: Path) -> None:
    with FakeChatServer() as server:
        first = ChatClient(server.base_url, "m", cache_dir=tmp_path)
        messages = [{"role": "user", "content": "same"}]
        assert not first.chat(messages).cached
        again = ChatClient(server.base_url, "m", cache_dir=tmp_path)  # a re-run after a crash
        with capture_usage() as sink:
            hit = again.chat(messages)
        assert hit.cached and hit.content == "echo: same" and sink.usage.total_tokens == 0
        again.chat(messages, temperature=0.7)
        again.chat(messages, temperature=0.7)
        again.chat([{"role": "user", "content": "different"}])
    assert len(server.requests) == 4  # 1 original + 2 sampled + 1 new; the repeat was free


def test_concurrency_is_capped_and_usage_is_attributed_per_context() -> None:
    active, peak, lock = 0, 0, threading.Lock()

    def reply(body):
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.05)
        with lock:
            active -= 1
        return {"content": " ".join(["w"] * int(body["messages"][0]["content"]))}

    with FakeChatServer(reply) as server:
        client = ChatClient(server.base_url, "m", max_concurrency=2)
        results: dict[int, int] = {}

        def work(words: int) -> None:
            with capture_usage() as sink:
                client.chat([{"role": "user", "content": str(words)}])
                client.chat([{"role": "user", "content": str(words)}])
            results[words] = sink.usage.completion_tokens

        threads = [threading.Thread(target=work, args=(n,)) for n in (1, 5, 9, 13)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert peak <= 2
    assert results == {n: 2 * (n + 1) for n in (1, 5, 9, 13)}  # each thread saw only its own calls


def test_an_answer_is_held_to_its_form_in_the_way_the_server_speaks() -> None:
    """llama.cpp servers take a GBNF grammar and answer in the form itself; OpenAI-style servers take
    a `json_schema` response format and answer `{"reasoning", "answer"}`, which the client writes into
    the form; an answer outside the choices comes back as it was, for the scorer to judge wrong."""
    form = AnswerForm(("IGNORE", "RESPOND"), "<response><reasoning>", "</reasoning><action>", "</action>", 40)
    answers = iter(
        [
            '{"reasoning": "dana asked <Eliza>\\n directly", "answer": "RESPOND"}',
            '{"reasoning": "", "answer": "MAYBE"}',
            "<response><reasoning>x</reasoning><action>IGNORE</action>",
            "I think RESPOND",
        ]
    )
    with FakeChatServer(lambda body: {"content": next(answers)}) as server:
        structured = ChatClient(server.base_url, "m")
        assert structured.chat([{"role": "user", "content": "q"}], answer_form=form).content == (
            "<response><reasoning>dana asked Eliza> directly</reasoning><action>RESPOND</action>"
        )
        assert structured.chat([{"role": "user", "content": "q"}], answer_form=form).content == (
            '{"reasoning": "", "answer": "MAYBE"}'
        )
        grammar = ChatClient(server.base_url, "m", constraint="grammar")
        assert grammar.chat([{"role": "user", "content": "q"}], answer_form=form).content.endswith(
            "IGNORE</action>"
        )
        off = ChatClient(server.base_url, "m", constraint="off")
        assert off.chat([{"role": "user", "content": "q"}], answer_form=form).content == "I think RESPOND"
    schema = server.requests[0]["response_format"]
    assert schema["type"] == "json_schema" and schema["json_schema"]["strict"] is True
    properties = schema["json_schema"]["schema"]["properties"]
    assert list(properties) == ["reasoning", "answer"] and properties["answer"]["enum"] == [
        "IGNORE",
        "RESPOND",
    ]
    assert server.requests[2]["grammar"] == (
        'root ::= "<response><reasoning>" reasoning "</reasoning><action>" ("IGNORE" | "RESPOND") '
        '"</action>"\nreasoning ::= [^<\\n]{0,40}'
    )
    assert "response_format" not in server.requests[2]
    assert not {"grammar", "response_format"} & set(server.requests[3])
