"""Task files as Dagster jobs: a `GraphDefinition` with one op per step, aliased by the step id, and an
edge per `depends_on`. Ops are `async def` and run on the async executor by default, so independent
steps overlap in one process (see README, "Task steps"); any other executor can be chosen per job.

Each op calls the core `run_step`; this module only translates: resources in, outcome to metadata,
a fatal failure to a failed op, an aborted run to a skipped op, a terminated run to a stopped step.
"""

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from dagster import (
    DagsterRunStatus,
    DependencyDefinition,
    ExecutorDefinition,
    Failure,
    GraphDefinition,
    In,
    JobDefinition,
    MetadataValue,
    NodeInvocation,
    Nothing,
    OpDefinition,
    OpExecutionContext,
    Out,
    Output,
    op,
)

from assets.executors import executor_for, lifeline_owner
from assets.keys import UNPREFIXED, Keys
from assets.partitions import TASK_FILE_TAG
from training_pipeline.privacy.stored import safe_text, safe_value
from training_pipeline.settings import Settings, load_settings
from training_pipeline.tasks import EXAMPLE_TASKS
from training_pipeline.tasks.registry import StepRegistry, build_registry
from training_pipeline.tasks.runner import StepOutcome, run_step, stop_run
from training_pipeline.tasks.runtime import Continuation, TaskRun
from training_pipeline.tasks.task import Task, TaskError, load_task

#: how often a running step looks whether its run is being terminated (one run-storage read)
_TERMINATION_POLL_SECONDS = 1.0

RESOURCE_KEYS = {
    "training_pipeline_store",
    "training_pipeline_llm",
    "training_pipeline_source",
    "training_pipeline_task_overrides",
}


def task_run(context: OpExecutionContext, task: Task) -> TaskRun:
    resources = context.resources
    overrides = resources.training_pipeline_task_overrides
    runs = resources.training_pipeline_store.task_runs()
    return TaskRun(
        task=task,
        run_id=context.run_id,
        run_dir=runs / context.run_id,
        llm=resources.training_pipeline_llm,
        write_trajectory=resources.training_pipeline_source.write,
        log=context.log,
        overrides=dict(overrides.values),
        step_params={k: dict(v) for k, v in overrides.step_params.items()},
        continues=_continuation(context, runs),
        lifeline=lifeline_owner(context.job_def.executor_def.name),
    )


def _continuation(context: OpExecutionContext, runs: Path) -> Continuation | None:
    """A re-execution of some steps (from failure, or a selection) continues its parent run's context;
    a first run, or a re-execution of every step, starts afresh."""
    run = context.run
    if run.parent_run_id is None or run.step_keys_to_execute is None:
        return None
    return Continuation(run.parent_run_id, runs / run.parent_run_id, frozenset(run.step_keys_to_execute))


def _metadata(outcome: StepOutcome) -> dict[str, Any]:
    metadata: dict[str, Any] = {"status": outcome.status, "retries": outcome.retries}
    if outcome.error:
        metadata["error"] = safe_text(outcome.error)
    if outcome.verification is not None:
        metadata["score"] = MetadataValue.float(float(outcome.verification["score"]))
        metadata["verification"] = MetadataValue.json(safe_value(outcome.verification))
    if outcome.final_context is not None:
        metadata["run_context"] = MetadataValue.json(outcome.final_context)
        verifications = outcome.final_context.get("metadata", {}).get("verifications", {})
        metadata["scores"] = MetadataValue.json({k: v["score"] for k, v in verifications.items()})
    return metadata


