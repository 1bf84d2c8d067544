"""The loop that proves itself, through Dagster: a native run's candidate is judged by the gate,
promoted only on a real held-out gain, evaluated by task runs launched by a sensor, and the evaluation's
conversations come back as trajectories."""

from __future__ import annotations

import json
import re
from pathlib import Path

from dagster import AssetKey, Definitions, build_sensor_context, materialize

from resources.backends import (
    AtroposBackend,
    NativeBackend,
    OpenAIBackend,
    TinkerBackend,
    TrainingBackends,
    VertexBackend,
)
from resources.defaults import default_resources
from resources.llm import LLMResource
from resources.training import TrainingSettings
from tests.fake_chat import FakeChatServer
from tests.helpers import PROMPT_EVALUATION, TRAINING, TRAINING_JOB, asset_metadata, evaluations
from training_pipeline.settings import load_settings
from training_pipeline.training.run_records import RunStore

TASK = "should_respond"
_LAST = re.compile(r"\n([^\n]*)\n\nShould Eliza respond")
_DECISION = re.compile(r"<action>(\w+)</action>")


def _signature(question: str) -> tuple[bool, bool]:
    """What a reader notices in a should_respond question: is the last message for Eliza, and does it
    ask her to stop."""
    found = _LAST.search(question)
    last = (found[1] if found else question).lower()
    return "eliza" in last, "stop" in last or "quiet" in last


def _reader(learns: bool):
    """A chat model whose answer depends only on what it is shown, never on which prompt it is: given
    demonstrations (earlier user and assistant turns) it decides as a demonstration whose question has
    the same signature did (when `learns`); otherwise it answers IGNORE. It answers in the form it is
    asked for (a `json_schema` response format), as a decoding-constrained model does."""

    def reply(body):
        messages = body["messages"]
        question = messages[-1]["content"]
        decision = "IGNORE"
        if learns:
            for asked, answered in zip(messages[1:-1:2], messages[2:-1:2], strict=True):
                if _signature(asked["content"]) == _signature(question):
                    decision = _DECISION.search(answered["content"])[1]
                    break
        if body.get("response_format", {}).get("type") == "json_schema":
            return {"content": json.dumps({"reasoning": "read the last message", "answer": decision})}
        return {"content": f"<response><action>{decision}</action></response>"}

    return reply


def _resources(
    data: Path, llm: LLMResource, training: TrainingSettings, seeds: tuple[int, ...] = (0, 1, 2)
) -> dict:
    resources = default_resources(load_settings({"TRAINING_PIPELINE_DATA": str(data)}))
    resources["training_pipeline_llm"] = llm
    resources["training_pipeline_policy"] = training
    resources["training_pipeline_backends"] = TrainingBackends(
        # the protocol's minimum validation (50), and test examples enough for the gate's interval
        native=NativeBackend(llm=llm, k=4, demo_sets=2, seeds=list(seeds), max_validation=50, max_test=60),
        atropos=AtroposBackend(data_dir=str(data / "atropos")),
        tinker=TinkerBackend(),
        openai=OpenAIBackend(),
        vertex=VertexBackend(),
    )
    return resources


def _train(
    days_ready,
    tmp_path: Path,
    candidate_is_better: bool,
    training: TrainingSettings,
    seeds: tuple[int, ...] = (0, 1, 2),
):
    instance, data = days_ready
    with FakeChatServer(_reader(learns=candidate_is_better)) as server:
        llm = LLMResource(base_url=server.base_url, model="m", cache_dir=str(tmp_path / "cache"))
        defs = Definitions(
            assets=TRAINING.assets,
            asset_checks=[TRAINING.promotion_gate],
            jobs=[TRAINING_JOB],
            resources=_resources(data, llm, training, seeds),
        )
        result = defs.resolve_job_def("training_job").execute_in_process(
            partition_key=TASK,
            instance=instance,
            run_config={"ops": {"training_run": {"config": {"backend": "native"}}}},
            raise_on_error=False,
        )
    record = RunStore(data).list(limit=1)[0]
    return result, record


def _check(result) -> tuple[bool, str]:
    """The promotion gate's evaluation in the run (the training run's `not_skipped` is there too)."""
    [evaluation] = [
        e.event_specific_data
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
        and e.event_specific_data.check_name == "promotion_gate"
    ]
    return evaluation.passed, evaluation.severity.value


