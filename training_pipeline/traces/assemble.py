"""Spans into trajectories: a trace is a trajectory, or a conversation is, where its spans carry
`gen_ai.conversation.id` (GenAI) or `session.id` (OpenInference); its LLM calls and its agents' and
tools' steps in start order.

The trajectory is the pipeline's own record (`trajectories.models`), so everything after this (the
privacy filter, the quarantine, the day's partition, the checks) treats it as it treats an elizaOS
export. A trace's LLM call keeps its whole conversation in OpenAI's chat shape (`messages`, `output`,
`tools`), never in elizaOS's prompt fields: elizaOS's five datasets stay elizaOS's, and a call goes to
the dataset its route names (`TraceRouting`).

Every span is counted once: an LLM call, a step, a duplicate (the same call written by two
instrumentations), an inference span without content, another span (HTTP, database: dropped, never
stored), or unreadable (quarantined with the reason).
"""

from __future__ import annotations

import heapq
import itertools
import sqlite3
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import orjson

from training_pipeline.traces.conventions import InferenceCall, NoContent, SpanProblem, Step, read_span
from training_pipeline.traces.otlp import Span, Unreadable
from training_pipeline.traces.routes import TraceRouting
from training_pipeline.trajectories.models import TRACE_SOURCE, start_day
from training_pipeline.trajectories.parsing import RawRecord

__all__ = ["TraceRecord", "TraceReport", "trajectory_records"]


@dataclass
class TraceReport:
    """What the spans became; `spansIn` is the sum of the rest."""

    counts: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, int]:
        keys = ("llmCalls", "steps", "duplicates", "withoutContent", "otherSpans", "unreadableSpans")
        report = {"spansIn": sum(self.counts[key] for key in keys)}
        report.update({key: self.counts[key] for key in keys})
        report["unreadableRequests"] = self.counts["unreadableRequests"]
        report["trajectories"] = self.counts["trajectories"]
        return report


#: a record for the pipeline, and for one that cannot be read, the day it is quarantined in
TraceRecord = tuple[RawRecord, date | None]


def trajectory_records(
    spans: Iterable[Span | Unreadable], routing: TraceRouting, report: TraceReport
) -> Iterator[TraceRecord]:
    """The trajectories the spans make, as records the pipeline parses (`parsing.parse_record`), and a
    quarantined record for each span or request that cannot be read (dated by the span's start, else
    by its file).

    A trace's spans may arrive in any order, in any file, and a conversation's traces anywhere: what
    each span keeps goes to a temporary SQLite file as it is read, with what it says of its trace
    (conversation, agent, service), and each trajectory is put together from there: memory holds one
    trajectory, whatever the input's size."""
    with tempfile.TemporaryDirectory(prefix="training-pipeline-spans-") as folder:
        db = sqlite3.connect(Path(folder) / "spans.sqlite", isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode = OFF")
            db.execute("PRAGMA synchronous = OFF")
            db.execute(
                "CREATE TABLE kept (trace TEXT, start INTEGER, span TEXT, item BLOB,"
                " conversation TEXT, agent TEXT, service TEXT, origin TEXT)"
            )
            db.execute("BEGIN")
            for item in spans:
                if isinstance(item, Unreadable):
                    report.counts["unreadableRequests"] += 1
                    yield RawRecord(item.origin, b"", item.reason), item.fallback
                    continue
                read = read_span(item)
                if isinstance(read, SpanProblem):
                    report.counts["unreadableSpans"] += 1
                    yield RawRecord(f"{item.origin} span {item.span_id}", b"", read.reason), _day(item)
                    continue
                if read is None:
                    report.counts["otherSpans"] += 1
                    continue
                if isinstance(read, NoContent):
                    report.counts["withoutContent"] += 1
                    continue
                attributes = item.attributes
                db.execute(
                    "INSERT INTO kept VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        item.trace_id,
                        item.start_unix_nano,
                        item.span_id,
                        orjson.dumps(_kept(read, _route_values(item, routing.attributes))),
                        _text(attributes.get("gen_ai.conversation.id") or attributes.get("session.id")),
                        _text(attributes.get("gen_ai.agent.name") or attributes.get("agent.name")),
                        _text(item.resource.get("service.name")),
                        item.origin,
                    ),
                )
            db.execute("COMMIT")
            db.execute("CREATE INDEX by_trace ON kept (trace, start, span)")
            # a trace's group is its conversation, if a span names one; its agent the first named
            db.execute(
                "CREATE TABLE traces AS SELECT trace, COALESCE(MIN(conversation), trace) AS grp, MIN(agent)"
                " AS agent, MIN(service) AS service, MIN(origin) AS origin FROM kept GROUP BY trace"
            )
            db.execute("CREATE INDEX by_group ON traces (grp, trace)")
            groups = db.execute("SELECT grp, trace, agent, service, origin FROM traces ORDER BY grp, trace")
            for key, members in itertools.groupby(groups, key=lambda row: row[0]):
                rows = list(members)
                traces = [row[1] for row in rows]
                agent = next((row[2] for row in rows if row[2]), None) or next(
                    (row[3] for row in rows if row[3]), None
                )
                merged = heapq.merge(
                    *(
                        db.execute(
                            "SELECT start, span, item FROM kept WHERE trace = ? ORDER BY start, span", (t,)
                        )
                        for t in traces
                    )
                )
                items = [orjson.loads(item) for _, _, item in merged]
                trajectory = _trajectory(key, traces, agent, items, routing, report)
                report.counts["trajectories"] += 1
                yield RawRecord(f"{rows[0][4]} trace {traces[0]}", orjson.dumps(trajectory)), None
        finally:
            db.close()


