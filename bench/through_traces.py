"""The coverage benches' texts carried by a traced agent instead of handed to the filter: each text in
its own trace, in turn as the user's message, a tool call's arguments and a tool's result, written as
the OpenTelemetry Collector's file exporter writes OTLP/JSON, read back by `build-datasets`' trace path,
and taken out of the trace dataset where it landed. What a coverage bench measures this way is the
whole path a trace takes (conventions, assembly, redaction of every string, the dataset's writing), not
only the filter.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from training_pipeline.datasets.build import build_datasets
from training_pipeline.privacy.filter import PrivacyFilter

__all__ = ["SLOTS", "redact_through_traces"]

#: where a text rides in its trace, in turn
SLOTS = ("user message", "tool arguments", "tool result")
#: 2026-11-24, a day the build reads like any other
_START_NS = 1_795_478_500_000_000_000
_MARK = "bench case "


def redact_through_traces(texts: list[str], privacy: PrivacyFilter, workers: int = 2) -> list[str]:
    """Each of `texts` as it came out of the trace dataset (`SLOTS[i % 3]`); a text whose conversation
    did not reach a dataset comes back as the empty string (it is in no output, so it leaked nowhere)."""
    with tempfile.TemporaryDirectory(prefix="through-traces-") as folder:
        source, out = Path(folder) / "traces.jsonl", Path(folder) / "out"
        with source.open("w", encoding="utf-8") as handle:
            for start in range(0, len(texts), 200):  # a collector writes a request per batch
                cases = range(start, min(start + 200, len(texts)))
                handle.write(json.dumps(_request([(i, texts[i]) for i in cases])) + "\n")
        build_datasets(source, out, privacy, workers=workers)
        found = [""] * len(texts)
        for path in sorted(out.glob("*.jsonl")):
            if path.name.endswith("_trajectories.jsonl") or path.name == "quarantine.jsonl":
                continue
            for line in path.read_text(encoding="utf-8").splitlines():
                messages = json.loads(line)["messages"]
                system = messages[0]["content"] if messages[0]["role"] == "system" else ""
                if system.startswith(_MARK):
                    index = int(system.removeprefix(_MARK))
                    found[index] = _slot(messages, index % len(SLOTS))
        return found


def _slot(messages: list[dict], slot: int) -> str:
    user, called, result = messages[1], messages[2], messages[3]
    if slot == 0:
        return user["content"]
    if slot == 1:
        return json.loads(called["tool_calls"][0]["function"]["arguments"])["note"]
    return result["content"]


def _request(cases: list[tuple[int, str]]) -> dict:
    """One `ExportTraceServiceRequest` (OTLP/JSON, ids in hex) with a chat span per case, in its own
    trace: the system instructions mark the case, the text sits in its slot."""
    spans = []
    for index, text in cases:
        slot = index % len(SLOTS)
        call = {
            "type": "tool_call",
            "id": "call_1",
            "name": "save_note",
            "arguments": {"note": text if slot == 1 else "the customer's note"},
        }
        inputs = [
            {"role": "user", "parts": [{"type": "text", "content": text if slot == 0 else "save this"}]},
            {"role": "assistant", "parts": [call]},
            {
                "role": "tool",
                "parts": [
                    {"type": "tool_call_response", "id": "call_1", "response": text if slot == 2 else "ok"}
                ],
            },
        ]
        outputs = [
            {"role": "assistant", "parts": [{"type": "text", "content": "Saved."}], "finish_reason": "stop"}
        ]
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.provider.name": "openai",
            "gen_ai.system_instructions": json.dumps([{"type": "text", "content": f"{_MARK}{index}"}]),
            "gen_ai.input.messages": json.dumps(inputs),
            "gen_ai.output.messages": json.dumps(outputs),
        }
        start = _START_NS + index * 1_000_000
        spans.append(
            {
                "traceId": f"{index + 1:032x}",
                "spanId": f"{index + 1:016x}",
                "name": "chat gpt-4o-mini",
                "kind": 3,
                "startTimeUnixNano": str(start),
                "endTimeUnixNano": str(start + 800_000),
                "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()],
            }
        )
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "bench-agent"}}]
                },
                "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}],
            }
        ]
    }
