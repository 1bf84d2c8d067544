"""OTLP trace files as spans: the OTLP/JSON lines the OpenTelemetry Collector's `file` exporter writes (one
`ExportTraceServiceRequest` a line) and OTLP protobuf (one request a file, as posted over OTLP/HTTP and
as `receiver` stores it), either of them plain or gzip.

Protobuf is parsed by the official `opentelemetry-proto` package. OTLP/JSON is read with orjson, not
with protobuf's `json_format`: the OTLP spec's JSON differs from protobuf's canonical mapping (trace
and span ids are hex, not base64; enums may be integers), and orjson reads a line several times faster.
Both give the same `Span`s.
"""

from __future__ import annotations

import base64
import gzip
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any, Literal

import orjson

from training_pipeline.trajectories.files import TRACE_SUFFIXES, fallback_day

__all__ = [
    "Span",
    "SpanEvent",
    "TraceKind",
    "Unreadable",
    "parse_request",
    "spans_of_file",
    "spans_of_request",
    "trace_kind",
]

TraceKind = Literal["otlp-json", "otlp-protobuf"]
_GZIP_MAGIC = b"\x1f\x8b"
#: names that say a file holds OTLP protobuf (content decides for the rest)
PROTOBUF_SUFFIXES = tuple(suffix for suffix in TRACE_SUFFIXES if suffix != ".gz")
#: a line of the OTLP/JSON file exporter opens with this key (the only one of the request)
_JSON_OPENING = b'{"resourceSpans"'


@dataclass(frozen=True, slots=True)
class SpanEvent:
    name: str
    time_unix_nano: int
    attributes: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Span:
    """A span as the conventions read it: ids as hex, attributes as plain Python values (an array is a
    list, a key-value list a dict), with its resource's attributes (`service.name`) beside it."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: int
    start_unix_nano: int
    end_unix_nano: int
    attributes: dict[str, Any]
    events: tuple[SpanEvent, ...] = ()
    resource: dict[str, Any] = field(default_factory=dict)
    #: where it was read: file and line (JSON) or file (protobuf)
    origin: str = ""
    #: the day its file stands for (`files.fallback_day`): where it is quarantined if its own time is none
    fallback: date | None = None


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A line or a file that holds no readable request: quarantined with the reason."""

    origin: str
    reason: str
    #: the partition it is quarantined in (`files.fallback_day` of its file)
    fallback: date | None = None