def _text(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def _route_values(span: Span, attributes: tuple[str, ...]) -> dict[str, Any]:
    """The values of the attributes routing reads, on the span or else on its resource."""
    found = {}
    for attribute in attributes:
        value = span.attributes.get(attribute, span.resource.get(attribute))
        if value is not None:
            found[attribute] = value if isinstance(value, str | int | float | bool) else str(value)
    return found


def _kept(read: InferenceCall | Step, route: dict[str, Any]) -> dict[str, Any]:
    """What a trajectory keeps of a span: a step's record, or an LLM call's with its times and the
    values it is routed by (dropped once it is routed)."""
    span = read.span
    if isinstance(read, Step):
        step: dict[str, Any] = {
            "stepId": span.span_id,
            "timestamp": _ms(span.start_unix_nano),
            "kind": read.kind,
        }
        _present(
            step, name=read.name, toolCallId=read.tool_call_id, arguments=read.arguments, result=read.result
        )
        return {"step": step}
    return {"call": _llm_call(read), "start": span.start_unix_nano, "end": span.end_unix_nano, "route": route}


def _trajectory(
    key: str,
    traces: list[str],
    agent: str | None,
    items: list[dict[str, Any]],
    routing: TraceRouting,
    report: TraceReport,
) -> dict[str, Any]:
    steps: list[dict[str, Any]] = []
    seen: dict[bytes, dict[str, Any]] = {}
    for item in items:
        if "step" in item:
            report.counts["steps"] += 1
            steps.append(item["step"])
            continue
        call = item["call"]
        fingerprint = orjson.dumps([call["messages"], call["output"]], option=orjson.OPT_SORT_KEYS)
        earlier = seen.get(fingerprint)
        if earlier is not None and earlier["start"] <= item["end"] and item["start"] <= earlier["end"]:
            # one call written by two instrumentations: kept once, with the tools either recorded
            report.counts["duplicates"] += 1
            if call.get("tools") and not earlier["call"].get("tools"):
                earlier["call"]["tools"] = call["tools"]
            continue
        seen[fingerprint] = item
        report.counts["llmCalls"] += 1
        steps.append(
            {"stepId": call["callId"], "timestamp": call["timestamp"], "kind": "llm", "llmCalls": [call]}
        )
    for item in seen.values():  # routed once the tools are known
        item["call"]["metadata"]["dataset"] = routing.dataset(agent, item["call"], item["route"])
    starts = [step["timestamp"] for step in steps]
    ends = [item["end"] / 1e6 for item in seen.values()] or starts
    metadata: dict[str, Any] = {"source": TRACE_SOURCE, "traceIds": sorted(traces)}
    if key != traces[0] or len(traces) > 1:
        metadata["conversationId"] = key
    trajectory: dict[str, Any] = {
        "trajectoryId": key,
        "startTime": min(starts),
        "endTime": max(max(ends), max(starts)),
        "steps": steps,
        "metadata": metadata,
    }
    trajectory["durationMs"] = max(0.0, trajectory["endTime"] - trajectory["startTime"])
    if agent:
        trajectory["agentId"] = agent
    return trajectory


def _llm_call(call: InferenceCall) -> dict[str, Any]:
    span = call.span
    record: dict[str, Any] = {
        "callId": span.span_id,
        "timestamp": _ms(span.start_unix_nano),
        "latencyMs": max(0.0, (span.end_unix_nano - span.start_unix_nano) / 1e6),
        "messages": call.messages,
        "output": call.output,
    }
    if call.tools:
        record["tools"] = call.tools
    _present(
        record,
        model=call.model,
        temperature=call.temperature,
        maxTokens=call.max_tokens,
        promptTokens=call.input_tokens,
        completionTokens=call.output_tokens,
    )
    metadata: dict[str, Any] = {"convention": call.convention}
    if call.provider:
        metadata["provider"] = call.provider
    if call.finish_reasons:
        metadata["finishReasons"] = call.finish_reasons
    record["metadata"] = metadata
    return record


def _present(record: dict[str, Any], **fields: Any) -> None:
    """The fields a span gave, into `record`: one it did not give is left out, not written as null."""
    record.update((name, value) for name, value in fields.items() if value is not None)


def _day(span: Span) -> date | None:
    try:
        return start_day(span.start_unix_nano / 1e6) if span.start_unix_nano else span.fallback
    except (OverflowError, OSError, ValueError):
        return span.fallback


def _ms(nanos: int) -> float:
    return nanos / 1e6
