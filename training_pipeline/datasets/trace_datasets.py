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
from typing import IO, Any

import orjson

from training_pipeline.atomic import StagedFiles
from training_pipeline.trajectories.models import iter_llm_calls

__all__ = ["TRACE_SUMMARY_FILE_NAME", "TraceDatasetWriter", "trace_examples"]

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
        self._trajectories: dict[str, set[Any]] = {}
        self.trajectory_count = 0

    def add(self, trajectory_id: Any, examples: list[tuple[str, bytes]]) -> None:
        self.trajectory_count += 1
        for dataset, line in examples:
            handle = self._files.get(dataset)
            if handle is None:
                handle = self._files[dataset] = self._staged.open(f"{dataset}.jsonl", "wb", _BUFFER)
                self.counts[dataset] = 0
                self._trajectories[dataset] = set()
            handle.write(line)
            self.counts[dataset] += 1
            self._trajectories[dataset].add(trajectory_id)

    def close(self, spans: dict[str, int]) -> dict[str, Any]:
        summary = {
            "format": "openai-chat",
            "trajectoryCount": self.trajectory_count,
            "datasets": {
                name: {"examples": self.counts[name], "trajectories": len(self._trajectories[name])}
                for name in sorted(self.counts)
            },
            "spans": spans,
        }
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
