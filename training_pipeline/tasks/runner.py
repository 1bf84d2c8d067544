"""Runs one step of a task run with AgentEnv's rules; every op of a task job calls `run_step`.

- The step starts from the context as the store has it, and its change is committed as its diff (also
  when it raises: what it published before failing stays, as with a shared context object).
- A failure appends `{step_id, step_type, error, error_type, started_at, duration_seconds, is_fatal}`
  to `metadata.failed_steps`.
- `retry_config`: roll back the diffs of `retry_from_step_id` and everything after it that ran, stop the
  envs those steps deployed (a re-run gets a fresh instance), re-run them and this step (independent
  ones concurrently), at most `max_retries` times, each reset in `metadata.retry_resets`.
- Then `fail_task_on_error`: true aborts the run (no further step starts, running ones finish), false
  records the failure and lets dependants run.
- The last step to finish (or the fatal failure, once running steps are done) ends the run: stops the
  processes it started and writes the context's safe form.
- A Dagster re-execution of some steps continues the run it re-executes (`_continue`): that run's
  context less what those steps did, and its envs started again on their state.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
import traceback
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from training_pipeline.atomic import atomic_write_text
from training_pipeline.privacy.filter import secret_env_values
from training_pipeline.privacy.scrub import scrub_confined
from training_pipeline.privacy.stored import safe_text, safe_value
from training_pipeline.processes import astop_process_group
from training_pipeline.sandbox.confine import ended
from training_pipeline.tasks.context import TaskStepContext, diff
from training_pipeline.tasks.envs.kinds import start_env
from training_pipeline.tasks.run_store import PROCESS_FLAG, TERMINAL
from training_pipeline.tasks.runtime import STEP_OUTPUT_FOLDERS, STORE_FILE_NAME, StepRuntime, TaskRun
from training_pipeline.tasks.step import TaskStep

_POLL = 0.05
#: A running step says it is alive this often; silent for STALE_AFTER_SECONDS, it is taken for dead.
HEARTBEAT_SECONDS = 5.0
STALE_AFTER_SECONDS = 60.0


@dataclass
class StepOutcome:
    #: succeeded | tolerated (failed, fail_task_on_error false) | skipped (run aborting) | failed
    status: str
    error: str | None = None
    error_type: str | None = None
    retries: int = 0
    verification: dict[str, Any] | None = None
    #: the final context's safe form, when this step ended the run
    final_context: dict[str, Any] | None = None


@dataclass
class _Failure:
    error: str
    error_type: str
    started_at: float
    duration: float


async def _store(function, *args):
    return await asyncio.to_thread(function, *args)


async def start_run(run: TaskRun) -> None:
    """Once per run, whichever step comes first: the step table and the caller's overrides (or, for a
    re-execution, the context of the run it continues)."""
    if run.continues is not None:
        await _continue(run)
    await _store(run.store.ensure_steps, [step.id for step in run.task.steps])
    if await _store(run.store.take_flag, "initialised", str(time.time())):
        overrides = {**run.overrides, "step_params": run.step_params}
        await _store(
            run.store.commit, None, 0, [{"op": "set", "path": ["user_overrides"], "value": overrides}]
        )


async def _continue(run: TaskRun) -> None:
    """Take over the parent run's context, files and envs: its envs were stopped when it ended, so each
    one still deployed is started again on its own state (the env's database, copied), with a new
    process and socket, recorded as a diff of the step that deployed it."""
    continuation = run.continues
    assert continuation is not None
    parent_db = continuation.parent_dir / STORE_FILE_NAME
    if not parent_db.is_file():
        raise RuntimeError(
            f"cannot re-execute steps of run {continuation.parent_run_id}: its context store {parent_db} "
            "is gone; launch the task again instead"
        )
    store, rerun = run.store, set(continuation.rerun)
    if not await _store(store.continue_from, parent_db, rerun, continuation.parent_run_id):
        return  # another step of this run did it
    try:
        for folder in STEP_OUTPUT_FOLDERS:
            if (continuation.parent_dir / folder).is_dir():
                await asyncio.to_thread(
                    shutil.copytree,
                    continuation.parent_dir / folder,
                    run.run_dir / folder,
                    dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(
                        "*.sock"
                    ),  # a dead env's door: the revived env makes its own
                )
        state = await _store(store.state)
        for env in state.get("deployed_envs", []):
            if not env.get("stopped"):
                await _revive(run, env)
        record = {"run_id": continuation.parent_run_id, "rerun_steps": sorted(rerun)}
        await _store(store.commit, None, 0, [{"op": "set", "path": ["continued_from"], "value": record}])
        run.log.info(f"continuing run {continuation.parent_run_id}: re-running {sorted(rerun)}")
    finally:
        await _store(store.drop_flag, "resetting")


async def _revive(run: TaskRun, env: dict[str, Any]) -> None:
    options = getattr(effective_step(run, env["step_id"]), "options", {})
    workdir = run.env_dir(env["name"], env["instance_id"])
    limits = getattr(effective_step(run, env["step_id"]), "limits", None)
    started = await asyncio.to_thread(
        start_env, env["env_type"], workdir, options, limits, lifeline=run.lifeline
    )
    revived = {**env, "url": started.url, "pid": started.pid, "started_at": time.time()}
    attempt = await _store(run.store.attempts, env["step_id"])
    await _store(
        run.store.commit, env["step_id"], attempt, [{"op": "put", "list": "deployed_envs", "value": revived}]
    )
    run.log.info(f"env {env['name']!r} started again on its state, at {started.url}")


def effective_step(run: TaskRun, step_id: str) -> TaskStep:
    """The step with this run's `user_overrides.step_params[step_id]` applied (validated as fields)."""
    step = run.task.step(step_id)
    params = run.step_params.get(step_id)
    if not params:
        return step
    try:
        return type(step).from_dict({**step.to_dict(), **params})
    except ValidationError as err:
        raise ValueError(f"step_params for step {step_id!r}: {err}") from err


def _fails_the_task(run: TaskRun, step_id: str) -> bool:
    """`fail_task_on_error` as this run sees it (a `step_params` override included)."""
    try:
        return effective_step(run, step_id).fail_task_on_error
    except ValueError:  # invalid overrides: the step already failed on them; the file's value decides
        return run.task.step(step_id).fail_task_on_error


async def run_step(run: TaskRun, step_id: str) -> StepOutcome:
    await start_run(run)
    step = run.task.step(step_id)
    started = await _begin(run, step_id)
    if started is None:
        return StepOutcome("skipped", "the run is aborting after a fatal failure")
    failure = await _execute(run, step_id, *started)
    retry = run.task.retries.get(step_id)
    retries = 0
    while failure is not None and retry is not None and retries < retry.max_retries:
        await _record_failure(run, step, failure, fatal=False)
        retries += 1
        failure = await _retry(run, step_id, retry.retry_from_step_id, retries)
    if failure is None:
        await _store(run.store.finish, step_id, "succeeded")
        outcome = StepOutcome("succeeded", retries=retries)
    else:
        fatal = _fails_the_task(run, step_id)
        await _record_failure(run, step, failure, fatal=fatal)
        status = "failed" if fatal else "tolerated"
        await _store(run.store.finish, step_id, status, failure.error)
        outcome = StepOutcome(status, failure.error, failure.error_type, retries)
        if fatal:
            await _store(run.store.take_flag, "abort", step_id)
            await _wait_until_idle(run, except_ids={step_id})
    state = await _store(run.store.state)
    verifier_id = getattr(step, "verifier_id", None) or step_id
    outcome.verification = (state.get("metadata", {}).get("verifications") or {}).get(verifier_id)
    outcome.final_context = await _finish_run_if_done(run, force=outcome.status == "failed")
    return outcome


async def _begin(run: TaskRun, step_id: str, owner: str | None = None) -> tuple[int, dict] | None:
    while True:
        verdict, attempt, state = await _store(run.store.try_start, step_id, owner)
        if verdict == "aborted":
            return None
        if verdict == "run":
            return attempt, state
        await asyncio.sleep(_POLL)


async def _execute(run: TaskRun, step_id: str, attempt: int, state: dict[str, Any]) -> _Failure | None:
    context = TaskStepContext.model_validate(state)
    context._runtime = StepRuntime(run, step_id, attempt)
    before = context.model_dump(mode="json")
    started, clock = time.time(), time.monotonic()
    failure = None
    try:
        step = effective_step(run, step_id)
        run.log.info(f"step {step_id!r} ({step.type}) attempt {attempt}")
        async with _heartbeat(run, step_id):
            await step.execute(context)
    except Exception as err:
        failure = _Failure(
            safe_text(str(err) or type(err).__name__), type(err).__name__, started, time.monotonic() - clock
        )
        run.log.warning(f"step {step_id!r} failed: {failure.error}\n{traceback.format_exc(limit=5)}")
    await _store(run.store.commit, step_id, attempt, diff(before, context.model_dump(mode="json")))
    return failure


async def _record_failure(run: TaskRun, step: TaskStep, failure: _Failure, fatal: bool) -> None:
    entry = {
        "step_id": step.id,
        "step_type": step.type,
        "error": failure.error,
        "error_type": failure.error_type,
        "started_at": failure.started_at,
        "duration_seconds": round(failure.duration, 3),
        "is_fatal": fatal,
    }
    await _store(run.store.commit, None, 0, [{"op": "append", "path": ["failed_steps"], "value": entry}])


async def _wait_until_idle(run: TaskRun, except_ids: set[str], among: set[str] | None = None) -> None:
    """Wait for the running steps (all, or those `among`) to finish. One that stopped beating lost its
    process (kill -9, a crashed worker): it is marked `lost` rather than waited for forever."""
    while True:
        alive, silent = await _store(run.store.running, STALE_AFTER_SECONDS)
        for step_id in silent - except_ids:
            if among is None or step_id in among:
                error = f"no heartbeat for {STALE_AFTER_SECONDS:.0f}s: its process died"
                run.log.warning(f"step {step_id!r} lost: {error}")
                await _store(run.store.finish, step_id, "lost", error)
        if not [s for s in alive - except_ids if among is None or s in among]:
            return
        await asyncio.sleep(_POLL)


@asynccontextmanager
async def _heartbeat(run: TaskRun, step_id: str) -> AsyncIterator[None]:
    async def beat() -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_SECONDS)
            await _store(run.store.beat, step_id)

    beating = asyncio.create_task(beat())
    try:
        yield
    finally:
        beating.cancel()


