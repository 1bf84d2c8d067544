"""Executors by name, so a deployment picks them from its environment instead of from code.

- `in_process` (the asset jobs' default): one process; `multiprocess` pays a process and a code load
  per step, which the daily graph's short steps do not repay.
- `async` (the task jobs' default): `async def` ops overlapping on one event loop.
- `multiprocess`: a process per step.
- `celery`: each step a task on the Celery broker at `CELERY_BROKER_URL` (e.g. Redis), run by
  `dagster-celery` workers (the `deploy` extra; see README, "Production deployment").
"""

from dagster import ExecutorDefinition, in_process_executor, multiprocess_executor
from dagster_async_executor import async_executor

from training_pipeline.processes import Owner
from training_pipeline.settings import Settings

EXECUTOR_NAMES = ("async", "in_process", "multiprocess", "celery")
#: the executors that run every step of a run in the run's own process
ONE_PROCESS_EXECUTORS = frozenset({async_executor.name, in_process_executor.name})
#: the executors that run each step in a process of its own, a child of the run's process
CHILD_PROCESS_EXECUTORS = frozenset({multiprocess_executor.name})


def lifeline_owner(executor: str) -> Owner | None:
    """Whose death ends what a run on `executor` starts for its later steps (`TaskRun.lifeline`), seen
    from a step's process: that process itself, its parent (the run's process), or no one's (a Celery
    worker serves many runs)."""
    if executor in ONE_PROCESS_EXECUTORS:
        return "starter"
    return "parent" if executor in CHILD_PROCESS_EXECUTORS else None


def executor_for(name: str, settings: Settings) -> ExecutorDefinition:
    if name == "async":
        return async_executor
    if name == "in_process":
        return in_process_executor
    if name == "multiprocess":
        return multiprocess_executor
    if name == "celery":
        broker = settings.celery_broker_url
        if not broker:
            raise ValueError("the celery executor needs CELERY_BROKER_URL, e.g. redis://10.0.0.5:6379/0")
        try:
            from dagster_celery import celery_executor
        except ImportError as err:
            raise ValueError(
                "the celery executor needs the deploy extra: pip install 'training-pipeline[deploy]'"
            ) from err
        backend = settings.celery_backend_url or broker
        return celery_executor.configured({"broker": broker, "backend": backend}, name="celery_executor")
    raise ValueError(f"unknown executor {name!r}; choose one of {', '.join(EXECUTOR_NAMES)}")
