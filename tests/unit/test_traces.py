"""Any agent's traces in: a real `openai` client, traced by the official GenAI instrumentation or by
OpenInference's, exported by the real OTLP/HTTP exporter, becomes trajectories and OpenAI-chat datasets
through `build-datasets`, conversations as the client sent them, redacted."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import cli
from tests.otlp_store import collector_json_line
from training_pipeline.datasets.build import QUARANTINE_FILE_NAME, build_datasets
from training_pipeline.datasets.trace_datasets import TRACE_SUMMARY_FILE_NAME
from training_pipeline.privacy.filter import PrivacyFilter
from training_pipeline.samples import write_long_sample
from training_pipeline.settings import load_settings
from training_pipeline.traces.otlp import Unreadable, spans_of_file
from training_pipeline.traces.routes import TraceRouting


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


#: the official GenAI instrumentation (openai-v2 2.4b0) records no tool definitions on chat spans
RECORDS_TOOLS = {"genai": False, "openinference": True, "both": True}


def expected(call: dict[str, Any], tools: bool) -> dict[str, Any]:
    """The dataset line of a call as the client sent it: its messages and the answer, and its tools
    where the instrumentation records them."""
    answer = {key: value for key, value in call["answer"].items() if key != "function_call"}
    answer.setdefault("content", None)
    example: dict[str, Any] = {"messages": [*call["messages"], answer]}
    if call["tools"] and tools:
        example["tools"] = call["tools"]
    return example


def normalised(example: dict[str, Any]) -> dict[str, Any]:
    """Tool arguments compared as JSON (an instrumentation may re-serialise them), and no message
    without content given one."""
    example = json.loads(json.dumps(example))
    for message in example["messages"]:
        message.setdefault("content", None)
        for call in message.get("tool_calls") or ():
            call["function"]["arguments"] = json.loads(call["function"]["arguments"])
    return example


def redacted(call: dict[str, Any]) -> dict[str, Any]:
    text = json.dumps(call, ensure_ascii=False)
    text = text.replace("jane.doe@example.com", "<PII:EMAIL_ADDRESS:1>")
    return json.loads(text.replace("tok-live-0f9e8d7c6b5a", "<REDACTED:keyed-secret>"))


@pytest.mark.parametrize("instrumentation", ["genai", "openinference", "both"])
def test_a_traced_agent_becomes_conversations_as_the_client_sent_them(
    traced_runs: dict[str, tuple[Path, list[dict[str, Any]]]], instrumentation: str, tmp_path: Path
) -> None:
    folder, sent = traced_runs[instrumentation]
    result = build_datasets(folder, tmp_path / "out", PrivacyFilter("strict"))
    out = tmp_path / "out"
    tool_use, chat = lines(out / "tool_use.jsonl"), lines(out / "chat.jsonl")
    tools = RECORDS_TOOLS[instrumentation]
    assert [normalised(line) for line in tool_use] == [
        normalised(expected(redacted(c), tools)) for c in sent[:2]
    ]
    assert [normalised(line) for line in chat] == [normalised(expected(call, tools)) for call in sent[2:]]
    assert "jane.doe" not in (out / "tool_use.jsonl").read_text()
    assert "tok-live" not in (out / "tool_use.jsonl").read_text()
    summary = json.loads((out / TRACE_SUMMARY_FILE_NAME).read_text())
    spans = summary["spans"]
    # the weather conversation (an agent span, a tool span, two calls) and the translation: two
    # trajectories; with both instrumentations each call is written twice and kept once
    assert spans["trajectories"] == 2 and spans["llmCalls"] == 3 and spans["steps"] == 2
    assert spans["duplicates"] == (3 if instrumentation == "both" else 0)
    assert spans["spansIn"] == sum(
        v for k, v in spans.items() if k not in ("spansIn", "trajectories", "unreadableRequests")
    )
    assert summary["datasets"] == {
        "chat": {"examples": 1, "trajectories": 1},
        "tool_use": {"examples": 2, "trajectories": 1},
    }
    assert result.as_line()["traceDatasets"] == {"chat": 1, "tool_use": 2}
    # elizaOS's datasets stay elizaOS's: no trace call is in them
    assert all(
        (out / f"{task}_trajectories.jsonl").read_text() == "" for task in ("response", "action_planner")
    )
    # and elizaOS's summary counts every trajectory, as the daily pass does
    assert result.summary["trajectoryCount"] == 2 and sum(result.summary["counts"].values()) == 0


def test_collector_json_lines_plain_or_gzip_read_as_the_protobuf_does(
    traced_runs: dict[str, tuple[Path, list[dict[str, Any]]]], tmp_path: Path
) -> None:
    folder, _ = traced_runs["genai"]
    requests = sorted(folder.glob("*.pb"))
    (tmp_path / "json").mkdir()
    (tmp_path / "json" / "traces.json").write_text(
        "".join(collector_json_line(r.read_bytes()) + "\n" for r in requests)
    )
    (tmp_path / "gz").mkdir()
    with gzip.open(tmp_path / "gz" / "traces.json.gz", "wt") as handle:
        handle.writelines(collector_json_line(r.read_bytes()) + "\n" for r in requests)
    outputs = {}
    for name, source in (("pb", folder), ("json", tmp_path / "json"), ("gz", tmp_path / "gz")):
        build_datasets(source, tmp_path / f"out-{name}", PrivacyFilter("strict"))
        outputs[name] = {
            f: (tmp_path / f"out-{name}" / f).read_text() for f in ("chat.jsonl", "tool_use.jsonl")
        }
    assert outputs["pb"] == outputs["json"] == outputs["gz"]


def test_a_mixed_folder_reads_exports_and_traces_and_quarantines_what_it_cannot_read(
    traced_runs: dict[str, tuple[Path, list[dict[str, Any]]]], tmp_path: Path
) -> None:
    folder, _ = traced_runs["openinference"]
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    for request in folder.glob("*.pb"):
        (mixed / request.name).write_bytes(request.read_bytes())
    (mixed / "eliza.jsonl").write_text(
        json.dumps(
            {
                "trajectoryId": "t-1",
                "startTime": 1_764_000_000_000,
                "steps": [{"llmCalls": [{"systemPrompt": "s", "userPrompt": "u", "response": "r"}]}],
            }
        )
        + "\n"
    )
    good = collector_json_line(sorted(folder.glob("*.pb"))[0].read_bytes())
    broken = json.loads(good)
    span = broken["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["attributes"].append({"key": "llm.input_messages.0.message.role", "value": {"stringValue": "user"}})
    span["attributes"].append(
        {"key": "llm.input_messages.0.message.tool_calls", "value": {"stringValue": "x"}}
    )
    span["traceId"] = "0" * 31 + "1"
    (mixed / "more.json").write_text('{"resourceSpans": [}\n' + json.dumps(broken) + "\n")
    (mixed / "old.jsonl.gz").write_bytes(gzip.compress(b'{"trajectoryId": "x"}\n'))

    result = build_datasets(
        mixed, tmp_path / "out", PrivacyFilter("strict"), routing=TraceRouting.parse("weather-agent=weather")
    )
    out = tmp_path / "out"
    assert len(lines(out / "response_trajectories.jsonl")) == 1  # the elizaOS export
    assert len(lines(out / "weather.jsonl")) == 2  # routed by the agent's name
    assert len(lines(out / "chat.jsonl")) == 1  # no agent name: the service's, which no route names
    reasons = [json.loads(line)["reason"] for line in (out / QUARANTINE_FILE_NAME).read_text().splitlines()]
    assert any(reason.startswith("invalid OTLP/JSON") for reason in reasons)
    assert any(reason.startswith("unreadable messages") for reason in reasons)
    assert any("neither OTLP traces nor an uncompressed elizaOS export" in reason for reason in reasons)
    assert result.quarantined == 3


def test_a_route_may_match_a_span_attribute_that_is_never_stored(
    traced_runs: dict[str, tuple[Path, list[dict[str, Any]]]], tmp_path: Path
) -> None:
    """OpenInference writes `llm.system`; a route on it sends every call there. The attribute decides
    the dataset and is stored nowhere."""
    folder, _ = traced_runs["openinference"]
    routing = TraceRouting.parse("llm.system:open*=openai-calls")
    build_datasets(folder, tmp_path / "out", PrivacyFilter("strict"), routing=routing)
    assert len(lines(tmp_path / "out" / "openai-calls.jsonl")) == 3
    stored = (tmp_path / "out" / "openai-calls.jsonl").read_text()
    assert "llm.system" not in stored and '"openai"' not in stored


def test_a_route_must_name_a_dataset() -> None:
    with pytest.raises(ValueError, match="PATTERN=DATASET"):
        TraceRouting.parse("weather-*")
    with pytest.raises(ValueError, match="lower-case"):
        TraceRouting.parse("weather-*=Weather Data")
    with pytest.raises(ValueError, match="PATTERN=DATASET"):
        TraceRouting.parse(":x=data")  # an attribute's name is needed before its colon
    for own in ("quarantine", "response_trajectories"):  # would overwrite the build's own files
        with pytest.raises(ValueError, match="the build's own files"):
            TraceRouting.parse(f"weather-*={own}")
    # training is partitioned by elizaOS's tasks and the trace datasets together: no name may be both
    with pytest.raises(ValueError, match="trace route dataset response is one of elizaOS's tasks"):
        load_settings({"TRAINING_PIPELINE_TRACE_ROUTES": "support-*=response"})


def test_the_cli_builds_trace_datasets_and_says_what_the_spans_became(
    traced_runs: dict[str, tuple[Path, list[dict[str, Any]]]], tmp_path: Path
) -> None:
    folder, _ = traced_runs["genai"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINING_PIPELINE_")}
    done = cli(
        env, "build-datasets", str(folder), str(tmp_path / "out"), "--trace-routes", "weather-agent=weather"
    )
    assert done.returncode == 0, done.stderr
    line = json.loads(done.stdout.splitlines()[-1])
    assert line["traceDatasets"] == {"chat": 1, "weather": 2}
    assert line["spans"]["llmCalls"] == 3 and line["spans"]["trajectories"] == 2
    # the deployment's routes when the flag is not given
    deployment = {**env, "TRAINING_PIPELINE_TRACE_ROUTES": "weather-*=weather"}
    routed = cli(deployment, "build-datasets", str(folder), str(tmp_path / "out3"))
    assert json.loads(routed.stdout.splitlines()[-1])["traceDatasets"] == {"weather": 3}
    wrong = cli(env, "build-datasets", str(folder), str(tmp_path / "out2"), "--trace-routes", "weather-agent")
    assert wrong.returncode == 2 and "PATTERN=DATASET" in wrong.stderr and "Traceback" not in wrong.stderr


def test_the_elizaos_profile_still_redacts_everything_a_trace_brings(
    traced_runs: dict[str, tuple[Path, list[dict[str, Any]]]], tmp_path: Path
) -> None:
    """The elizaos profile reaches elizaOS's prompt fields only: its contract for its own format. A
    trace's messages have none of them, and are redacted all the same."""
    folder, _ = traced_runs["openinference"]
    build_datasets(folder, tmp_path / "out", PrivacyFilter("elizaos", env_secrets=("tok-live-0f9e8d7c6b5a",)))
    text = (tmp_path / "out" / "tool_use.jsonl").read_text()
    assert "tok-live-0f9e8d7c6b5a" not in text and "<REDACTED:env-secret>" in text