async def _retry(run: TaskRun, step_id: str, origin: str, number: int) -> _Failure | None:
    """Roll back to before `origin` and run it, what follows it that had run, and this step again."""
    task, store = run.task, run.store
    await _store(store.finish, step_id, "retry_wait")
    while not await _store(store.take_flag, "resetting", step_id):
        await asyncio.sleep(_POLL)
    try:
        region = {origin} | task.descendants(origin)
        await _wait_until_idle(run, except_ids={step_id}, among=region)
        statuses = await _store(store.statuses)
        rerun = {s for s in region if statuses.get(s) in ("succeeded", "tolerated", "failed") or s == step_id}
        reverted = await _store(store.revert, rerun)
        for op in reverted:
            if op["op"] == "put" and op["list"] == "deployed_envs" and op["value"].get("pid"):
                await astop_process_group(op["value"]["pid"])
                ended(op["value"]["pid"])
        reset = {
            "step_id": step_id,
            "retry_from_step_id": origin,
            "retry": number,
            "rerun_steps": [s.id for s in task.steps if s.id in rerun],
            "at": time.time(),
        }
        await _store(store.commit, None, 0, [{"op": "append", "path": ["retry_resets"], "value": reset}])
        run.log.info(f"retry {number} of {step_id!r} from {origin!r}: re-running {reset['rerun_steps']}")
        return await _rerun(run, step_id, rerun)
    finally:
        await _store(store.drop_flag, "resetting")


