"""Datasets from traces' LLM calls, in OpenAI's chat fine-tuning format: one line per call, the whole
conversation the model saw (`system`, `user`, `assistant` with `tool_calls`, `tool`) and what it answered
as the last `assistant` message, with the `tools` it was offered. OpenAI fine-tuning, TRL's
`SFTTrainer` and `datasets.load_dataset("json", …)` take these files as they are.

A call feeds the dataset its route named when the trace was read (`traces.assemble.TraceRouting`),
`chat` or `tool_use` by default; each dataset is `<name>.jsonl` beside elizaOS's files, with
`trace_datasets_summary.json` saying what each holds and what the spans became.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from training_pipeline.atomic import StagedFiles
from training_pipeline.datasets.validate import every_string
from training_pipeline.privacy.scan import PERSONAL_PREFIX, SecretScanner
from training_pipeline.trajectories.models import TRACE_SOURCE, is_trace, iter_llm_calls

__all__ = [
    "TRACE_SUMMARY_FILE_NAME",
    "TraceDatasetWriter",
    "TraceInspection",
    "build_trace_datasets",
    "chat_line_problem",
    "inspect_trace_datasets",
    "trace_examples",
]

TRACE_SUMMARY_FILE_NAME = "trace_datasets_summary.json"
_BUFFER = 1 << 20


def trace_examples(trajectory: dict[str, Any]) -> list[tuple[str, bytes]]:
    """(dataset, JSONL line) for each LLM call of a filtered trace trajectory that has an answer."""
    examples = []
    for call in iter_llm_calls(trajectory):
        messages, output = call.get("messages"), call.get("output")
        if not isinstance(messages, list) or not isinstance(output, list) or not output:
            continue
        example: dict[str, Any] = {"messages": [*messages, *output]}
        if call.get("tools"):
            example["tools"] = call["tools"]
        dataset = (call.get("metadata") or {}).get("dataset") or "chat"
        examples.append((str(dataset), orjson.dumps(example) + b"\n"))
    return examples


class TraceDatasetWriter:
    """Writes each dataset's lines as they come (`add`); `close` publishes the files and the summary
    at once, or nothing when no trace was read."""

    def __init__(self, out_dir: Any) -> None:
        self._staged = StagedFiles(out_dir)
        self._files: dict[str, IO[bytes]] = {}
        self.counts: dict[str, int] = {}
        self._trajectories: dict[str, int] = {}
        self.trajectory_count = 0

    def add(self, trajectory_id: Any, examples: list[tuple[str, bytes]]) -> None:
        """One trajectory's examples (each trajectory is added once: a trace's is whole when read)."""
        self.trajectory_count += 1
        for dataset, line in examples:
            handle = self._files.get(dataset)
            if handle is None:
                handle = self._files[dataset] = self._staged.open(f"{dataset}.jsonl", "wb", _BUFFER)
                self.counts[dataset] = 0
                self._trajectories[dataset] = 0
            handle.write(line)
            self.counts[dataset] += 1
        for dataset in {dataset for dataset, _ in examples}:
            self._trajectories[dataset] += 1

    def close(self, spans: dict[str, int] | None = None) -> dict[str, Any]:
        summary: dict[str, Any] = {
            "format": "openai-chat",
            "trajectoryCount": self.trajectory_count,
            "datasets": {
                name: {"examples": self.counts[name], "trajectories": self._trajectories[name]}
                for name in sorted(self.counts)
            },
        }
        if spans is not None:
            summary["spans"] = spans
        try:
            for handle in self._files.values():
                handle.close()
            with self._staged.open(TRACE_SUMMARY_FILE_NAME) as handle:
                handle.write(json.dumps(summary, indent=2) + "\n")
            self._staged.publish()
        except BaseException:
            self.abort()
            raise
        return summary

    def abort(self) -> None:
        for handle in self._files.values():
            handle.close()
        self._staged.discard()


def build_trace_datasets(filtered: Path, out_dir: Path) -> dict[str, Any]:
    """A day's trace datasets from its privacy-filtered trajectories (the daily `filtered_trajectories`
    Parquet file, read a batch at a time) in `out_dir`, the day's own folder: the summary, with a
    dataset per route. A dataset an earlier build of the day had and this one has not is removed."""
    from training_pipeline.trajectories.parquet import iter_row_groups

    writer = TraceDatasetWriter(out_dir)
    try:
        for group in iter_row_groups(filtered, ["trajectory_id", "raw"]):
            for trajectory_id, raw in zip(*(column.to_pylist() for column in group.columns), strict=True):
                if f'"{TRACE_SOURCE}"' not in raw:  # `raw` is text (a string column): not encoded to look
                    continue  # an elizaOS trajectory: not parsed for nothing
                trajectory = orjson.loads(raw)
                if is_trace(trajectory):
                    writer.add(trajectory_id, trace_examples(trajectory))
    except BaseException:
        writer.abort()
        raise
    summary = writer.close()
    for stale in out_dir.glob("*.jsonl"):  # a route an earlier build had: gone with it
        if stale.stem not in summary["datasets"]:
            stale.unlink()
    return summary


_ROLES = frozenset(("system", "user", "assistant", "tool"))


def chat_line_problem(record: Any) -> str | None:
    """What is wrong with a line of an OpenAI-chat dataset (None: nothing): `messages` of known roles,
    string or null contents, well-formed tool calls and tool results, an assistant's answer last."""
    if not isinstance(record, dict) or "messages" not in record or not set(record) <= {"messages", "tools"}:
        return 'expected an object with "messages" (and "tools")'
    messages = record["messages"]
    if not isinstance(messages, list) or len(messages) < 2:
        return "messages must be a list of at least two"
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in _ROLES:
            return f"each message needs a role among {sorted(_ROLES)}"
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            return "a message's content is a string or null"
        for call in message.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict) or not isinstance(function.get("arguments"), str):
                return "a tool call needs a function with its arguments as a JSON string"
        if message["role"] == "tool" and not isinstance(message.get("tool_call_id"), str):
            return "a tool message needs the tool_call_id it answers"
    if messages[-1]["role"] != "assistant":
        return "the last message is the assistant's answer"
    if not isinstance(record.get("tools", []), list):
        return "tools must be a list"
    return None


