"""`--dataset-format`: every dataset (elizaOS's five and the traces') as OpenAI chat JSONL or as Parquet
with a dataset card, the same rows, read by Hugging Face `datasets` and by pyarrow as they are."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import cli
from training_pipeline import SAMPLE_TRAJECTORIES
from training_pipeline.datasets.build import build_datasets
from training_pipeline.datasets.formats import parquet_rows, write_format
from training_pipeline.datasets.training_tasks import TASKS
from training_pipeline.privacy.filter import PrivacyFilter


@pytest.fixture
def built(traced_runs: dict[str, tuple[Path, list[dict[str, Any]]]], tmp_path: Path) -> Path:
    """A folder of elizaOS exports and traces, built."""
    source = tmp_path / "in"
    shutil.copytree(traced_runs["openinference"][0], source / "traces")
    shutil.copy(sorted(SAMPLE_TRAJECTORIES.glob("*.jsonl"))[0], source / "day.jsonl")
    build_datasets(source, tmp_path / "out", PrivacyFilter("strict"))
    return tmp_path / "out"


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_openai_chat_holds_every_dataset_with_assistant_answers(built: Path) -> None:
    written = write_format(built, "openai-chat")
    assert sorted(p.name for p in written) == sorted(
        [f"{task}.jsonl" for task in TASKS] + ["chat.jsonl", "tool_use.jsonl"]
    )
    response = jsonl(built / "openai-chat" / "response.jsonl")
    assert response and all(line["messages"][-1]["role"] == "assistant" for line in response)
    assert [m["content"] for line in response for m in line["messages"]] == [
        m["content"] for line in jsonl(built / "response_trajectories.jsonl") for m in line["messages"]
    ]
    assert jsonl(built / "openai-chat" / "tool_use.jsonl") == jsonl(built / "tool_use.jsonl")


def test_parquet_rows_are_the_chat_rows_and_load_with_datasets(built: Path) -> None:
    write_format(built, "openai-chat")
    chat = {name: jsonl(built / "openai-chat" / f"{name}.jsonl") for name in [*TASKS, "chat", "tool_use"]}
    written = write_format(built, "parquet")
    folder = built / "parquet"
    assert folder / "README.md" in written
    assert not (built / "openai-chat").exists()  # the folder holds the format asked for
    for name, rows in chat.items():
        assert list(parquet_rows(folder / f"{name}.parquet")) == rows
    from datasets import load_dataset

    loaded = load_dataset("parquet", data_files=str(folder / "tool_use.parquet"), split="train")
    first = loaded[0]
    assert first["messages"][-1]["role"] == "assistant"
    assert json.loads(first["tools"])[0]["function"]["name"] == "get_weather"
    calls = [m["tool_calls"] for m in first["messages"] if m["tool_calls"]]
    assert calls and calls[0][0]["function"]["name"] == "get_weather"
    card = (folder / "README.md").read_text()
    assert "config_name: tool_use\n  data_files: tool_use.parquet" in card


def test_the_cli_writes_the_format_asked_for(
    traced_runs: dict[str, tuple[Path, list[dict[str, Any]]]], tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINING_PIPELINE_")}
    done = cli(
        env,
        "build-datasets",
        str(traced_runs["genai"][0]),
        str(tmp_path / "out"),
        "--dataset-format",
        "parquet",
    )
    assert done.returncode == 0, done.stderr
    line = json.loads(done.stdout.splitlines()[-1])
    assert "parquet/tool_use.parquet" in line["formatted"]["parquet"]
    wrong = cli(
        env, "build-datasets", str(traced_runs["genai"][0]), str(tmp_path / "o2"), "--dataset-format", "csv"
    )
    assert wrong.returncode == 2 and "invalid choice" in wrong.stderr and "Traceback" not in wrong.stderr
