"""Training orchestration: policy, task selection, backends, run records, on a real Dagster instance."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from dagster import AssetCheckSeverity, AssetKey, DagsterEventType, DagsterInstance, materialize

from assets.compat import PARTITIONED_CHECKS
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
from resources.storage import DataStore
from resources.training import TrainingSettings
from tests.fake_openai import FakeOpenAI
from tests.helpers import DATASET_ASSETS, TRAINING, asset_metadata, run_training_job
from tests.planted_secrets import write_stripe_leak_day
from training_pipeline.settings import load_settings
from training_pipeline.training.policy import TrainingPolicy, resolve_backend, select_task
from training_pipeline.training.run_records import RunStore

DAYS = ["2026-11-23", "2026-11-24", "2026-11-25"]


def test_policy_normalises_like_elizaos() -> None:
    policy = TrainingPolicy.model_validate(
        {
            "autoTrain": "yes",
            "triggerThreshold": 12.7,
            "triggerCooldownHours": -1,
            "backends": ["vertex", "bogus", "vertex", 3, "native"],
            "perTaskOverrides": {
                "response": {"threshold": 5, "backend": "atropos", "cooldownHours": 0},
                "unknown_task": {"threshold": 1},
                "action_planner": {"threshold": -3},
                "media_description": {"threshold": 0.5},
            },
        }
    )
    assert policy.auto_train is True  # not a boolean: default
    assert policy.trigger_threshold == 12  # floored
    assert policy.trigger_cooldown_hours == 12.0  # negative: default
    assert policy.backends == ["vertex", "native"]  # unknown dropped, duplicates removed
    assert set(policy.per_task_overrides) == {"response", "media_description"}  # empty overrides dropped
    response = policy.for_task("response")
    assert (response.threshold, response.cooldown_hours, response.backend) == (5, 0.0, "atropos")
    assert policy.for_task("media_description").threshold == 0  # elizaOS floors 0.5 to 0
    assert policy.for_task("should_respond").backend == "vertex"
    assert TrainingPolicy.model_validate("not a dict").backends == ["native"]
    assert TrainingPolicy.model_validate({"backends": []}).for_task("response").backend is None


def test_select_task_and_backend_resolution() -> None:
    policy = TrainingPolicy.model_validate(
        {"triggerThreshold": 10, "perTaskOverrides": {"response": {"threshold": 50}}}
    )
    assert (
        select_task(policy, None, {"response": 40, "should_respond": 20, "action_planner": 30})
        == "action_planner"
    )
    assert select_task(policy, None, {"response": 9}) is None
    assert select_task(policy, "media_description", {}) == "media_description"
    assert resolve_backend(policy, "response", "openai") == "openai"
    assert resolve_backend(policy, "response", None) == "native"


def _train(days_ready, task: str, run_config: dict | None = None, **backends):
    instance, data = days_ready
    resources = default_resources(load_settings({"TRAINING_PIPELINE_DATA": str(data)}))
    resources["training_pipeline_backends"] = TrainingBackends(
        native=backends.get("native", NativeBackend(llm=LLMResource(local_model=False))),
        atropos=backends.get("atropos", AtroposBackend(data_dir=str(data / "atropos"))),
        tinker=TinkerBackend(),
        openai=backends.get("openai", OpenAIBackend()),
        vertex=VertexBackend(),
    )
    for name in ("training", "store"):  # the policy or the store, when a test brings its own
        if name in backends:
            resources[{"training": "training_pipeline_policy", "store": "training_pipeline_store"}[name]] = (
                backends[name]
            )
    result = materialize(
        [TRAINING.training_run],
        partition_key=task,
        resources=resources,
        instance=instance,
        run_config={"ops": {"training_run": {"config": run_config or {}}}},
        raise_on_error=False,
    )
    record = RunStore(data).list(limit=1)[0]
    return result, record


def test_dry_run_decides_everything_and_dispatches_nothing(days_ready) -> None:
    result, record = _train(days_ready, "response", {"dry_run": True, "backend": "atropos"})
    assert result.success
    assert (record.status, record.reason, record.backend, record.source) == (
        "succeeded",
        "dry run",
        "atropos",
        "manual",
    )
    assert record.window == DAYS and record.dataset_size == 54 + 49 + 58
    assert record.per_task_counts["should_respond"] == 106 + 110 + 109
    assert record.pulled_trajectories == 120 + 120 + 120 and record.filtered_trajectories == 106 + 110 + 109
    assert record.redaction_count > 0 and record.anonymization_count > 0
    assert not (days_ready[1] / "atropos").exists()
    meta = asset_metadata(result)
    assert meta["status"] == "succeeded" and meta["dataset_size"] == record.dataset_size
    assert Path(meta["run_record"]).is_file()


def test_run_records_are_copied_to_the_shared_storage(days_ready, tmp_path: Path) -> None:
    store = DataStore(root=str(days_ready[1]), shared_url=f"file://{tmp_path}/shared")
    result, record = _train(days_ready, "response", {"dry_run": True}, store=store)
    assert result.success
    local = days_ready[1] / "training" / "runs" / f"{record.run_id}.json"
    shared = tmp_path / "shared" / "training" / "runs" / f"{record.run_id}.json"
    assert shared.read_bytes() == local.read_bytes()
    assert [p.name for p in shared.parent.iterdir()] == [shared.name]  # no temporary left behind


def test_native_backend_skips_honestly_without_failing(days_ready) -> None:
    result, record = _train(days_ready, "should_respond")
    assert result.success
    assert (record.status, record.backend, record.reason) == (
        "skipped",
        "native",
        "no LLM configured for the native backend (set LLM_BASE_URL, or install the local model with "
        "`make local-llm`)",
    )


def test_atropos_stages_chat_data_and_runs_the_command(days_ready, tmp_path: Path) -> None:
    script = tmp_path / "fake_atropos.py"
    script.write_text(
        "import json, sys\n"
        "rows = [json.loads(l) for l in open(sys.argv[2])]\n"
        "assert all(r['messages'][-1]['role'] == 'assistant' for r in rows)\n"
        "print(f'trained {sys.argv[3]} on {len(rows)} examples')\n"
    )
    backend = AtroposBackend(
        data_dir=str(tmp_path / "atropos"),
        command=[sys.executable, str(script), "--dataset", "{dataset}", "{task}"],
    )
    result, record = _train(days_ready, "action_planner", {"backend": "atropos"}, atropos=backend)
    assert result.success, record.reason
    assert record.status == "succeeded"
    staged = Path(record.artifact_path)
    assert staged.parent == tmp_path / "atropos" / "action_planner"
    sizes = record.details["holdout"]["sizes"]
    assert len(staged.read_text().splitlines()) == sizes["train"]
    assert len(staged.with_suffix(".validation.jsonl").read_text().splitlines()) == sizes["validation"]
    assert sum(sizes.values()) == record.dataset_size == 161
    assert f"trained action_planner on {sizes['train']} examples" in record.details["stdout_tail"]


def test_atropos_failure_fails_the_run_with_the_reason(days_ready, tmp_path: Path) -> None:
    backend = AtroposBackend(
        data_dir=str(tmp_path / "atropos"),
        command=[sys.executable, "-c", "import sys; sys.exit('out of GPUs')"],
    )
    result, record = _train(days_ready, "response", {"backend": "atropos"}, atropos=backend)
    assert not result.success
    assert record.status == "failed" and "exited with code 1: out of GPUs" in record.reason


def test_openai_fine_tuning_over_the_real_protocol(days_ready) -> None:
    with FakeOpenAI() as fake:
        fake.fail_next_get_with = [503]  # a transient error mid-job is retried
        backend = OpenAIBackend(api_key=fake.api_key, base_url=fake.base_url, poll_interval_seconds=0.01)
        result, record = _train(days_ready, "response", {"backend": "openai"}, openai=backend)
    assert result.success, record.reason
    assert record.status == "succeeded"
    assert record.artifact_path == "ft:gpt-4o-mini-2024-07-18:org::ftjob-0001"
    job = fake.jobs["ftjob-0001"]
    trained, validated = (
        fake.files[job[name]]["content"].decode().splitlines()
        for name in ("training_file", "validation_file")
    )
    rows = [json.loads(line) for line in trained]
    # the window less a validation split (to the service) and a test split (kept to judge the model)
    sizes = record.details["holdout"]["sizes"]
    assert (len(rows), len(validated)) == (sizes["train"], sizes["validation"])
    assert sizes["train"] + sizes["validation"] + sizes["test"] == record.dataset_size and sizes["test"] >= 30
    assert [m["role"] for m in rows[0]["messages"]] == ["system", "user", "assistant"]
    assert job["suffix"] == "response"


def test_openai_refusal_fails_the_run_and_the_key_never_shows(days_ready) -> None:
    with FakeOpenAI() as fake:
        fake.reject_create = "Model gpt-4o-mini-2024-07-18 is not available for fine-tuning"
        backend = OpenAIBackend(api_key=fake.api_key, base_url=fake.base_url, poll_interval_seconds=0.01)
        result, record = _train(days_ready, "response", {"backend": "openai"}, openai=backend)
    assert not result.success
    assert record.status == "failed" and "HTTP 400: Model gpt-4o-mini" in record.reason
    everything = json.dumps([str(e) for e in result.all_events]) + record.to_json()
    assert fake.api_key not in everything


def test_a_fine_tuned_model_is_judged_against_its_base_on_the_test_split(days_ready) -> None:
    """should_respond through training_job on OpenAI: the tuned model (which answers from its
    training file, never from the test split's answers) beats its base and the commonest answer on
    the held-out test split, so the gate calls it better; one that learnt nothing is not."""
    with FakeOpenAI() as fake:
        backend = OpenAIBackend(api_key=fake.api_key, base_url=fake.base_url, poll_interval_seconds=0.01)
        result, record = _training_job(days_ready, "openai", backend, task="should_respond")
        tests = [
            json.loads(line) for line in Path(record.details["holdout"]["test"]).read_text().splitlines()
        ]
        trained = fake.files[fake.jobs["ftjob-0001"]["training_file"]]["content"].decode()
        asked = {json.dumps(chat["messages"][-1]["content"]) for chat in fake.chats}
        fake.tuning_learns = False
        _, unlearnt = _training_job(days_ready, "openai", backend, task="should_respond")
    assert result.success, record.reason
    verdict = record.details["evaluation"]["verdict"]
    assert verdict["promoted"] and verdict["low"] > 0 and verdict["n"] == len(tests) >= 30
    assert verdict["reference"] is not None and verdict["reference_low"] > 0  # beats always-the-majority
    assert record.details["evaluation"]["tuned_score"] > record.details["evaluation"]["base_score"]
    # both models were asked exactly the test split's questions, which training never saw
    assert asked == {json.dumps(t["messages"][1]["content"]) for t in tests}
    assert not any(t["messages"][1]["content"] in trained for t in tests)
    [tuned] = [e for e in result.get_asset_materialization_events() if e.asset_key == AssetKey("tuned_model")]
    meta = tuned.materialization.metadata
    assert meta["better"].value is True and meta["test_examples"].value == verdict["n"]
    assert "**promoted**" in meta["gate"].value

    not_better = unlearnt.details["evaluation"]["verdict"]
    assert not not_better["promoted"] and abs(not_better["gain"]) < 1e-9
    assert "not shown better" in unlearnt.notes[-1]


def test_a_backend_failing_5xx_mid_job_fails_the_run_clearly_and_redoes_nothing_upstream(days_ready) -> None:
    instance, _ = days_ready
    before = {
        task: instance.get_latest_materialization_event(AssetKey(task)).timestamp
        for task in ("response", "filtered_trajectories")
    }
    with FakeOpenAI() as fake:
        fake.fail_next_get_with = [500] * 10  # the job was created, then the service keeps failing
        backend = OpenAIBackend(api_key=fake.api_key, base_url=fake.base_url, poll_interval_seconds=0.01)
        result, record = _train(days_ready, "response", {"backend": "openai"}, openai=backend)
        assert "ftjob-0001" in fake.jobs  # it failed mid-job, after the upload and the create
    assert not result.success
    assert record.status == "failed" and "HTTP 500" in record.reason and "openai" in record.reason.lower()
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert "HTTP 500" in failure.event_specific_data.error.to_string()
    # only training_run ran: the day's datasets were neither rebuilt nor re-materialised
    assert {e.asset_key for e in result.get_asset_materialization_events()} <= {AssetKey("training_run")}
    after = {
        task: instance.get_latest_materialization_event(AssetKey(task)).timestamp
        for task in ("response", "filtered_trajectories")
    }
    assert after == before


def test_a_skipped_run_is_a_warning_the_ui_shows_and_a_trained_one_passes(days_ready) -> None:
    """A skip still records its run (the materialisation), and its `not_skipped` check warns with the
    reason, per task where this Dagster keeps check results per partition."""
    result, record = _train(days_ready, "response", {"backend": "openai"})
    [evaluation] = result.get_asset_check_evaluations()
    assert (evaluation.check_name, evaluation.passed, evaluation.severity) == (
        "not_skipped",
        False,
        AssetCheckSeverity.WARN,
    )
    assert evaluation.metadata["reason"].value == record.reason == "OPENAI_API_KEY is not set"
    if PARTITIONED_CHECKS:
        assert evaluation.partition == "response"
    result, record = _train(days_ready, "response", {"dry_run": True, "backend": "atropos"})
    [evaluation] = result.get_asset_check_evaluations()
    assert evaluation.passed and record.status == "succeeded"


def test_openai_without_a_key_skips(days_ready) -> None:
    result, record = _train(days_ready, "response", {"backend": "openai"})
    assert result.success and (record.status, record.reason) == ("skipped", "OPENAI_API_KEY is not set")


def test_no_data_and_no_backend_are_skips(days_ready) -> None:
    _, record = _train(days_ready, "media_description", training=TrainingSettings(backends=[]))
    assert (record.status, record.reason) == ("skipped", "no backend configured")
    instance = DagsterInstance.ephemeral()
    empty = days_ready[1].parent / "empty"
    result = materialize(
        [TRAINING.training_run],
        partition_key="response",
        instance=instance,
        resources=default_resources(load_settings({"TRAINING_PIPELINE_DATA": str(empty)})),
    )
    assert result.success
    assert RunStore(empty).list()[0].reason == "no response examples in the window"
    assert instance.get_materialized_partitions(AssetKey("training_run")) == {"response"}


def test_effective_policy_is_in_the_metadata(days_ready) -> None:
    settings = TrainingSettings(trigger_threshold=30, per_task_overrides={"response": {"backend": "atropos"}})
    result, _ = _train(days_ready, "response", {"dry_run": True}, training=settings)
    policy = asset_metadata(result)["effective_policy"]
    assert policy["tasks"]["response"] == {
        "task": "response",
        "threshold": 30,
        "cooldown_hours": 12.0,
        "backend": "atropos",
    }
    assert policy["tasks"]["should_respond"]["backend"] == "native" and policy["window_days"] == 7


def test_a_dataset_with_a_leaked_secret_is_never_dispatched(tmp_path: Path) -> None:
    """The elizaos profile misses a Stripe key; the day's blocking check fails, and a later training
    run re-scans its window and refuses to dispatch it."""
    from resources.privacy import PrivacySettings
    from resources.sources import FileTrajectorySource

    source = write_stripe_leak_day(tmp_path / "in")
    instance = DagsterInstance.ephemeral()
    resources = default_resources(load_settings({"TRAINING_PIPELINE_DATA": str(tmp_path / "data")}))
    resources["training_pipeline_source"] = FileTrajectorySource(path=str(source))
    resources["training_pipeline_privacy"] = PrivacySettings(profile="elizaos", env_secrets="NONE")
    day = materialize(
        DATASET_ASSETS,
        partition_key="2026-11-24",
        resources=resources,
        instance=instance,
        raise_on_error=False,
    )
    assert not day.success  # the blocking no_credentials check failed
    run = materialize(
        [TRAINING.training_run],
        partition_key="response",
        resources=resources,
        instance=instance,
        run_config={"ops": {"training_run": {"config": {"backend": "atropos"}}}},
        raise_on_error=False,
    )
    assert not run.success
    record = RunStore(tmp_path / "data").list()[0]
    assert record.status == "failed" and "not dispatched" in record.reason
    assert record.details["credential_findings"] == {"Stripe Access Key": 1}
    assert not (tmp_path / "data" / "atropos").exists()


def test_runs_cli_lists_and_shows_records(days_ready, tmp_path: Path) -> None:
    import os
    import subprocess

    _, data = days_ready
    _train(days_ready, "response", {"dry_run": True})  # at least one record, whatever ran before
    env = {**os.environ, "TRAINING_PIPELINE_DATA": str(data)}
    exe = str(Path(sys.executable).parent / "training-pipeline")
    listing = subprocess.run(
        [exe, "runs", "list"], capture_output=True, text=True, env=env, check=True
    ).stdout
    newest = RunStore(data).list(limit=1)[0]
    assert listing.splitlines()[0].startswith(newest.run_id)
    shown = subprocess.run(
        [exe, "runs", "show", newest.run_id], capture_output=True, text=True, env=env, check=True
    )
    assert json.loads(shown.stdout)["runId"] == newest.run_id
    missing = subprocess.run([exe, "runs", "show", "run-nope"], capture_output=True, text=True, env=env)
    assert missing.returncode == 2 and "no run record" in missing.stderr


def test_a_second_dispatch_for_the_same_task_is_skipped_with_a_reason(days_ready) -> None:
    _, data = days_ready
    with RunStore(data).task_lock("response") as held:  # as if another process were dispatching
        assert held
        result, record = _train(days_ready, "response", {"dry_run": True})
    assert result.success
    assert (record.status, record.reason) == (
        "skipped",
        "another training run for response is dispatching; not started twice",
    )
    _, after = _train(days_ready, "response", {"dry_run": True})
    assert after.status == "succeeded"  # the lock is free again


def _training_job(
    days_ready, backend_name: str, backend, task: str = "response", settings: TrainingSettings | None = None
):
    """training_job's assets in one run with `backend` as `backend_name`; the result and the run record."""
    instance, data = days_ready
    return run_training_job(instance, data, task, backend_name, backend, settings)


def _vertex_backend(fake, **settings) -> VertexBackend:
    """A Vertex backend pointed at the loopback stand-in `fake`."""
    defaults = {
        "project_id": "my-project-1",
        "gcs_bucket": "tuning-bucket",
        "access_token": fake.token,
        "api_endpoint": fake.endpoint,
        "poll_interval_seconds": 0.01,
    }
    return VertexBackend(**{**defaults, **settings})


def test_vertex_tuning_uploads_creates_and_polls_to_the_endpoint(days_ready) -> None:

    from tests.fake_vertex import FakeVertex

    with FakeVertex() as fake:
        backend = _vertex_backend(fake, gcs_bucket="tuning-bucket")
        result, record = _training_job(days_ready, "vertex", backend)
    assert result.success, record.reason
    [job] = fake.jobs.values()
    assert job["request"]["baseModel"] == "gemini-2.5-flash"  # elizaOS's default for response
    assert record.status == "succeeded"
    assert record.artifact_path == "projects/my-project-1/locations/us-central1/endpoints/88"
    spec = job["request"]["supervisedTuningSpec"]
    data = fake.objects[spec["trainingDatasetUri"]]
    assert spec["validationDatasetUri"] in fake.objects  # the validation split, for the service
    first = json.loads(data.decode().splitlines()[0])
    assert set(first) == {"systemInstruction", "contents"}
    assert [c["role"] for c in first["contents"]] == ["user", "model"]
    # the tuned endpoint and its base both answered the test split, and the gate judged them
    judged = {model for model, _ in fake.generated}
    assert judged == {
        "projects/my-project-1/locations/us-central1/endpoints/88",
        "projects/my-project-1/locations/us-central1/publishers/google/models/gemini-2.5-flash",
    }
    evaluation = record.details["evaluation"]
    assert evaluation["verdict"]["n"] == record.details["holdout"]["sizes"]["test"]
    assert len(fake.generated) == 2 * evaluation["verdict"]["n"]
    tuned = [e for e in result.get_asset_materialization_events() if e.asset_key == AssetKey("tuned_model")]
    assert tuned[0].materialization.metadata["endpoint"].value == record.artifact_path
    assert tuned[0].materialization.metadata["judged"].value is True


def test_vertex_failures_are_clear(days_ready, tmp_path: Path) -> None:

    from tests.fake_vertex import FakeVertex

    with FakeVertex() as fake:
        fake.outcome = "JOB_STATE_FAILED"
        backend = _vertex_backend(fake, gcs_bucket="b-1")
        result, record = _training_job(days_ready, "vertex", backend)
        assert not result.success
        assert (
            record.status == "failed"
            and "JOB_STATE_FAILED: dataset has too few valid examples" in record.reason
        )

        bad_project = VertexBackend(
            project_id="Bad_Project", gcs_bucket="b-1", access_token=fake.token, api_endpoint=fake.endpoint
        )
        _, record = _training_job(days_ready, "vertex", bad_project)
        assert (record.status, record.reason) == ("failed", "Invalid GCP project ID: Bad_Project")

        uploads = len(fake.objects)
        # a day of media_description that holds 7 examples: Vertex's minimum is 16, checked before upload
        instance, data = days_ready
        small = tmp_path / "data"
        shutil.copytree(data, small)
        last_day = sorted((small / "datasets").iterdir())[-1] / "media_description_trajectories.jsonl"
        last_day.write_text("".join(last_day.read_text().splitlines(keepends=True)[:7]))
        _, record = _training_job(
            (instance, small),
            "vertex",
            backend,
            task="media_description",
            settings=TrainingSettings(window_days=1),
        )
        assert (record.status, record.reason) == (
            "failed",
            "media_description.vertex.jsonl: Vertex tuning needs at least 16 examples, got 7",
        )
        assert len(fake.objects) == uploads
    assert fake.token not in record.to_json()
    leaking = VertexBackend(
        project_id="my-project-1",
        gcs_bucket="b",
        access_token="t",
        api_endpoint="http://attacker.example.com",
    )
    _, record = _training_job(days_ready, "vertex", leaking)
    assert record.reason == "Refusing to send a Google token to attacker.example.com"


def test_tinker_trains_batch_by_batch_and_records_the_sampler_path(days_ready) -> None:
    from tests.fake_tinker import FakeTinker

    with FakeTinker() as fake:
        backend = TinkerBackend(
            api_key=fake.api_key, base_url=fake.base_url, epochs=2, batch_size=16, learning_rate=1e-3
        )
        result, record = _training_job(days_ready, "tinker", backend)
    assert result.success, record.reason
    [(training_run_id, model)] = fake.models.items()
    assert model["base_model"] == "meta-llama/Llama-3.1-8B-Instruct" and model["lora_rank"] == 32
    assert record.status == "succeeded"
    assert record.artifact_path == f"tinker://{training_run_id}/sampler_weights/{record.run_id}"
    assert record.details["checkpoint"]["tinker_path"] == record.artifact_path  # confirmed by tuned_model

    examples = [json.loads(line)["messages"] for line in Path(record.dataset_path).read_text().splitlines()]
    assert record.dataset_size == len(examples) == 161
    sizes = record.details["holdout"]["sizes"]  # validation for the service, test to judge the sampler
    assert sum(sizes.values()) == 161 and sizes["validation"] > 0 and sizes["test"] > 0
    assert len(fake.batches) == 2 * sizes["train"]  # every training example once per epoch
    assert len(fake.optim_steps) == 2 * -(-sizes["train"] // 16)  # batches of 16 per epoch
    assert len(fake.forwards) == 2 * sizes["validation"]  # validation after each epoch, forward only
    assert {step["learning_rate"] for step in fake.optim_steps} == {1e-3}
    first, second = record.details["epoch_losses"]
    assert second < first  # the service's model learnt from the batches
    early, late = record.details["validation_losses"]
    assert late < early  # and it shows on examples it did not train on

    # the loss falls on the assistant's reply and its end of turn, nothing of the prompt
    from training_pipeline.backends.chat_tokens import load_tokenizer

    tokenizer = load_tokenizer(None)
    trained = {
        tokenizer.decode([t for t, w in zip(d["targets"], d["weights"], strict=True) if w])
        for d in fake.batches
    }
    train = Path(record.dataset_path).with_name("train.jsonl").read_text().splitlines()
    assert trained == {f"{json.loads(line)['messages'][2]['content']}<|eot_id|>" for line in train}

    [tuned] = [e for e in result.get_asset_materialization_events() if e.asset_key == AssetKey("tuned_model")]
    meta = tuned.materialization.metadata
    assert meta["sampler_path"].value == record.artifact_path and meta["service"].value == "tinker"

    # the saved weights and their base model both answered every test example through sampling clients,
    # greedily, to the end of the assistant's turn, each prompt rendered as the weights were trained
    test_examples = sizes["test"]
    assert {s["model_path"] for s in fake.samples} == {None, record.artifact_path}
    assert len(fake.samples) == 2 * test_examples == 2 * meta["test_examples"].value
    eot = tokenizer.special("<|eot_id|>")
    assert all(s["params"]["temperature"] == 0 and s["params"]["stop"] == [eot] for s in fake.samples)
    header = [*tokenizer.encode("assistant"), tokenizer.special("<|end_header_id|>")]
    assert all(s["prompt"][-len(header) - 1 : -1] == header for s in fake.samples)
    # the base learnt nothing and says nothing; the tuned weights give the reply they learnt, whatever
    # the question: better than the base, but no better than a constant answer, so not "better"
    evaluation = record.details["evaluation"]
    assert evaluation["base_score"] == 0.0 < evaluation["tuned_score"]
    assert meta["judged"].value is True and meta["better"].value is False
    assert "not than always giving the commonest answer" in meta["reason"].value
    assert list(fake.finished.values()) == ["success"] * 2  # training and sampling sessions closed
    assert fake.api_key not in record.to_json()


def test_tinker_failures_are_clear_and_skips_are_honest(days_ready) -> None:
    from tests.fake_tinker import FakeTinker

    with FakeTinker() as fake:
        fake.fail_forward_backward = "sequence length 9000 exceeds the model's context"
        backend = TinkerBackend(api_key=fake.api_key, base_url=fake.base_url, batch_size=64)
        result, record = _training_job(days_ready, "tinker", backend)
        assert not result.success
        assert record.status == "failed" and record.reason.startswith("Tinker: RequestFailedError")
        assert "sequence length 9000 exceeds the model's context" in record.reason
        assert list(fake.finished.values()) == ["errored"]

        # the weights trained, but the sampler failed while judging them: a failed step saying so
        fake.fail_forward_backward, fake.fail_sampling = None, "prompt longer than the sampler's context"
        result, record = _training_job(days_ready, "tinker", backend)
        assert not result.success and record.status == "succeeded"  # the weights are there
        [failure] = [e for e in result.all_events if e.event_type == DagsterEventType.STEP_FAILURE]
        message = failure.step_failure_data.error.message
        assert "judging the tuned model: Tinker: RequestFailedError" in message
        assert "prompt longer than the sampler's context" in message and fake.api_key not in message

        sessions = len(fake.sessions)
        wrong = TinkerBackend(api_key="tml-not-the-right-key-0000000000", base_url=fake.base_url)
        _, record = _training_job(days_ready, "tinker", wrong)
        assert record.status == "failed" and "AuthenticationError" in record.reason
        assert "tml-not-the-right-key" not in record.to_json()

        qwen = TinkerBackend(api_key=fake.api_key, base_url=fake.base_url, base_model="Qwen/Qwen3-8B")
        _, record = _training_job(days_ready, "tinker", qwen)
        assert record.status == "failed" and record.reason.startswith("no chat format for Qwen/Qwen3-8B")
        assert len(fake.sessions) == sessions  # refused before any session was opened

    _, record = _training_job(days_ready, "tinker", TinkerBackend())
    assert (record.status, record.reason) == ("skipped", "TINKER_API_KEY is not set")


def test_native_backend_materialises_an_optimized_prompt(days_ready, tmp_path: Path) -> None:
    from tests.fake_chat import FakeChatServer

    def reply(body):
        system = body["messages"][0]["content"]
        if system.startswith("Rewrite the system prompt"):
            return {"content": "You are Eliza. Reply warmly and mention the person by name."}
        return {"content": "Hi! I looked into it — can you share the error message?"}

    with FakeChatServer(reply) as server:
        llm = LLMResource(base_url=server.base_url, model="m", cache_dir=str(tmp_path / "cache"))
        backend = NativeBackend(
            llm=llm, optimizer="instruction-search", rounds=1, variants=1, train_batch=3, seeds=[1]
        )
        result, record = _training_job(days_ready, "native", backend)
    assert result.success, record.reason
    assert record.status == "succeeded" and record.artifact_path.endswith("optimized_prompt.json")
    [event] = [
        e for e in result.get_asset_materialization_events() if e.asset_key == AssetKey("optimized_prompt")
    ]
    meta = {k: v.value for k, v in event.materialization.metadata.items()}
    assert meta["optimizer"] == "instruction-search" and meta["run_id"] == record.run_id
    assert 0 <= meta["baseline_score"] <= 1 and meta["improvement"] == meta["score"] - meta["baseline_score"]
    assert meta["train_examples"] + meta["validation_examples"] <= record.dataset_size
    assert "| final (test) |" in meta["score_by_round"]
    assert Path(meta["training_records"]).is_file()
    assert meta["records/llm_calls"] == len(server.requests) and meta["records/tokens"] > 0
    assert "| seed 1 › validation: baseline | done |" in meta["records_preview"]


def test_native_spend_cap_fails_the_run_and_keeps_the_partial_tree(days_ready, tmp_path: Path) -> None:
    from tests.fake_chat import FakeChatServer

    with FakeChatServer() as server:
        llm = LLMResource(base_url=server.base_url, model="m")
        result, record = _training_job(days_ready, "native", NativeBackend(llm=llm, max_calls=3))
    assert not result.success
    assert record.status == "failed" and "spend cap reached: 4 LLM calls > cap 3" in record.reason
    partial = json.loads(Path(record.reason.rsplit("partial records in ", 1)[1]).read_text())
    assert partial["failure"]["kind"] == "SpendCapExceeded"