def _summary(cls: type) -> str:
    return (cls.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")


async def _unless_terminated(context: OpExecutionContext, run: TaskRun, step_id: str) -> StepOutcome:
    """The step, cancelled if its run is being terminated (the UI's Terminate, Ctrl-C on the CLI that
    started it). Dagster's interrupt reaches an async step only when the step yields, and a step waiting
    on task code yields when that returns; so the step looks at its run's status meanwhile. Cancelled,
    the step's sandbox is stopped (`run_confined`), then everything the run started (`stop_run`)."""
    step = asyncio.ensure_future(run_step(run, step_id))
    while not (await asyncio.wait({step}, timeout=_TERMINATION_POLL_SECONDS))[0]:
        current = context.instance.get_run_by_id(context.run_id)
        if current is not None and current.status in (DagsterRunStatus.CANCELING, DagsterRunStatus.CANCELED):
            step.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await step
            await stop_run(run)
            raise Failure(description=f"step {step_id!r} stopped: its run is being terminated")
    return step.result()


def step_op(task: Task, step_id: str, job_name: str) -> OpDefinition:
    step = task.step(step_id)

    @op(
        name=f"{job_name}__{step_id}",
        description=f"{step.type}: {_summary(type(step))}",
        ins={f"after_{parent}": In(Nothing) for parent in task.upstream[step_id]},
        out=Out(Nothing, is_required=False),
        required_resource_keys=RESOURCE_KEYS,
        tags={"training_pipeline/step_type": step.type},
    )
    async def _step(context: OpExecutionContext):
        run = task_run(context, task)
        outcome = await _unless_terminated(context, run, step_id)
        metadata = _metadata(outcome)
        if outcome.status == "failed":
            raise Failure(
                description=safe_text(f"step {step_id!r} failed: {outcome.error}"), metadata=metadata
            )
        if outcome.status == "skipped":
            context.log.info(safe_text(f"step {step_id!r} not started: {outcome.error}"))
            return  # no output: Dagster marks its dependants skipped too
        yield Output(None, metadata=metadata)

    return _step


def task_job(
    task: Task,
    executor_def: ExecutorDefinition,
    resource_defs: dict[str, Any] | None = None,
    keys: Keys = UNPREFIXED,
) -> JobDefinition:
    """The task's job (named for the task, under the prefix of `keys`): an op per step, an edge per
    `depends_on`, on `executor_def`."""
    job_name = keys.name(task.job_name)
    dependencies = {
        NodeInvocation(f"{job_name}__{step.id}", alias=step.id): {
            f"after_{parent}": DependencyDefinition(parent) for parent in task.upstream[step.id]
        }
        for step in task.steps
    }
    graph = GraphDefinition(
        name=job_name,
        description=f"task {task.name}: {len(task.steps)} steps",
        node_defs=[step_op(task, step.id, job_name) for step in task.steps],
        dependencies=dependencies,
    )
    return graph.to_job(
        executor_def=executor_def,
        resource_defs=resource_defs,
        tags={TASK_FILE_TAG: task.name},
        metadata={"task": MetadataValue.json(task.to_list())},
    )


def task_files(extra_dir: str | None = None) -> list[Path]:
    folders = [EXAMPLE_TASKS, *([Path(extra_dir)] if extra_dir else [])]
    return [file for folder in folders if folder.is_dir() for file in sorted(folder.glob("*.json"))]


def task_jobs(
    settings: Settings, registry: StepRegistry | None = None, keys: Keys = UNPREFIXED
) -> list[JobDefinition]:
    """A job per task file of the tasks folders (the examples, then `TRAINING_PIPELINE_TASKS_DIR`), on
    the task executor. An invalid file stops the code location from loading, with every problem listed."""
    registry = registry or build_registry(Path(settings.config) if settings.config else None)
    executor = executor_for(settings.task_executor, settings)
    jobs: dict[str, JobDefinition] = {}
    for file in task_files(settings.tasks_dir):
        task = load_task(file, registry)
        if task.job_name in jobs:
            raise TaskError(str(file), [f"a task named {task.name!r} is already loaded"])
        jobs[task.job_name] = task_job(task, executor, keys=keys)
    return list(jobs.values())


def job_for_file(path: str, executor: str = "async") -> JobDefinition:
    """The job of one task file with the default resources, rebuilt in every process of a run
    (`training-pipeline task run FILE`)."""
    from resources.defaults import default_resources

    task = load_task(Path(path), build_registry())
    current = load_settings()  # this process's environment, as the CLI set it for the run
    return task_job(task, executor_for(executor, current), resource_defs=default_resources(current))
