"""The embedded local model's speed: calls per second for each thread count, idle and beside busy cores.

    python bench/local_model.py [--calls N] [--threads 1,2] [--hog K] [--write]

Starts the local model's server (`make local-llm`) once per thread count and sends it `N` calls one at
a time, as the native optimiser does: a should_respond prompt of the bundled sample (its conversation,
about 300 tokens) answered at temperature 0 with at most 64 tokens. Reports calls per second, tokens
generated per second and the median call, for each thread count, with `K` busy processes beside it
(`--hog`: the pipeline's own work on the same cores). `--write` puts the table in bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime

import httpx
from readme import write_section

from training_pipeline import SAMPLE_TRAJECTORIES
from training_pipeline.llm.local import LocalModelServer


def prompts(count: int) -> list[list[dict[str, str]]]:
    """The first `count` should_respond calls of the bundled sample, as chat messages."""
    found: list[list[dict[str, str]]] = []
    for file in sorted(SAMPLE_TRAJECTORIES.glob("*.jsonl")):
        for line in file.read_text(encoding="utf-8").splitlines():
            for step in json.loads(line).get("steps", []):
                for call in step.get("llmCalls", []):
                    # a conversation that fits the server's 2,048-token context with room for the answer
                    if "Should Eliza" in call["userPrompt"] and len(call["userPrompt"]) < 3000:
                        found.append(
                            [
                                {"role": "system", "content": call["systemPrompt"]},
                                {"role": "user", "content": call["userPrompt"]},
                            ]
                        )
                        if len(found) == count:
                            return found
    return found


def measure(threads: int, messages: list[list[dict[str, str]]]) -> dict[str, float]:
    with LocalModelServer(threads=threads) as server:
        client = httpx.Client(base_url=server.base_url, timeout=300)
        seconds, tokens = [], 0
        started = time.perf_counter()
        for chat in messages:
            began = time.perf_counter()
            reply = client.post(
                "/chat/completions",
                json={"model": server.model_name, "messages": chat, "temperature": 0, "max_tokens": 64},
            )
            if reply.is_error:
                raise SystemExit(f"the local model refused a call ({reply.status_code}): {reply.text[:300]}")
            seconds.append(time.perf_counter() - began)
            tokens += reply.json()["usage"]["completion_tokens"]
        total = time.perf_counter() - started
        client.close()
    return {
        "calls_per_second": len(messages) / total,
        "tokens_per_second": tokens / total,
        "median": statistics.median(seconds),
        "slowest": max(seconds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=12)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--hog", type=int, default=0, help="busy processes beside the server")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    chats = prompts(args.calls)
    rows = []
    for hog in sorted({0, args.hog}):
        hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(hog)]
        try:
            for threads in (int(t) for t in args.threads.split(",")):
                result = measure(threads, chats)
                rows.append((hog, threads, result))
                print(hog, threads, {k: round(v, 2) for k, v in result.items()}, flush=True)
        finally:
            for process in hogs:
                process.kill()
    machine = f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}"
    lines = [
        f"`python bench/local_model.py --calls {args.calls} --hog {args.hog} --write` on {machine}, "
        f"{datetime.now(UTC):%Y-%m-%d}: {len(chats)} should_respond calls of the sample, one at a time, "
        "temperature 0, at most 64 tokens each.",
        "",
        "| busy beside it | threads | calls/s | tokens/s | median call | slowest call |",
        "|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {hog} | {threads} | {r['calls_per_second']:.2f} | {r['tokens_per_second']:.1f} | "
            f"{r['median']:.2f} s | {r['slowest']:.2f} s |"
            for hog, threads, r in rows
        ),
    ]
    table = "\n".join(lines)
    print(table)
    if args.write:
        write_section("local_model", table)


if __name__ == "__main__":
    main()
