"""The datasets in the format a consumer takes, beside the JSONL files the pipeline writes:

- `elizaos`: the files as they are (elizaOS's five task files in its format, the trace datasets in
  OpenAI's chat format). Nothing more is written.
- `openai-chat`: every dataset as OpenAI chat fine-tuning JSONL under `openai-chat/`: elizaOS's
  `model` role becomes `assistant`; the trace datasets are that format already.
- `parquet`: every dataset as a Parquet file under `parquet/`, the same rows as `openai-chat` (messages
  with their tool calls as nested columns, the tools offered as JSON text, since their parameter
  schemas have no fixed shape), with a dataset card (`README.md`) whose configurations name the files:
  `datasets.load_dataset("parquet", data_files=…)` and pyarrow read them as they are.

Each file is written atomically, and the rows are read back and checked (`chat_line_problem`)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import orjson

from training_pipeline.atomic import atomic_open, atomic_write_text
from training_pipeline.datasets.trace_datasets import chat_line_problem
from training_pipeline.datasets.training_tasks import TASK_FILE_NAMES

__all__ = ["FORMATS", "DatasetFormat", "parquet_rows", "write_format"]

DatasetFormat = Literal["elizaos", "openai-chat", "parquet"]
FORMATS: tuple[DatasetFormat, ...] = ("elizaos", "openai-chat", "parquet")
_ELIZAOS_FILES = {name: task for task, name in TASK_FILE_NAMES.items()}
_BATCH = 4096


def datasets_in(out_dir: Path) -> dict[str, Path]:
    """Every dataset file the build wrote in `out_dir`, by dataset name (elizaOS's task, or a trace
    route)."""
    found: dict[str, Path] = {}
    for path in sorted(out_dir.glob("*.jsonl")):
        if path.name in _ELIZAOS_FILES:
            found[_ELIZAOS_FILES[path.name]] = path
        elif not path.name.endswith(".ids.jsonl") and path.name != "quarantine.jsonl":
            found[path.stem] = path
    return found


def chat_rows(path: Path) -> Iterator[dict[str, Any]]:
    """The lines of a dataset file as OpenAI chat examples (elizaOS's `model` as `assistant`)."""
    with path.open("rb") as handle:
        for line in handle:
            record = orjson.loads(line)
            for message in record.get("messages") or ():
                if message.get("role") == "model":
                    message["role"] = "assistant"
            yield record


def write_format(out_dir: Path, dataset_format: DatasetFormat) -> list[Path]:
    """The datasets of `out_dir` written in `dataset_format` (see the module); the files written. Another
    format's folder, from an earlier build, is removed: the folder holds the format asked for."""
    for other in FORMATS:
        if other != dataset_format and (out_dir / other).is_dir():
            shutil.rmtree(out_dir / other)
    if dataset_format == "elizaos":
        return []
    datasets = datasets_in(out_dir)
    folder = out_dir / dataset_format
    folder.mkdir(exist_ok=True)
    written = []
    for name, path in datasets.items():
        if dataset_format == "openai-chat":
            target = folder / f"{name}.jsonl"
            with atomic_open(target, "wb") as out:
                for row in chat_rows(path):
                    problem = chat_line_problem(row)
                    if problem is not None:
                        raise ValueError(f"{path.name}: a line is no chat example: {problem}")
                    out.write(orjson.dumps(row) + b"\n")
        else:
            target = folder / f"{name}.parquet"
            _write_parquet(chat_rows(path), target)
            for row in parquet_rows(target):  # read back: what a consumer reads must be a chat example
                problem = chat_line_problem(row)
                if problem is not None:
                    raise ValueError(f"{target.name}: a row is no chat example: {problem}")
        written.append(target)
    if dataset_format == "parquet":
        card = folder / "README.md"
        atomic_write_text(card, _card(sorted(datasets)))
        written.append(card)
    return written


def _schema():  # -> pa.Schema
    import pyarrow as pa

    call = pa.struct(
        [
            ("id", pa.string()),
            ("type", pa.string()),
            ("function", pa.struct([("name", pa.string()), ("arguments", pa.string())])),
        ]
    )
    message = pa.struct(
        [
            ("role", pa.string()),
            ("content", pa.string()),
            ("tool_calls", pa.list_(call)),
            ("tool_call_id", pa.string()),
            ("name", pa.string()),
        ]
    )
    return pa.schema([("messages", pa.list_(message)), ("tools", pa.string())])


def _write_parquet(rows: Iterator[dict[str, Any]], target: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _schema()
    with atomic_open(target, "wb") as out, pq.ParquetWriter(out, schema, compression="zstd") as writer:
        batch: list[dict[str, Any]] = []
        for row in rows:
            tools = row.get("tools")
            batch.append({"messages": row["messages"], "tools": json.dumps(tools) if tools else None})
            if len(batch) == _BATCH:
                writer.write_table(pa.Table.from_pylist(batch, schema))
                batch = []
        if batch:
            writer.write_table(pa.Table.from_pylist(batch, schema))


def parquet_rows(path: Path) -> Iterator[dict[str, Any]]:
    """A Parquet dataset's rows as chat examples again (absent fields dropped, tools parsed)."""
    from training_pipeline.trajectories.parquet import iter_row_groups

    for group in iter_row_groups(path):
        for row in group.to_pylist():
            example: dict[str, Any] = {
                "messages": [
                    {
                        key: ([_without_nulls(c) for c in value] if key == "tool_calls" else value)
                        for key, value in message.items()
                        if value is not None or key == "content"
                    }
                    for message in row["messages"]
                ]
            }
            if row["tools"] is not None:
                example["tools"] = json.loads(row["tools"])
            yield example


def _without_nulls(call: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in call.items() if value is not None}


def _card(names: list[str]) -> str:
    configs = "".join(f"- config_name: {name}\n  data_files: {name}.parquet\n" for name in names)
    listed = "".join(f"- `{name}`\n" for name in names)
    return (
        f"---\nconfigs:\n{configs}---\n\n# Training datasets\n\n"
        "Written by training-pipeline: privacy-filtered examples in OpenAI's chat format, one row per "
        "example. `messages` holds the conversation (`system`, `user`, `assistant` with `tool_calls`, "
        "`tool` with `tool_call_id`), the assistant's answer last; `tools` the tools offered, as JSON "
        "text (null when none). Credentials and personal data are typed placeholders "
        "(`<REDACTED:…>`, `<PII:EMAIL_ADDRESS:1>`).\n\n"
        f"{listed}\n"
        "```python\nfrom datasets import load_dataset\n"
        'load_dataset("parquet", data_files="response.parquet")\n```\n'
    )
