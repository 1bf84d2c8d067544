"""Where a test's traced agent exports to: an OTLP/HTTP endpoint on loopback that keeps each request's
body as a file (`NNNN.pb`), the OTLP/JSON line the OpenTelemetry Collector's `file` exporter would
write for it (the OTLP spec's JSON: ids in hex, enums as integers), and the agent's run into it."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from tests.loopback import Answer, LoopbackJSONServer

REPO = Path(__file__).resolve().parents[1]


class OTLPStore(LoopbackJSONServer):
    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder
        self._lock = threading.Lock()
        self.count = 0

    @property
    def endpoint(self) -> str:
        return f"{self.origin}/v1/traces"

    def handle(self, method: str, path: str, headers: Any, body: bytes) -> Answer:
        if method != "POST" or path != "/v1/traces":
            return 404, {"error": "not found"}
        with self._lock:
            self.count += 1
            (self.folder / f"{self.count:04d}.pb").write_bytes(body)
        return 200, b"", {"content-type": "application/x-protobuf"}


def collector_json_line(protobuf: bytes) -> str:
    """An `ExportTraceServiceRequest` as one line of the collector's `file` exporter."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = MessageToDict(ExportTraceServiceRequest.FromString(protobuf), use_integers_for_enums=True)
    for resource_spans in request.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(request, separators=(",", ":"))


def moved_to_day(protobuf: bytes, day_start_unix_nano: int) -> bytes:
    """The request with its spans' and events' times moved so the earliest starts at the day's start
    plus its offset within its own day (a test's spans are made now; the daily partitions end yesterday)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest.FromString(protobuf)
    day = 86_400 * 10**9
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                shift = day_start_unix_nano - span.start_time_unix_nano // day * day
                span.start_time_unix_nano += shift
                span.end_time_unix_nano += shift
                for event in span.events:
                    event.time_unix_nano += shift
    return request.SerializeToString()


def copied(protobuf: bytes, index: int) -> bytes:
    """The request as another run of the same agent would send it: its traces' ids and its
    conversation and session ids made the `index`-th copy's own."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest.FromString(protobuf)
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                span.trace_id = span.trace_id[:-2] + index.to_bytes(2, "big")
                for attribute in span.attributes:
                    if attribute.key in ("gen_ai.conversation.id", "session.id"):
                        attribute.value.string_value += f"-{index}"
    return request.SerializeToString()


def traced_run(instrumentation: str, folder: Path) -> list[dict[str, Any]]:
    """Runs the traced agent (`tests.traced_agent`) in a process of its own against a scripted chat
    server; its spans land in `folder` as OTLP protobuf requests. Returns what the client sent and got,
    call by call."""
    from tests.fake_chat import FakeChatServer
    from tests.traced_agent import reply

    folder.mkdir(parents=True, exist_ok=True)
    record = folder.parent / f"sent-{instrumentation}.json"
    with FakeChatServer(reply) as chat, OTLPStore(folder) as store:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "tests.traced_agent",
                "--instrumentation",
                instrumentation,
                "--chat-url",
                chat.base_url,
                "--otlp-endpoint",
                store.endpoint,
                "--record",
                str(record),
            ],
            cwd=REPO,
            check=True,
            timeout=120,
        )
    return json.loads(record.read_text())