def test_a_build_shows_how_far_it_has_gone_on_stderr_and_keeps_stdout_for_the_result(
    traced_runs: dict[str, tuple[Path, list[dict[str, Any]]]], tmp_path: Path
) -> None:
    source = tmp_path / "in"
    shutil.copytree(traced_runs["genai"][0], source / "traces")
    write_long_sample(source / "day.jsonl", 300)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINING_PIPELINE_")}
    done = cli(env, "build-datasets", str(source), str(tmp_path / "out"), "--progress")
    assert done.returncode == 0, done.stderr
    total = sum(p.stat().st_size for p in source.rglob("*") if p.is_file()) / 2**20
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"{total:,.0f} of {total:,.0f} MB read (100%), 302 records") and "done in" in last
    assert json.loads(done.stdout.strip())["recordsIn"] == 302  # stdout: the result line alone
    quiet = cli(env, "build-datasets", str(source), str(tmp_path / "out2"))  # not a terminal: nothing
    assert quiet.stderr == ""


def test_a_trace_file_gone_since_it_was_listed_is_one_unreadable_record(tmp_path: Path) -> None:
    [item] = list(spans_of_file(tmp_path / "gone.pb", "otlp-protobuf"))
    assert isinstance(item, Unreadable) and item.reason.startswith("unreadable trace file")


