"""The threshold sensor and the nightly automation, evaluated against a real (ephemeral) instance."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from dagster import (
    DagsterInstance,
    DagsterRunStatus,
    Definitions,
    build_sensor_context,
    evaluate_automation_conditions,
    materialize,
)
from dagster._core.test_utils import create_run_for_test

from assets.datasets.definitions import datasets_definitions
from assets.keys import UNPREFIXED
from resources.backends import NativeBackend
from resources.defaults import default_resources
from resources.llm import LLMResource
from resources.training import TrainingSettings
from tests.helpers import DATASET_ASSETS, TRAINING, TRAINING_JOB, threshold
from training_pipeline.settings import load_settings
from training_pipeline.training.trigger import TriggerState

# examples per sample day: should_respond 106/110/109, action_planner and response 54/49/58,
# context_routing 37/47/49, media_description 33/37/28
DAYS = ["2026-11-23", "2026-11-24", "2026-11-25"]


@pytest.fixture
def env(tmp_path: Path):
    instance = DagsterInstance.ephemeral()
    resources = default_resources(load_settings({"TRAINING_PIPELINE_DATA": str(tmp_path)}))
    # these tests are about when runs fire, not what they train: the native backend skips at once
    backends = resources["training_pipeline_backends"]
    resources["training_pipeline_backends"] = backends.model_copy(
        update={"native": NativeBackend(llm=LLMResource(local_model=False))}
    )

    def day(partition: str) -> None:
        assert materialize(
            DATASET_ASSETS,
            partition_key=partition,
            resources=resources,
            instance=instance,
        ).success

    return instance, resources, day


def _tick(instance, cursor, **settings):
    context = build_sensor_context(
        instance=instance, cursor=cursor, resources={"training_pipeline_policy": TrainingSettings(**settings)}
    )
    result = threshold(60)(context)
    return result, result.cursor


def test_fires_once_per_threshold_crossing_even_for_a_backfill(env) -> None:
    instance, _, day = env
    day(DAYS[0])
    day(DAYS[1])  # two days arrive before the first tick, as in a backfill
    result, cursor = _tick(instance, None, trigger_threshold=150)
    assert [(r.partition_key, r.run_key) for r in result.run_requests] == [
        ("should_respond", "threshold:should_respond:1")
    ]
    request = result.run_requests[0]
    assert request.run_config == {"ops": {"training_run": {"config": {"source": "threshold"}}}}
    state = TriggerState.from_cursor(cursor)
    assert state.tasks["should_respond"].count == 216 and state.tasks["response"].count == 103

    again, cursor = _tick(instance, cursor, trigger_threshold=150)  # nothing new, and its run is in flight
    assert not again.run_requests


def test_rematerialised_days_are_not_counted_twice_and_the_cursor_survives_restarts(env) -> None:
    instance, _, day = env
    day(DAYS[0])
    _, cursor = _tick(instance, None, trigger_threshold=150)
    day(DAYS[0])  # the same day again
    # a "restarted daemon": nothing but the stored cursor carries over
    _, cursor = _tick(instance, cursor, trigger_threshold=150)
    state = TriggerState.from_cursor(cursor)
    assert state.tasks["should_respond"].count == 106 and state.tasks["response"].count == 54
    assert TriggerState.from_cursor(state.to_cursor()) == state


def test_counter_resets_when_its_run_finishes_and_cooldown_holds(env) -> None:
    instance, resources, day = env
    day(DAYS[0])
    day(DAYS[1])
    result, cursor = _tick(instance, None, trigger_threshold=150)
    [request] = result.run_requests
    job = Definitions(assets=TRAINING.assets, jobs=[TRAINING_JOB], resources=resources).resolve_job_def(
        "training_job"
    )
    run = job.execute_in_process(
        partition_key="should_respond",
        instance=instance,
        run_config=request.run_config,
        tags={"dagster/run_key": request.run_key, **request.tags},
    )
    assert run.success
    _, cursor = _tick(instance, cursor, trigger_threshold=150)
    assert TriggerState.from_cursor(cursor).tasks["should_respond"].count == 0  # reset after the run
    day(DAYS[2])
    held, cursor = _tick(instance, cursor, trigger_threshold=120)
    # should_respond (109 new) is cooling down; the others past 120 fire, most examples first
    assert [r.partition_key for r in held.run_requests] == ["action_planner", "response", "context_routing"]
    assert TriggerState.from_cursor(cursor).tasks["should_respond"].count == 109


def test_no_firing_while_any_run_for_the_task_is_in_flight(env) -> None:
    instance, _, day = env
    day(DAYS[0])
    day(DAYS[1])
    create_run_for_test(
        instance,
        job_name="training_job",
        status=DagsterRunStatus.STARTED,
        tags={"dagster/partition": "should_respond", "training_pipeline/source": "manual"},
    )
    result, _ = _tick(instance, None, trigger_threshold=150)
    assert not result.run_requests


def test_auto_train_off_stops_firing(env) -> None:
    instance, _, day = env
    day(DAYS[0])
    day(DAYS[1])
    result, _ = _tick(instance, None, auto_train=False)
    assert not result.run_requests
    assert "auto_train is off" in result.skip_reason.skip_message


def test_the_nightly_condition_asks_for_yesterday_once_per_tick_as_one_run() -> None:
    settings = load_settings({"TRAINING_PIPELINE_NIGHTLY_CRON": "0 2 * * *"})
    defs = Definitions.merge(
        datasets_definitions(settings), Definitions(resources=default_resources(settings))
    )
    layers = [UNPREFIXED.trajectories, UNPREFIXED.filtered, *UNPREFIXED.datasets]
    instance = DagsterInstance.ephemeral()

    def at(hour: int, minute: int, day: int, cursor: object = None):
        when = datetime(2026, 11, day, hour, minute, tzinfo=UTC)
        return evaluate_automation_conditions(
            defs=defs, instance=instance, evaluation_time=when, cursor=cursor
        )

    before = at(1, 0, 26)
    assert before.total_requested == 0
    tick = at(2, 1, 26, before.cursor)
    # every layer, yesterday only, asked for together: one run of the multi-asset, one pass over the day;
    # the trace datasets (eager) in the same tick, after them
    assert {key: tick.get_requested_partitions(key) for key in layers} == {
        key: {"2026-11-25"} for key in layers
    }
    assert tick.get_requested_partitions(UNPREFIXED.trace_datasets) == {"2026-11-25"}
    assert tick.total_requested == len(layers) + 1
    again = at(2, 30, 26, tick.cursor)
    assert again.total_requested == 0  # a tick is handled once
    next_night = at(2, 1, 27, again.cursor)
    assert next_night.get_requested_partitions(UNPREFIXED.trajectories) == {"2026-11-26"}


def test_the_nightly_automation_is_off_until_turned_on_and_tags_its_runs() -> None:
    settings = load_settings({})
    defs = Definitions.merge(
        datasets_definitions(settings), Definitions(resources=default_resources(settings))
    )
    repository = defs.get_repository_def()
    [sensor] = repository.sensor_defs
    assert sensor.name == "nightly_datasets_automation"
    assert sensor.default_status.value == "STOPPED"
    assert sensor.run_tags == {"training_pipeline/source": "schedule"}