def test_a_real_gain_is_promoted_published_and_evaluated_by_task_runs(days_ready, tmp_path: Path) -> None:
    """The whole loop with a model that learns from demonstrations and cannot tell one prompt from
    another: the nearest demonstrations' candidate gains on every seed's test split, beats always
    answering RESPOND, is published with its demonstrations, and the bundled should_respond evaluation
    scores it above the agent's own prompt."""
    instance, data = days_ready
    result, record = _train(days_ready, tmp_path, candidate_is_better=True, training=TrainingSettings())
    assert result.success, record.reason
    meta = asset_metadata(result, "optimized_prompt")
    assert meta["promoted"] is True and meta["scorer"] == "respond_decision"
    assert meta["gain_low"] > 0 and meta["held_out_examples"] >= 50 and meta["validation_examples"] >= 50
    assert meta["seeds"] == 3 and meta["seeds_gain_low"] > 0
    assert meta["score"] > meta["best_constant_score"] and meta["best_constant_gain_low"] > 0
    assert "**promoted**" in meta["gate"]
    assert _check(result) == (True, "WARN")  # passed
    published = json.loads((data / "prompts" / f"{TASK}.json").read_text())
    assert published["run_id"] == record.run_id and published["demo_style"] == "turns"
    # the training split is the pool; each question is given the 3 nearest of it
    assert published["neighbours"] == 3 and len(published["demonstrations"]) == meta["train_examples"]
    assert published["answer_form"]["choices"] == [
        "IGNORE",
        "RESPOND",
        "STOP",
    ]
    stored = RunStore(data).load(record.run_id)
    assert stored.promotion["promoted"] and stored.promotion["published"].endswith(f"{TASK}.json")

    # the sensor sees the promotion and asks for an evaluation, once
    sensor = evaluations(30)
    tick = sensor(build_sensor_context(instance=instance))
    [request] = tick.run_requests
    assert request.partition_key == TASK and request.run_key == f"evaluate:{record.run_id}"
    assert not sensor(build_sensor_context(instance=instance, cursor=tick.cursor)).run_requests

    # the evaluation: the bundled should_respond task file, as written and with the promoted
    # demonstrations where the task's prompt lives, by the same model
    with FakeChatServer(_reader(learns=True)) as server:
        llm = LLMResource(base_url=server.base_url, model="m", cache_dir=str(tmp_path / "eval-cache"))
        evaluated = materialize(
            [PROMPT_EVALUATION],
            partition_key=TASK,
            instance=instance,
            resources=_resources(data, llm, TrainingSettings()),
        )
    assert evaluated.success
    meta = asset_metadata(evaluated, "prompt_evaluation")
    assert meta["promoted_score"] == 1.0 and meta["baseline_score"] == 6 / 16  # its IGNORE scenarios
    assert meta["training_run"] == record.run_id
    runs = meta["task_runs"]
    assert {(r["task_file"], r["variant"]) for r in runs} == {
        ("should_respond", "promoted"),
        ("should_respond", "baseline"),
    }
    for run in runs:
        dagster_run = instance.get_run_by_id(run["run_id"])
        assert dagster_run.job_name == "task_should_respond"
        assert dagster_run.tags["training_pipeline/evaluates"] == TASK
    # both variants kept the agent's prompt and were decoded in the same form; only the promoted one
    # was shown the demonstrations
    answered = [r for r in server.requests if r["messages"][-1]["content"].endswith("?")]
    assert {r["messages"][0]["content"] for r in answered} == {published["baseline_prompt"]}
    assert all(r["response_format"]["type"] == "json_schema" for r in answered)
    assert sorted(len(r["messages"]) for r in answered) == [2] * 16 + [8] * 16
    # the conversations came back as trajectories for the next day's datasets
    assert len(list((data / "agent_trajectories").rglob("*.jsonl"))) >= 2
    assert RunStore(data).load(record.run_id).details["evaluation"]["promoted_score"] == 1.0


def test_a_candidate_no_better_than_the_baseline_is_rejected_and_not_published(
    days_ready, tmp_path: Path
) -> None:
    instance, data = days_ready
    before = (data / "prompts" / f"{TASK}.json").read_bytes() if (data / "prompts").exists() else None
    result, record = _train(
        days_ready, tmp_path, candidate_is_better=False, training=TrainingSettings(), seeds=(0,)
    )
    assert result.success, record.reason  # a rejection is an outcome, not a failed run
    meta = asset_metadata(result, "optimized_prompt")
    assert meta["promoted"] is False and meta["gain_low"] <= 0
    assert _check(result) == (False, "WARN")
    after = (data / "prompts" / f"{TASK}.json").read_bytes() if (data / "prompts").exists() else None
    assert after == before  # nothing published
    assert RunStore(data).load(record.run_id).promotion["published"] is None
    # and the sensor asks for nothing
    materializations = instance.fetch_materializations(AssetKey("optimized_prompt"), limit=100).records
    cursor = str(materializations[0].storage_id - 1)
    assert not evaluations(30)(build_sensor_context(instance=instance, cursor=cursor)).run_requests