def trace_kind(path: Path) -> TraceKind | None:
    """What a file holds, by its first bytes (and, for protobuf, its name): OTLP/JSON lines, OTLP
    protobuf, or None (an elizaOS export, or anything else)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(64)
            if head.startswith(_GZIP_MAGIC):
                handle.seek(0)
                head = _gunzipped_head(handle.read(1 << 16))
    except OSError:
        return None
    stripped = head.lstrip(b" \t\r\n\xef\xbb\xbf")
    if stripped.startswith(_JSON_OPENING):
        return "otlp-json"
    name = path.name.removesuffix(".gz")
    if name.endswith(PROTOBUF_SUFFIXES) and not stripped.startswith((b"{", b"[")):
        return "otlp-protobuf"
    return None


def _gunzipped_head(data: bytes) -> bytes:
    try:
        return zlib.decompressobj(wbits=31).decompress(data, 64)
    except zlib.error:
        return b""


def spans_of_file(
    path: Path, kind: TraceKind, on_read: Callable[[int], None] | None = None
) -> Iterator[Span | Unreadable]:
    """Every span of a trace file, in file order; what cannot be read, as `Unreadable`. JSON lines are
    streamed (a line at a time); a protobuf file is one request, read whole. `on_read` is told how many
    more bytes of the file (as stored, compressed or not) have been read."""
    fallback = fallback_day(path)
    for item in _spans_of_file(path, kind, on_read or (lambda size: None)):
        yield replace(item, fallback=fallback)


def _spans_of_file(
    path: Path, kind: TraceKind, on_read: Callable[[int], None]
) -> Iterator[Span | Unreadable]:
    try:
        zipped = _is_gzip(path)
        with (gzip.open if zipped else open)(path, "rb") as handle:
            stored = handle.fileobj if zipped else handle  # where the file's own bytes are read
            if kind == "otlp-protobuf":
                data = handle.read()
                on_read(stored.tell())
                yield from spans_of_request(data, "application/x-protobuf", str(path))
                return
            position = 0
            for number, line in enumerate(handle, start=1):
                on_read(stored.tell() - position)
                position = stored.tell()
                if line.strip():
                    yield from spans_of_request(line, "application/json", f"{path}:{number}")
    except (OSError, EOFError, zlib.error) as err:
        yield Unreadable(str(path), f"unreadable trace file: {err}")


def _is_gzip(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(2) == _GZIP_MAGIC


def parse_request(data: bytes, content_type: str) -> tuple[Any, None] | tuple[None, str]:
    """One `ExportTraceServiceRequest`, JSON (a dict, by `content_type`) or protobuf (the message), and
    None; or None and why it is no request."""
    if "json" in content_type:
        try:
            request = orjson.loads(data)
        except orjson.JSONDecodeError as err:
            return None, f"invalid OTLP/JSON: {err}"
        if not isinstance(request, dict) or not isinstance(request.get("resourceSpans", []), list):
            return None, "not an OTLP ExportTraceServiceRequest (no resourceSpans list)"
        return request, None
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    try:
        return ExportTraceServiceRequest.FromString(data), None
    except DecodeError as err:
        return None, f"invalid OTLP protobuf: {err}"


def spans_of_request(data: bytes, content_type: str, origin: str) -> Iterator[Span | Unreadable]:
    """The spans of one `ExportTraceServiceRequest`, JSON or protobuf (by `content_type`)."""
    request, problem = parse_request(data, content_type)
    if problem is not None:
        yield Unreadable(origin, problem)
    elif isinstance(request, dict):
        yield from _json_spans(request, origin)
    else:
        yield from _protobuf_spans(request, origin)


# --- OTLP/JSON ------------------------------------------------------------------------------------------


def _json_spans(request: dict[str, Any], origin: str) -> Iterator[Span | Unreadable]:
    for resource_spans in request.get("resourceSpans") or ():
        if not isinstance(resource_spans, dict):
            yield Unreadable(origin, "resourceSpans entry is not an object")
            continue
        resource = _json_attributes((resource_spans.get("resource") or {}).get("attributes"))
        for scope_spans in resource_spans.get("scopeSpans") or ():
            for span in (scope_spans or {}).get("spans") or ():
                try:
                    yield _json_span(span, resource, origin)
                except (TypeError, ValueError, AttributeError) as err:
                    span_id = span.get("spanId") if isinstance(span, dict) else None
                    yield Unreadable(f"{origin} span {span_id}", f"unreadable span: {err}")


def _json_span(span: dict[str, Any], resource: dict[str, Any], origin: str) -> Span:
    trace_id, span_id = _hex_id(span.get("traceId"), 16), _hex_id(span.get("spanId"), 8)
    if not trace_id or not span_id:
        raise ValueError("a span needs a traceId and a spanId")
    events = tuple(
        SpanEvent(
            str(event.get("name") or ""),
            int(event.get("timeUnixNano") or 0),
            _json_attributes(event.get("attributes")),
        )
        for event in span.get("events") or ()
    )
    kind = span.get("kind") or 0
    return Span(
        trace_id,
        span_id,
        _hex_id(span.get("parentSpanId"), 8),
        str(span.get("name") or ""),
        _SPAN_KINDS.get(kind, 0) if isinstance(kind, str) else int(kind),
        int(span.get("startTimeUnixNano") or 0),
        int(span.get("endTimeUnixNano") or 0),
        _json_attributes(span.get("attributes")),
        events,
        resource,
        origin,
    )


_SPAN_KINDS = {
    "SPAN_KIND_UNSPECIFIED": 0,
    "SPAN_KIND_INTERNAL": 1,
    "SPAN_KIND_SERVER": 2,
    "SPAN_KIND_CLIENT": 3,
    "SPAN_KIND_PRODUCER": 4,
    "SPAN_KIND_CONSUMER": 5,
}


def _hex_id(value: Any, size: int) -> str:
    """An id as lower-case hex; the spec's JSON writes hex, protobuf's canonical JSON base64 (some
    exporters do): both are read."""
    if not value:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"id is not a string: {value!r}")
    if len(value) == 2 * size:
        int(value, 16)  # raises on anything but hex
        return value.lower()
    return base64.b64decode(value, validate=True).hex()


def _json_attributes(items: Any) -> dict[str, Any]:
    if not items:
        return {}
    return {str(item["key"]): _json_value(item.get("value") or {}) for item in items}


def _json_value(value: dict[str, Any]) -> Any:
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return int(value["intValue"])  # int64 is a string in OTLP/JSON
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "arrayValue" in value:
        return [_json_value(item) for item in (value["arrayValue"] or {}).get("values") or ()]
    if "kvlistValue" in value:
        return _json_attributes((value["kvlistValue"] or {}).get("values"))
    if "bytesValue" in value:
        return base64.b64decode(value["bytesValue"])
    return None


# --- OTLP protobuf --------------------------------------------------------------------------------------


def _protobuf_spans(message: Any, origin: str) -> Iterator[Span]:
    for resource_spans in message.resource_spans:
        resource = _protobuf_attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield Span(
                    span.trace_id.hex(),
                    span.span_id.hex(),
                    span.parent_span_id.hex(),
                    span.name,
                    int(span.kind),
                    span.start_time_unix_nano,
                    span.end_time_unix_nano,
                    _protobuf_attributes(span.attributes),
                    tuple(
                        SpanEvent(event.name, event.time_unix_nano, _protobuf_attributes(event.attributes))
                        for event in span.events
                    ),
                    resource,
                    origin,
                )


def _protobuf_attributes(items: Any) -> dict[str, Any]:
    return {item.key: _protobuf_value(item.value) for item in items}


def _protobuf_value(value: Any) -> Any:
    which = value.WhichOneof("value")
    if which == "array_value":
        return [_protobuf_value(item) for item in value.array_value.values]
    if which == "kvlist_value":
        return _protobuf_attributes(value.kvlist_value.values)
    if which is None:
        return None
    return getattr(value, which)
