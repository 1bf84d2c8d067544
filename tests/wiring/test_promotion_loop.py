"""The loop that proves itself, through Dagster: a native run's candidate is judged by the gate,
promoted only on a real held-out gain, evaluated by task runs launched by a sensor, and the evaluation's
conversations come back as trajectories."""

from __future__ import annotations

import json
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
from tests.scripted_agent import email_agent
from training_pipeline.settings import load_settings
from training_pipeline.tasks import EXAMPLE_TASKS
from training_pipeline.training.run_records import RunStore

TASK = "response"
#: what the optimiser's rewrite says; the scripted answers and the scripted email agent key on it
CANDIDATE = "You are Eliza. Answer exactly as the user expects; use the tools carefully."


def _expected_answers(data: Path) -> dict[str, str]:
    """Each user message of the task's datasets and the answer the dataset expects."""
    answers = {}
    for path in data.glob(f"datasets/*/{TASK}_trajectories.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            roles = {m["role"]: m["content"] for m in json.loads(line)["messages"]}
            answers[roles["user"]] = roles["model"]
    return answers


def _optimiser(data: Path, candidate_is_better: bool):
    """A chat model for which the rewritten prompt answers exactly what the dataset expects (when
    `candidate_is_better`) and the baseline answers something unrelated."""
    expected = _expected_answers(data)

    def reply(body):
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        if system.startswith("Rewrite the system prompt"):
            return {"content": CANDIDATE}
        if system == CANDIDATE and candidate_is_better:
            return {"content": expected.get(user, "")}
        return {"content": "zzz qqq unrelated words"}

    return reply


def _resources(data: Path, llm: LLMResource, training: TrainingSettings) -> dict:
    resources = default_resources(load_settings({"TRAINING_PIPELINE_DATA": str(data)}))
    resources["training_pipeline_llm"] = llm
    resources["training_pipeline_policy"] = training
    resources["training_pipeline_backends"] = TrainingBackends(
        native=NativeBackend(llm=llm, rounds=1, variants=1, train_batch=3, seeds=[1]),
        atropos=AtroposBackend(data_dir=str(data / "atropos")),
        tinker=TinkerBackend(),
        openai=OpenAIBackend(),
        vertex=VertexBackend(),
    )
    return resources


def _train(days_ready, tmp_path: Path, candidate_is_better: bool, training: TrainingSettings):
    instance, data = days_ready
    with FakeChatServer(_optimiser(data, candidate_is_better)) as server:
        llm = LLMResource(base_url=server.base_url, model="m", cache_dir=str(tmp_path / "cache"))
        defs = Definitions(
            assets=TRAINING.assets,
            asset_checks=[TRAINING.promotion_gate],
            jobs=[TRAINING_JOB],
            resources=_resources(data, llm, training),
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
    instance, data = days_ready
    training = TrainingSettings(evaluation_tasks={TASK: str(EXAMPLE_TASKS / "reply-to-dana.json")})
    result, record = _train(days_ready, tmp_path, candidate_is_better=True, training=training)
    assert result.success, record.reason
    meta = asset_metadata(result, "optimized_prompt")
    assert meta["promoted"] is True and meta["scorer"] == "token_overlap"
    assert meta["gain_low"] > 0 and meta["gain"] > 0.5 and meta["held_out_examples"] >= 10
    assert "**promoted**" in meta["gate"]
    assert _check(result) == (True, "WARN")  # passed
    published = json.loads((data / "prompts" / f"{TASK}.json").read_text())
    assert published["prompt"] == CANDIDATE and published["run_id"] == record.run_id
    stored = RunStore(data).load(record.run_id)
    assert stored.promotion["promoted"] and stored.promotion["published"].endswith(f"{TASK}.json")

    # the sensor sees the promotion and asks for an evaluation, once
    sensor = evaluations(30)
    tick = sensor(build_sensor_context(instance=instance))
    [request] = tick.run_requests
    assert request.partition_key == TASK and request.run_key == f"evaluate:{record.run_id}"
    assert not sensor(build_sensor_context(instance=instance, cursor=tick.cursor)).run_requests

    # the evaluation: the bundled reply-to-dana task, once with each prompt, by a scripted agent that
    # only does the job when its system prompt is the promoted one
    def agent(body):
        if body["messages"][0]["content"] != CANDIDATE and not body.get("response_format"):
            return {"content": "I would rather not."}
        return email_agent(body)

    with FakeChatServer(agent) as server:
        llm = LLMResource(base_url=server.base_url, model="m", cache_dir=str(tmp_path / "eval-cache"))
        evaluated = materialize(
            [PROMPT_EVALUATION],
            partition_key=TASK,
            instance=instance,
            resources=_resources(data, llm, training),
        )
    assert evaluated.success
    meta = asset_metadata(evaluated, "prompt_evaluation")
    assert (meta["promoted_score"], meta["baseline_score"]) == (1.0, 0.0)
    assert meta["training_run"] == record.run_id
    runs = meta["task_runs"]
    assert {(r["task_file"], r["variant"]) for r in runs} == {
        ("reply-to-dana", "promoted"),
        ("reply-to-dana", "baseline"),
    }
    # both are real task-job runs on the same instance, tagged with what they evaluate
    for run in runs:
        dagster_run = instance.get_run_by_id(run["run_id"])
        assert dagster_run.job_name == "task_reply_to_dana"
        assert dagster_run.tags["training_pipeline/evaluates"] == TASK
    # the conversations came back as trajectories for the next day's datasets
    written = list((data / "agent_trajectories").rglob("*.jsonl"))
    systems = {
        json.loads(line)["steps"][0]["llmCalls"][0]["systemPrompt"]
        for f in written
        for line in f.read_text().splitlines()
    }
    assert CANDIDATE in systems
    assert RunStore(data).load(record.run_id).details["evaluation"]["promoted_score"] == 1.0


def test_a_candidate_no_better_than_the_baseline_is_rejected_and_not_published(
    days_ready, tmp_path: Path
) -> None:
    instance, data = days_ready
    before = (data / "prompts" / f"{TASK}.json").read_bytes() if (data / "prompts").exists() else None
    result, record = _train(days_ready, tmp_path, candidate_is_better=False, training=TrainingSettings())
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
