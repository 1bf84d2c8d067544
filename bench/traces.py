"""OpenTelemetry trace input: spans per second read and assembled into trajectories, for OTLP/JSON lines
and OTLP protobuf, and `build-datasets` (strict) on a large OTLP/JSON file: wall, CPU and peak memory.

    python bench/traces.py [--gigabytes 1.0] [--protobuf-megabytes 200] [--rounds 3] [--write]

The input is generated: traces of an agent (an `invoke_agent` span, two `chat` spans in the GenAI
attributes form with a growing conversation and a tool call, an `execute_tool` span, and an HTTP span
that is dropped), each request 64 traces, about 1.3 KB of message text per call. Reading is measured
in a process of its own per encoding (`TraceFiles.records`: parse, read by the conventions, grouped
through SQLite, trajectories serialised); the build is the CLI as a user runs it, every worker counted.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from process_tree import timed
from readme import machine, write_section

ROOT = Path(__file__).resolve().parents[1]
_TRACES_PER_REQUEST = 64
_WORDS = (
    "the",
    "agent",
    "asked",
    "about",
    "order",
    "status",
    "and",
    "customer",
    "replied",
    "with",
    "details",
)


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words))


def request(rng: random.Random, start_ns: int):  # -> ExportTraceServiceRequest
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import KeyValue

    def attributes(target, values: dict) -> None:
        for key, value in values.items():
            item = KeyValue(key=key)
            if isinstance(value, int):
                item.value.int_value = value
            else:
                item.value.string_value = value
            target.append(item)

    message = ExportTraceServiceRequest()
    resource_spans = message.resource_spans.add()
    attributes(resource_spans.resource.attributes, {"service.name": "support-agent"})
    scope = resource_spans.scope_spans.add()
    for _ in range(_TRACES_PER_REQUEST):
        trace_id = rng.randbytes(16)
        agent_id = rng.randbytes(8)
        question = _text(rng, 120)
        system = [{"type": "text", "content": _text(rng, 60)}]
        first_in = [{"role": "user", "parts": [{"type": "text", "content": question}]}]
        call = {"type": "tool_call", "id": "call_1", "name": "lookup_order", "arguments": {"order": "A-1"}}
        first_out = [{"role": "assistant", "parts": [call], "finish_reason": "tool_calls"}]
        answer = _text(rng, 40)
        second_in = [
            *first_in,
            {"role": "assistant", "parts": [call]},
            {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": "call_1", "response": "shipped"}],
            },
        ]
        second_out = [
            {"role": "assistant", "parts": [{"type": "text", "content": answer}], "finish_reason": "stop"}
        ]
        spans = [
            (
                "invoke_agent support-agent",
                agent_id,
                b"",
                {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support"},
            ),
            ("chat gpt-4o-mini", rng.randbytes(8), agent_id, _chat(system, first_in, first_out)),
            (
                "execute_tool lookup_order",
                rng.randbytes(8),
                agent_id,
                {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup_order"},
            ),
            ("chat gpt-4o-mini", rng.randbytes(8), agent_id, _chat(system, second_in, second_out)),
            (
                "GET /orders",
                rng.randbytes(8),
                agent_id,
                {"http.request.method": "GET", "url.full": "https://shop/orders"},
            ),
        ]
        for offset, (name, span_id, parent, values) in enumerate(spans):
            span = scope.spans.add()
            span.trace_id, span.span_id, span.parent_span_id, span.name = trace_id, span_id, parent, name
            span.kind = 3
            span.start_time_unix_nano = start_ns + offset * 1_000_000
            span.end_time_unix_nano = start_ns + offset * 1_000_000 + 800_000
            attributes(span.attributes, values)
        start_ns += 10_000_000
    return message


def _chat(system: list, inputs: list, outputs: list) -> dict:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.provider.name": "openai",
        "gen_ai.usage.input_tokens": 420,
        "gen_ai.usage.output_tokens": 40,
        "gen_ai.system_instructions": json.dumps(system),
        "gen_ai.input.messages": json.dumps(inputs),
        "gen_ai.output.messages": json.dumps(outputs),
    }


def json_line(message) -> bytes:
    """The request as the collector's file exporter writes it: OTLP/JSON, ids in hex."""
    from google.protobuf.json_format import MessageToDict

    data = MessageToDict(message, use_integers_for_enums=True)
    for resource_spans in data["resourceSpans"]:
        for scope in resource_spans["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(data, separators=(",", ":")).encode() + b"\n"


def generate(folder: Path, json_bytes: int, protobuf_bytes: int) -> tuple[Path, Path, int, int]:
    """A JSON lines file of about `json_bytes` and a folder of protobuf requests of about
    `protobuf_bytes`; the spans in each."""
    rng = random.Random(7)
    start_ns = 1_795_478_500_000_000_000  # 2026-11-24
    json_file, pb_folder = folder / "traces.json", folder / "pb"
    pb_folder.mkdir()
    json_spans = pb_spans = written = pb_written = 0
    with json_file.open("wb") as out:
        while written < json_bytes:
            message = request(rng, start_ns)
            start_ns += _TRACES_PER_REQUEST * 10_000_000
            line = json_line(message)
            out.write(line)
            written += len(line)
            json_spans += _TRACES_PER_REQUEST * 5
            if pb_written < protobuf_bytes:
                data = message.SerializeToString()
                (pb_folder / f"{pb_spans:09d}.pb").write_bytes(data)
                pb_written += len(data)
                pb_spans += _TRACES_PER_REQUEST * 5
    return json_file, pb_folder, json_spans, pb_spans


_READ = """
import sys, time, resource
from pathlib import Path
from training_pipeline.traces.routes import TraceRouting
from training_pipeline.traces.source import split_traces
from training_pipeline.trajectories.files import export_files
started, cpu = time.perf_counter(), time.process_time()
_, traces = split_traces(export_files(Path(sys.argv[1])), TraceRouting())
count = sum(1 for _ in traces.records())
wall, cpu = time.perf_counter() - started, time.process_time() - cpu
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(wall, cpu, peak, traces.report.as_dict()["spansIn"], count)
"""


def read_rate(path: Path) -> tuple[float, float, float, int]:
    """Wall and CPU seconds, peak RSS (MB) and spans of reading `path` into trajectories."""
    out = subprocess.run(
        [sys.executable, "-c", _READ, str(path)], check=True, capture_output=True, text=True, cwd=ROOT
    )
    wall, cpu, rss, spans, _ = out.stdout.split()
    return float(wall), float(cpu), float(rss), int(spans)


def build(path: Path, out: Path) -> tuple[float, float, float]:
    """Wall and CPU seconds (all processes) and peak RSS of the process tree (MB) of `build-datasets`."""
    return timed([sys.executable, "-m", "training_pipeline", "build-datasets", str(path), str(out)], ROOT)


def rate(values: list[float]) -> str:
    """Spans per second: the median, then (min–max)."""
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}–{max(values):,.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gigabytes", type=float, default=1.0, help="size of the OTLP/JSON file built")
    parser.add_argument("--protobuf-megabytes", type=float, default=200.0)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the reading measurements")
    parser.add_argument("--write", action="store_true", help="put the table into bench/README.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tp-traces-") as work:
        folder = Path(work)
        json_file, pb_folder, json_spans, _ = generate(
            folder, int(args.gigabytes * 2**30), int(args.protobuf_megabytes * 2**20)
        )
        json_mb = json_file.stat().st_size / 2**20
        pb_mb = sum(p.stat().st_size for p in pb_folder.iterdir()) / 2**20
        print(
            f"generated {json_mb:.0f} MB of OTLP/JSON ({json_spans} spans), {pb_mb:.0f} MB of protobuf",
            flush=True,
        )
        sample = folder / "sample"
        sample.mkdir()
        with json_file.open("rb") as source, (sample / "traces.json").open("wb") as out:
            for _, line in zip(range(len(list(pb_folder.iterdir()))), source, strict=False):
                out.write(line)  # the protobuf's requests, as JSON lines: the same spans
        reads = {"OTLP/JSON lines": [read_rate(sample) for _ in range(args.rounds)]}
        reads["OTLP protobuf"] = [read_rate(pb_folder) for _ in range(args.rounds)]
        built = build(json_file, folder / "out")
    rows = [
        f"| {name} | {runs[0][3]:,} | {rate([r[3] / r[0] for r in runs])} | "
        f"{rate([r[3] / r[1] for r in runs])} | {max(r[2] for r in runs):.0f} |"
        for name, runs in reads.items()
    ]
    table = "\n".join(
        [
            f"{machine()}; {args.rounds} rounds; spans per second of wall and of CPU, median (min–max)",
            "",
            "| read into trajectories | spans | per wall second | per CPU second | peak RSS MB |",
            "|---|---:|---:|---:|---:|",
            *rows,
            "",
            f"`build-datasets` (strict, all cores) on {json_mb:,.0f} MB of OTLP/JSON, {json_spans:,} spans: "
            f"{built[0]:.0f} s wall, {built[1]:.0f} s CPU, peak RSS of all processes {built[2]:.0f} MB.",
        ]
    )
    print(table)
    if args.write:
        write_section("traces", table)


if __name__ == "__main__":
    main()