async def _rerun(run: TaskRun, owner: str, rerun: set[str]) -> _Failure | None:
    """Run the re-run set in dependency order, independent steps concurrently. The owner's failure, or
    a fatal one of another step, fails the attempt."""
    task = run.task
    done: dict[str, asyncio.Future[_Failure | None]] = {
        s: asyncio.get_running_loop().create_future() for s in rerun
    }

    async def one(step_id: str) -> None:
        for parent in task.upstream[step_id]:
            if parent in done:
                await done[parent]
        started = await _begin(run, step_id, owner=owner)
        failure = None if started is None else await _execute(run, step_id, *started)
        if step_id != owner:
            step, fatal = task.step(step_id), _fails_the_task(run, step_id)
            if failure is not None:
                await _record_failure(run, step, failure, fatal=False)
            status = "succeeded" if failure is None else ("failed" if fatal else "tolerated")
            await _store(run.store.finish, step_id, status, failure.error if failure else None)
            if failure is not None and not fatal:
                failure = None
        done[step_id].set_result(failure)

    await asyncio.gather(*(one(s) for s in rerun))
    failures = [done[s].result() for s in [owner, *sorted(rerun - {owner})]]
    return next((f for f in failures if f is not None), None)


async def stop_run(run: TaskRun) -> None:
    """End the run now, whatever its steps' state (it is being terminated): stop the envs and processes
    it started, scrub what task code left, save the context. A no-op once the run has ended."""
    await _finish_run_if_done(run, force=True)


async def _finish_run_if_done(run: TaskRun, force: bool) -> dict[str, Any] | None:
    """End the run once every step is done (or it is aborting): stop what it started, save the context."""
    statuses = await _store(run.store.statuses)
    if not force and not all(status in TERMINAL for status in statuses.values()):
        return None
    if not await _store(run.store.take_flag, "finished", str(time.time())):
        return None
    state = await _store(run.store.state)
    stopped = set()
    for env in state.get("deployed_envs", []):
        if env.get("pid") and not env.get("stopped"):
            stopped.add(env["pid"])
            await astop_process_group(env["pid"])
            ended(env["pid"])
    for key, value in (await _store(run.store.flags)).items():
        if key.startswith(PROCESS_FLAG) and int(value) not in stopped:
            await astop_process_group(int(value))
            ended(int(value))
    # what task code left behind, redacted in place by a confined process; what it could not redact
    # is removed and named, in the log and in the context
    scrubbed = await asyncio.to_thread(
        scrub_confined, run.run_dir, STEP_OUTPUT_FOLDERS, secret_env_values("strict")
    )
    for name, reason in scrubbed.removed.items():
        run.log.warning(f"removed {name}, which could not be scrubbed: {reason}")
    final = safe_value({**state, "step_statuses": statuses, "scrubbed": scrubbed.to_dict()})
    await asyncio.to_thread(
        atomic_write_text, run.run_dir / "context.json", json.dumps(final, indent=2, sort_keys=True)
    )
    return final
