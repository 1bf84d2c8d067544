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

import fnmatch
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import orjson

from training_pipeline.traces.conventions import InferenceCall, NoContent, SpanProblem, Step, read_span
from training_pipeline.traces.otlp import Span, Unreadable
from training_pipeline.trajectories.models import TRACE_SOURCE, start_day
from training_pipeline.trajectories.parsing import RawRecord

__all__ = ["DEFAULT_DATASETS", "TraceRecord", "TraceReport", "TraceRouting", "trajectory_records"]

#: where a call goes when no route names it: `tool_use` when tools were offered or called, else `chat`
DEFAULT_DATASETS = ("chat", "tool_use")


@dataclass(frozen=True)
class TraceRouting:
    """Which dataset a trace's LLM call feeds: the first rule whose pattern (a shell glob, case as
    written) matches the call's agent (`gen_ai.agent.name`, else the service's `service.name`), else
    the default (`DEFAULT_DATASETS`). Rules are written `pattern=dataset`."""

    rules: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> TraceRouting:
        """`support-*=support,billing=billing` (a comma-separated list of rules)."""
        rules = []
        for item in (text or "").split(","):
            if not item.strip():
                continue
            pattern, equals, dataset = item.partition("=")
            dataset = dataset.strip()
            if not equals or not pattern.strip() or not dataset_name_ok(dataset):
                raise ValueError(
                    f"trace route {item.strip()!r}: write PATTERN=DATASET, the dataset a name of lower-case "
                    "letters, digits, '_' or '-'"
                )
            rules.append((pattern.strip(), dataset))
        return cls(tuple(rules))

    def dataset(self, agent: str | None, call: InferenceCall) -> str:
        for pattern, dataset in self.rules:
            if agent is not None and fnmatch.fnmatchcase(agent, pattern):
                return dataset
        called = any(m.get("tool_calls") for m in (*call.messages, *call.output))
        return "tool_use" if call.tools or called else "chat"


def dataset_name_ok(name: str) -> bool:
    return bool(name) and all(c.islower() or c.isdigit() or c in "_-" for c in name) and name.isascii()


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


@dataclass
class _Group:
    items: list[InferenceCall | Step] = field(default_factory=list)
    traces: list[str] = field(default_factory=list)
    agent: str | None = None


#: a record for the pipeline, and for one that cannot be read, the day it is quarantined in
TraceRecord = tuple[RawRecord, date | None]


def trajectory_records(
    spans: Iterable[Span | Unreadable], routing: TraceRouting, report: TraceReport
) -> Iterator[TraceRecord]:
    """The trajectories the spans make, as records the pipeline parses (`parsing.parse_record`), and a
    quarantined record for each span or request that cannot be read (dated by the span's start, else
    by its file). Spans are grouped in memory: a trace's spans may arrive in any order, in any file."""
    by_trace: dict[str, list[InferenceCall | Step]] = {}
    conversation_of: dict[str, str] = {}
    agent_of: dict[str, str] = {}  # gen_ai.agent.name, where a span names it
    service_of: dict[str, str] = {}  # else the resource's service.name
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
        conversation = attributes.get("gen_ai.conversation.id") or attributes.get("session.id")
        if conversation:
            conversation_of.setdefault(item.trace_id, str(conversation))
        agent = attributes.get("gen_ai.agent.name") or attributes.get("agent.name")
        if agent:
            agent_of.setdefault(item.trace_id, str(agent))
        elif item.resource.get("service.name"):
            service_of.setdefault(item.trace_id, str(item.resource["service.name"]))
        by_trace.setdefault(item.trace_id, []).append(read)
    groups: dict[str, _Group] = {}
    for trace_id, items in by_trace.items():
        key = conversation_of.get(trace_id, trace_id)
        group = groups.setdefault(key, _Group())
        group.items.extend(items)
        group.traces.append(trace_id)
        group.agent = group.agent or agent_of.get(trace_id) or service_of.get(trace_id)
    for key, group in groups.items():
        trajectory = _trajectory(key, group, routing, report, key != group.traces[0])
        report.counts["trajectories"] += 1
        first = group.items[0].span
        yield RawRecord(f"{first.origin} trace {first.trace_id}", orjson.dumps(trajectory)), None


def _trajectory(
    key: str, group: _Group, routing: TraceRouting, report: TraceReport, conversation: bool
) -> dict[str, Any]:
    items = sorted(group.items, key=lambda item: (item.span.start_unix_nano, item.span.span_id))
    steps: list[dict[str, Any]] = []
    seen: dict[bytes, tuple[InferenceCall, dict[str, Any]]] = {}
    for item in items:
        span = item.span
        if isinstance(item, Step):
            report.counts["steps"] += 1
            step: dict[str, Any] = {
                "stepId": span.span_id,
                "timestamp": _ms(span.start_unix_nano),
                "kind": item.kind,
            }
            for name, value in (
                ("name", item.name),
                ("toolCallId", item.tool_call_id),
                ("arguments", item.arguments),
                ("result", item.result),
            ):
                if value is not None:
                    step[name] = value
            steps.append(step)
            continue
        fingerprint = orjson.dumps([item.messages, item.output], option=orjson.OPT_SORT_KEYS)
        earlier = seen.get(fingerprint)
        if earlier is not None and _overlap(earlier[0].span, span):
            # one call written by two instrumentations: kept once, with the tools either recorded
            report.counts["duplicates"] += 1
            record = earlier[1]
            if item.tools and not record.get("tools"):
                record["tools"] = item.tools
            continue
        record = _llm_call(item, routing.dataset(group.agent, item))
        seen[fingerprint] = (item, record)
        report.counts["llmCalls"] += 1
        steps.append(
            {
                "stepId": span.span_id,
                "timestamp": _ms(span.start_unix_nano),
                "kind": "llm",
                "llmCalls": [record],
            }
        )
    start = min(item.span.start_unix_nano for item in items)
    end = max(item.span.end_unix_nano for item in items)
    metadata: dict[str, Any] = {"source": TRACE_SOURCE, "traceIds": sorted(group.traces)}
    if conversation:
        metadata["conversationId"] = key
    trajectory: dict[str, Any] = {
        "trajectoryId": key,
        "startTime": _ms(start),
        "endTime": _ms(end),
        "durationMs": max(0.0, _ms(end) - _ms(start)),
        "steps": steps,
        "metadata": metadata,
    }
    if group.agent:
        trajectory["agentId"] = group.agent
    return trajectory


def _llm_call(call: InferenceCall, dataset: str) -> dict[str, Any]:
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
    for name, value in (
        ("model", call.model),
        ("temperature", call.temperature),
        ("maxTokens", call.max_tokens),
        ("promptTokens", call.input_tokens),
        ("completionTokens", call.output_tokens),
    ):
        if value is not None:
            record[name] = value
    metadata: dict[str, Any] = {"convention": call.convention, "dataset": dataset}
    if call.provider:
        metadata["provider"] = call.provider
    if call.finish_reasons:
        metadata["finishReasons"] = call.finish_reasons
    record["metadata"] = metadata
    return record


def _day(span: Span) -> date | None:
    try:
        return start_day(span.start_unix_nano / 1e6) if span.start_unix_nano else span.fallback
    except (OverflowError, OSError, ValueError):
        return span.fallback


def _overlap(a: Span, b: Span) -> bool:
    return a.start_unix_nano <= b.end_unix_nano and b.start_unix_nano <= a.end_unix_nano


def _ms(nanos: int) -> float:
    return nanos / 1e6
