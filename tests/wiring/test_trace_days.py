"""A day of traces through the Dagster daily layers: trace files in the trajectory folder are read by
content beside elizaOS exports, stored and filtered as trajectories, their conversations redacted."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path

import pyarrow.parquet as pq
from dagster import AssetKey, materialize

from assets.datasets.definitions import daily_graph
from resources.privacy import PrivacySettings
from resources.sources import FileTrajectorySource
from resources.storage import DataStore
from tests.helpers import layer_resources
from tests.otlp_store import collector_json_line, moved_to_day
from training_pipeline.datasets.formats import parquet_rows
from training_pipeline.datasets.trace_datasets import inspect_trace_datasets
from training_pipeline.settings import load_settings
from training_pipeline.trajectories.earliest import earliest_day_in_files

DAY = date(2026, 11, 24)


def test_a_day_of_traces_is_stored_and_filtered_by_the_daily_layers(
    traced_runs: dict, tmp_path: Path
) -> None:
    made = traced_runs["openinference"][0]
    folder = tmp_path / "traces"
    folder.mkdir()
    start = int(datetime(DAY.year, DAY.month, DAY.day, tzinfo=UTC).timestamp()) * 10**9
    for request in sorted(made.glob("*.pb")):
        (folder / request.name).write_bytes(moved_to_day(request.read_bytes(), start))
    store = DataStore(root=str(tmp_path / "data"))
    # the deployment also wants every dataset as Parquet (TRAINING_PIPELINE_DATASET_FORMAT)
    result = materialize(
        daily_graph(load_settings({"TRAINING_PIPELINE_DATASET_FORMAT": "parquet"})),
        selection=[
            AssetKey("trajectories"),
            AssetKey("filtered_trajectories"),
            AssetKey("response"),
            AssetKey("trace_datasets"),
        ],
        partition_key=DAY.isoformat(),
        resources=layer_resources(
            FileTrajectorySource(path=str(folder), trace_routes="weather-agent=weather"),
            PrivacySettings(env_secrets="NONE"),
            store,
        ),
    )
    assert result.success
    rows = pq.read_table(store.filtered(DAY.isoformat())).to_pylist()
    trajectories = {row["trajectory_id"]: json.loads(row["raw"]) for row in rows}
    assert set(trajectories) >= {"conversation-weather-1"}
    assert len(trajectories) == 2
    weather = trajectories["conversation-weather-1"]
    calls = [call for step in weather["steps"] for call in step.get("llmCalls") or ()]
    assert [call["metadata"]["dataset"] for call in calls] == ["weather", "weather"]
    assert [step["kind"] for step in weather["steps"]] == ["agent", "llm", "tool", "llm"]
    kept = pq.read_table(store.trajectories(DAY.isoformat())).column("raw").to_pylist()
    stored = json.dumps(trajectories) + "".join(kept)
    assert "jane.doe@example.com" not in stored and "tok-live-0f9e8d7c6b5a" not in stored
    assert "<PII:EMAIL_ADDRESS:1>" in stored
    # the day's trace datasets, routed, with their blocking checks passed
    datasets = store.trace_datasets(DAY.isoformat())
    assert sorted(p.name for p in datasets.glob("*.jsonl")) == ["chat.jsonl", "weather.jsonl"]
    assert len((datasets / "weather.jsonl").read_text().splitlines()) == 2
    assert len(list(parquet_rows(datasets / "parquet" / "weather.parquet"))) == 2
    assert (store.datasets(DAY.isoformat()) / "parquet" / "response.parquet").is_file()
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert {name: checks[name] for name in ("no_credentials", "no_personal_data", "valid_jsonl")} == {
        "no_credentials": True,
        "no_personal_data": True,
        "valid_jsonl": True,
    }


def test_a_secret_left_in_a_trace_dataset_fails_its_blocking_check(tmp_path: Path) -> None:
    """The check re-scans what the datasets hold: a dataset written around the filter is caught."""
    folder = tmp_path / "day"
    folder.mkdir()
    line = {
        "messages": [
            {"role": "user", "content": "use AKIAZ3MHLKT4XBQ7WN2P and mail jane.doe@example.com"},
            {"role": "assistant", "content": "ok"},
        ]
    }
    (folder / "chat.jsonl").write_text(json.dumps(line) + "\n" + json.dumps({"messages": []}) + "\n")
    inspection = inspect_trace_datasets(folder, PrivacySettings(env_secrets="NONE").scanner())
    assert inspection.credentials and inspection.personal == {"EMAIL_ADDRESS": 1}
    assert inspection.locations == ["chat.jsonl line 1"]
    assert inspection.problems == ["chat.jsonl line 2: messages must be a list of at least two"]


def test_the_first_daily_partition_is_the_earliest_span_of_otlp_json(
    traced_runs: dict, tmp_path: Path
) -> None:
    made = traced_runs["genai"][0]
    start = int(datetime(DAY.year, DAY.month, DAY.day, tzinfo=UTC).timestamp()) * 10**9
    lines = [collector_json_line(moved_to_day(r.read_bytes(), start)) for r in sorted(made.glob("*.pb"))]
    folder = tmp_path / "traces"
    folder.mkdir()
    (folder / "traces.json").write_text("\n".join(lines) + "\n")
    assert earliest_day_in_files(folder) == DAY
