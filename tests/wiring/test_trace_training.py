"""Training on trace datasets: a real agent's traced conversations (tool calls and results included) go
from the daily layers to `training_run` partitioned by the dataset's name, and each weights backend
receives them in its own form; the native backend declines them with the reason, and the threshold
sensor counts them as it counts elizaOS's tasks."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from dagster import (
    DagsterInstance,
    RunRequest,
    build_sensor_context,
    materialize,
)

from assets.datasets.definitions import daily_graph
from assets.keys import UNPREFIXED
from assets.partitions import training_partitions
from assets.training.automation import threshold_sensor
from resources.backends import (
    NativeBackend,
    OpenAIBackend,
    TinkerBackend,
    VertexBackend,
)
from resources.llm import LLMResource
from resources.privacy import PrivacySettings
from resources.sources import FileTrajectorySource
from resources.storage import DataStore
from resources.training import TrainingSettings
from tests.fake_openai import FakeOpenAI
from tests.helpers import TRAINING_JOB, layer_resources, run_training_job
from tests.otlp_store import copied, moved_to_day
from training_pipeline.settings import load_settings

DAYS = [date(2026, 11, 23), date(2026, 11, 24), date(2026, 11, 25)]
#: copies of the traced agent's run a day: each has a weather conversation (two calls offered the tool:
#: `tool_use`) and a translation (one call: `chat`)
COPIES = 6


@pytest.fixture(scope="module")
def trace_days(traced_runs: dict, tmp_path_factory: pytest.TempPathFactory) -> tuple[DagsterInstance, Path]:
    """Three days of the traced agent's runs (`COPIES` a day) through the daily layers and
    `trace_datasets`, on one instance."""
    made = traced_runs["openinference"][0]
    base = tmp_path_factory.mktemp("trace-training")
    folder, data = base / "traces", base / "data"
    folder.mkdir()
    for day in DAYS:
        start = int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()) * 10**9
        for copy in range(COPIES):
            index = day.toordinal() % 1000 * COPIES + copy
            for request in sorted(made.glob("*.pb")):
                moved = moved_to_day(copied(request.read_bytes(), index), start + copy * 10**9)
                (folder / f"{day}-{copy}-{request.name}").write_bytes(moved)
    instance = DagsterInstance.ephemeral()
    store = DataStore(root=str(data))
    resources = layer_resources(
        FileTrajectorySource(path=str(folder)), PrivacySettings(env_secrets="NONE"), store
    )
    for day in DAYS:
        result = materialize(
            daily_graph(load_settings({})),
            selection=["trajectories", "filtered_trajectories", "trace_datasets"],
            partition_key=day.isoformat(),
            resources=resources,
            instance=instance,
        )
        assert result.success
    return instance, data


def _train(trace_days, dataset: str, backend_name: str | None = None, backend=None, **policy):
    """training_job for `dataset` with `backend` as `backend_name` (default: the policy's choice)."""
    instance, data = trace_days
    return run_training_job(instance, data, dataset, backend_name, backend, TrainingSettings(**policy))


def _window(record) -> list[dict]:
    return [json.loads(line) for line in Path(record.dataset_path).read_text().splitlines()]


def test_a_trace_dataset_trains_on_openai_with_its_tools_and_tool_calls(trace_days) -> None:
    with FakeOpenAI() as fake:
        backend = OpenAIBackend(api_key=fake.api_key, base_url=fake.base_url, poll_interval_seconds=0.01)
        result, record = _train(trace_days, "tool_use", "openai", backend)
    assert result.success, record.reason
    assert (record.task, record.status, record.backend) == ("tool_use", "succeeded", "openai")
    assert record.window == [day.isoformat() for day in DAYS]
    assert record.dataset_size == record.per_task_counts["tool_use"] == 2 * COPIES * len(DAYS)
    [uploaded] = fake.files.values()
    rows = [json.loads(line) for line in uploaded["content"].decode().splitlines()]
    assert rows == _window(record)  # OpenAI's chat format is the trace dataset's own: sent as it is
    answered = next(row for row in rows if row["messages"][-2]["role"] == "tool")
    assert [m["role"] for m in answered["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert answered["messages"][2]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert answered["tools"][0]["function"]["name"] == "get_weather"
    assert "jane.doe@example.com" not in uploaded["content"].decode()
    assert fake.jobs["ftjob-0001"]["suffix"] == "tool-use"


def test_vertex_gets_function_calls_and_responses_and_the_declarations(trace_days) -> None:
    from tests.fake_vertex import FakeVertex

    with FakeVertex() as fake:
        backend = VertexBackend(
            project_id="my-project-1",
            gcs_bucket="tuning-bucket",
            access_token=fake.token,
            api_endpoint=fake.endpoint,
            poll_interval_seconds=0.01,
        )
        result, record = _train(trace_days, "tool_use", "vertex", backend)
    assert result.success, record.reason
    [data] = fake.objects.values()
    examples = [json.loads(line) for line in data.decode().splitlines()]
    assert len(examples) == record.dataset_size
    # the answer after the tool's result: user, the model's call, the result, the model's answer
    answered = next(e for e in examples if len(e["contents"]) == 4)
    assert [c["role"] for c in answered["contents"]] == ["user", "model", "user", "model"]
    call = answered["contents"][1]["parts"][0]["functionCall"]
    assert call == {"name": "get_weather", "args": {"city": "Paris"}}
    response = answered["contents"][2]["parts"][0]["functionResponse"]
    assert response["name"] == "get_weather"
    assert answered["tools"][0]["functionDeclarations"][0]["name"] == "get_weather"
    assert answered["systemInstruction"]["parts"][0]["text"].startswith("You are a weather assistant")


def test_tinker_trains_the_tool_calls_in_llama_3_1_form(trace_days) -> None:
    from tests.fake_tinker import FakeTinker
    from training_pipeline.backends.chat_tokens import load_tokenizer

    with FakeTinker() as fake:
        backend = TinkerBackend(api_key=fake.api_key, base_url=fake.base_url, epochs=1, batch_size=8)
        result, record = _train(trace_days, "tool_use", "tinker", backend)
    assert result.success, record.reason
    assert len(fake.batches) == record.dataset_size  # too few to hold a test split out: trained whole,
    assert fake.samplers == {} and record.details["checkpoint"]  # so no sampler is asked to judge it,
    assert len(fake.sessions) == 1  # nor a session opened for judging: only the training one
    tokenizer = load_tokenizer(None)
    trained = {
        tokenizer.decode([t for t, w in zip(d["targets"], d["weights"], strict=True) if w])
        for d in fake.batches
    }
    # what is trained is the model's turns only: the tool call as Llama 3.1's JSON, then the answer
    call = '{"name": "get_weather", "parameters": {"city": "Paris"}}<|eot_id|>'
    assert trained == {call, f"{call}It is sunny in Paris, 24 °C.<|eot_id|>"}
    prompts = {tokenizer.decode(d["targets"]) for d in fake.batches}
    assert all("Environment: ipython" in p and '"name": "get_weather"' in p for p in prompts)
    assert any("<|start_header_id|>ipython<|end_header_id|>" in p for p in prompts)


def test_native_declines_a_trace_dataset_and_the_default_backend_trains_weights(trace_days) -> None:
    # the default policy (`backends: [native]`) has no backend that trains weights: a skip, said so
    result, record = _train(trace_days, "chat")
    assert result.success
    assert (record.status, record.backend, record.reason) == ("skipped", None, "no backend configured")

    # native, chosen by hand, declines with the reason
    _, record = _train(trace_days, "chat", "native", NativeBackend(llm=LLMResource(local_model=False)))
    assert (record.status, record.backend) == ("skipped", "native")
    assert "chat is a trace dataset of whole conversations" in record.reason

    # `backends: [native, atropos]`: a trace dataset takes the first that trains weights; elizaOS's
    # tasks keep the first of all
    _, record = _train(trace_days, "chat", backends=["native", "atropos"])
    assert (record.backend, record.dataset_size) == ("atropos", COPIES * len(DAYS))
    staged = [json.loads(line) for line in Path(record.artifact_path).read_text().splitlines()]
    assert staged == _window(record)
    assert [m["role"] for m in staged[0]["messages"]] == ["system", "user", "assistant"]


def test_the_threshold_sensor_fires_a_trace_dataset_past_its_threshold(trace_days) -> None:
    instance, _ = trace_days
    names = training_partitions().get_partition_keys()
    sensor = threshold_sensor(UNPREFIXED, TRAINING_JOB, 30, names)
    # no cooldown: the tests before this one trained tool_use on this instance
    settings = TrainingSettings(
        trigger_threshold=10_000,
        trigger_cooldown_hours=0,
        dataset_overrides={"tool_use": {"threshold": 2 * COPIES * len(DAYS)}},
    )
    with build_sensor_context(instance=instance, resources={"training_pipeline_policy": settings}) as context:
        result = sensor(context)
    requests = result.run_requests or []
    assert [r.partition_key for r in requests] == ["tool_use"]
    assert isinstance(requests[0], RunRequest)
    cursor = json.loads(result.cursor)["tasks"]
    assert cursor["tool_use"]["days"] == {day.isoformat(): 2 * COPIES for day in DAYS}
    assert cursor["chat"]["days"] == {day.isoformat(): COPIES for day in DAYS}