@dataclass
class TraceInspection:
    """What the checks learn from a day's trace datasets."""

    lines: int = 0
    problems: list[str] = field(default_factory=list)
    texts: int = 0
    #: credential types and kinds of personal data found, never the values
    credentials: Counter[str] = field(default_factory=Counter)
    personal: Counter[str] = field(default_factory=Counter)
    #: where each finding was (`file line N`), never the value
    locations: list[str] = field(default_factory=list)


def inspect_trace_datasets(out_dir: Path, scanner: SecretScanner) -> TraceInspection:
    """Every line of the day's trace datasets validated and every string in it (messages, tool
    arguments and results, tool definitions) scanned again by the independent scanner."""
    inspection = TraceInspection()
    for path in sorted(out_dir.glob("*.jsonl")):
        with path.open("rb") as handle:
            for number, line in enumerate(handle, start=1):
                inspection.lines += 1
                try:
                    record = orjson.loads(line)
                except orjson.JSONDecodeError as err:
                    inspection.problems.append(f"{path.name} line {number}: not JSON ({err})")
                    continue
                problem = chat_line_problem(record)
                if problem is not None:
                    inspection.problems.append(f"{path.name} line {number}: {problem}")
                for text in (t for t in every_string(record) if len(t) > 3):
                    inspection.texts += 1
                    found = [kind for kind, _ in scanner.find(text)]
                    personal = [kind.removeprefix(PERSONAL_PREFIX) for kind in scanner.find_personal(text)]
                    inspection.credentials.update(found)
                    inspection.personal.update(personal)
                    if (found or personal) and len(inspection.locations) < 50:
                        inspection.locations.append(f"{path.name} line {number}")
    return inspection