def _tool_call_span(arguments: dict[str, Any], result: str) -> str:
    """One OTLP/JSON line: a chat span whose conversation calls a tool with `arguments` and gets
    `result` back, in the GenAI attributes form."""
    call = {"type": "tool_call", "id": "call_1", "name": "send_email", "arguments": arguments}
    inputs = [
        {"role": "user", "parts": [{"type": "text", "content": "Mail the customer that it is fixed."}]},
        {"role": "assistant", "parts": [call]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": result}]},
    ]
    outputs = [
        {"role": "assistant", "parts": [{"type": "text", "content": "Sent."}], "finish_reason": "stop"}
    ]
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.input.messages": json.dumps(inputs),
        "gen_ai.output.messages": json.dumps(outputs),
    }
    span = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": "b7ad6b7169203331",
        "name": "chat gpt-4o-mini",
        "kind": 3,
        "startTimeUnixNano": "1795478500000000000",
        "endTimeUnixNano": "1795478500800000000",
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()],
    }
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}) + "\n"


def test_what_a_tool_call_carries_as_json_is_redacted_by_its_structure_and_by_its_keys(
    tmp_path: Path,
) -> None:
    """Inside a tool call's JSON arguments a line break is `\\n` and a quote `\\"`: the signature that
    tells a name, and a JSON text inside an argument, are read as JSON; a key that names a secret still
    tells it."""
    body = "Hi, it is fixed.\n\nBest regards,\nJason Johnson\nPhone: +1 415-555-0132"
    profile = json.dumps({"customer": {"full_name": "Maria Gonzalez", "email": "maria.g@example.org"}})
    # a secret a rule tells by its key, one too short to be looked for anywhere else
    arguments = {
        "body": body,
        "profile": profile,
        "api_key": "x9Kq2LmN8vB4cX7zR1tY6wP3",
        "password": "hunter2x",
    }
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "spans.jsonl").write_text(_tool_call_span(arguments, json.dumps({"ok": True})))
    build_datasets(tmp_path / "in", tmp_path / "out", PrivacyFilter("strict"))
    [line] = (tmp_path / "out" / "tool_use.jsonl").read_text().splitlines()
    sent = json.loads(json.loads(line)["messages"][1]["tool_calls"][0]["function"]["arguments"])
    signed = sent["body"].split("\n")[3]
    assert sent["body"] == f"Hi, it is fixed.\n\nBest regards,\n{signed}\nPhone: <PII:PHONE_NUMBER:1>"
    customer = json.loads(sent["profile"])["customer"]
    assert customer["email"] == "<PII:EMAIL_ADDRESS:1>"
    # two people, two placeholders, numbered across the conversation
    assert {signed, customer["full_name"]} == {"<PII:PERSON:1>", "<PII:PERSON:2>"}
    assert "x9Kq2LmN8vB4cX7zR1tY6wP3" not in line and sent["password"].startswith("<REDACTED:")
    for value in ("Jason Johnson", "Maria Gonzalez", "maria.g@example.org", "555-0132"):
        assert value not in line
