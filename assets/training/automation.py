"""`training_job` and the sensor that launches it when a task's new examples pass its threshold."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from dagster import (
    AssetRecordsFilter,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    RunsFilter,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    define_asset_job,
    sensor,
)

from assets.keys import Keys
from assets.partitions import PARTITION_TAG, SOURCE_TAG
from assets.training.assets import TrainingAssets
from resources.training import TrainingSettings
from training_pipeline.datasets.training_tasks import TASKS
from training_pipeline.training.trigger import TriggerState

#: what `define_asset_job` returns (Dagster does not export the class's name)
UnresolvedAssetJobDefinition = Any

#: the tag on every training run: a deployment limits them with a run-queue tag limit if it wants
KIND_TAG = "training_pipeline/kind"


def training_job(keys: Keys, training: TrainingAssets) -> UnresolvedAssetJobDefinition:
    return define_asset_job(
        keys.name("training_job"),
        selection=training.assets,
        tags={KIND_TAG: "training"},
        description="Train one task (the partition). Launch config: backend, dry_run, source.",
    )


def evaluation_job(keys: Keys, prompt_evaluation: Any) -> UnresolvedAssetJobDefinition:
    return define_asset_job(
        keys.name("evaluation_job"),
        selection=[prompt_evaluation],
        tags={KIND_TAG: "evaluation"},
        description="Evaluate one task's promoted prompt (the partition) against its baseline by task runs.",
    )


_IN_FLIGHT = [
    DagsterRunStatus.QUEUED,
    DagsterRunStatus.NOT_STARTED,
    DagsterRunStatus.STARTING,
    DagsterRunStatus.STARTED,
]
_FINISHED = [DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED]
_PAGE = 500


def fire_ready_tasks(
    context: SensorEvaluationContext,
    training_pipeline_policy: TrainingSettings,
    keys: Keys,
    job_name: str,
    names: Sequence[str] = TASKS,
) -> SensorResult:
    """Counts new examples per task (`names`: training's partition keys) from the dataset assets'
    materialisations (a trace dataset's from `trace_datasets`'; each tick reads only events after the
    cursor) and fires `training_job` for a task once its count since its last threshold run reaches
    the threshold, its cooldown has passed and no run for it is in flight."""
    instance = context.instance
    policy = training_pipeline_policy.policy()
    state = TriggerState.from_cursor(context.cursor, names)

    for task in names:
        counter = state.tasks[task]
        layer = keys.dataset(task) if task in TASKS else keys.trace_datasets
        while True:
            result = instance.fetch_materializations(
                AssetRecordsFilter(asset_key=layer, after_storage_id=counter.after_storage_id),
                limit=_PAGE,
                ascending=True,
            )
            for record in result.records:
                materialization = record.asset_materialization
                state.record(
                    task,
                    record.storage_id,
                    record.partition_key,
                    _examples(materialization.metadata if materialization else {}, task),
                    policy.auto_train,
                )
            if not result.has_more:
                break

    in_flight, last_finished = set(), {}
    for task in names:
        counter = state.tasks[task]
        if counter.fired_run_key:
            runs = instance.get_runs(RunsFilter(tags={"dagster/run_key": counter.fired_run_key}), limit=1)
            if runs and runs[0].is_finished:
                state.reset(task)  # succeeded, skipped or failed: start counting again
        task_filter = {"job_name": job_name, "tags": {PARTITION_TAG: task}}
        if instance.get_runs(RunsFilter(statuses=_IN_FLIGHT, **task_filter), limit=1):
            in_flight.add(task)
        finished = instance.get_run_records(RunsFilter(statuses=_FINISHED, **task_filter), limit=1)
        if finished and finished[0].end_time:
            last_finished[task] = datetime.fromtimestamp(finished[0].end_time, UTC)

    requests = []
    if policy.auto_train:
        for task in state.ready(policy, datetime.now(UTC), in_flight, last_finished):
            counter = state.tasks[task]
            counter.fired += 1
            counter.fired_run_key = f"threshold:{task}:{counter.fired}"
            context.log.info(f"firing {task}: {counter.count} examples since its last run")
            requests.append(
                RunRequest(
                    run_key=counter.fired_run_key,
                    partition_key=task,
                    run_config={"ops": {Keys.op(keys.training_run): {"config": {"source": "threshold"}}}},
                    tags={SOURCE_TAG: "threshold"},
                )
            )
    counts = ", ".join(f"{t}={c.count}" for t, c in state.tasks.items())
    if requests:
        return SensorResult(run_requests=requests, cursor=state.to_cursor())
    reason = "auto_train is off" if not policy.auto_train else f"no task ready ({counts})"
    return SensorResult(skip_reason=SkipReason(reason), cursor=state.to_cursor())


def _examples(metadata: Any, task: str) -> int:
    """A day's examples of `task` in a materialisation's metadata: a dataset's `examples`, or the
    trace datasets' `datasets` counts (`{name: examples}`)."""
    if task in TASKS:
        examples = metadata.get("examples")
        return int(examples.value) if examples is not None else 0
    datasets = metadata.get("datasets")
    counts = datasets.value if datasets is not None else {}
    return int(counts.get(task, 0)) if isinstance(counts, dict) else 0


def threshold_sensor(
    keys: Keys,
    job: UnresolvedAssetJobDefinition,
    interval_seconds: int,
    names: Sequence[str] = TASKS,
) -> SensorDefinition:
    """`fire_ready_tasks`, evaluated by the daemon every `interval_seconds`
    (`TRAINING_PIPELINE_SENSOR_INTERVAL_SECONDS`) once turned on; each tick reads only events after its
    cursor."""

    def evaluate(
        context: SensorEvaluationContext, training_pipeline_policy: TrainingSettings
    ) -> SensorResult:
        return fire_ready_tasks(context, training_pipeline_policy, keys, job.name, names)

    return _sensor(keys.name("training_threshold_sensor"), job, evaluate, interval_seconds, running=False)


def launch_evaluations(context: SensorEvaluationContext, keys: Keys) -> SensorResult:
    """One `evaluation_job` run per promoted candidate: reads the `optimized_prompt` materialisations
    after its cursor and requests an evaluation of each task whose candidate the gate promoted."""
    after = int(context.cursor) if context.cursor else None
    requests = []
    while True:
        page = context.instance.fetch_materializations(
            AssetRecordsFilter(asset_key=keys.optimized_prompt, after_storage_id=after),
            limit=_PAGE,
            ascending=True,
        )
        for record in page.records:
            after = record.storage_id
            materialization = record.asset_materialization
            metadata = materialization.metadata if materialization else {}
            promoted = metadata.get("promoted")
            if promoted is None or not promoted.value or record.partition_key is None:
                continue
            run_id = metadata["run_id"].value
            requests.append(
                RunRequest(
                    run_key=f"evaluate:{run_id}",
                    partition_key=record.partition_key,
                    tags={SOURCE_TAG: "promotion", "training_pipeline/training_run": str(run_id)},
                )
            )
        if not page.has_more:
            break
    cursor = str(after) if after is not None else None
    if requests:
        return SensorResult(run_requests=requests, cursor=cursor)
    return SensorResult(skip_reason=SkipReason("no newly promoted prompt"), cursor=cursor)


def evaluation_sensor(
    keys: Keys, job: UnresolvedAssetJobDefinition, interval_seconds: int, running: bool
) -> SensorDefinition:
    """`launch_evaluations`; `running` by default in this repository's code location (the loop from a
    promotion to its evaluation needs no hand), off in a project that adds the integration until it is
    turned on there."""

    def evaluate(context: SensorEvaluationContext) -> SensorResult:
        return launch_evaluations(context, keys)

    return _sensor(keys.name("evaluation_sensor"), job, evaluate, interval_seconds, running=running)


def _sensor(
    name: str,
    job: UnresolvedAssetJobDefinition,
    evaluate: Callable[..., SensorResult],
    interval_seconds: int,
    running: bool,
) -> SensorDefinition:
    return sensor(
        name=name,
        job=job,
        minimum_interval_seconds=interval_seconds,
        default_status=DefaultSensorStatus.RUNNING if running else DefaultSensorStatus.STOPPED,
    )(evaluate)
