"""Steps that deploy, feed, inspect, script and stop environments."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, field_validator

from training_pipeline.atomic import atomic_write_text
from training_pipeline.privacy.stored import safe_value
from training_pipeline.processes import astop_process_group
from training_pipeline.sandbox import Limits, Sandbox
from training_pipeline.sandbox.confine import ended
from training_pipeline.tasks.context import DeployedEnv, TaskStepContext
from training_pipeline.tasks.envs.kinds import ENV_KINDS, ENV_LIMITS, start_env
from training_pipeline.tasks.sandboxes import run_confined
from training_pipeline.tasks.step import RelativePath, TaskStep, resolve_inside


class DeployEnvStep(TaskStep):
    """Start an env process on loopback; a re-run (retry) starts a fresh instance."""

    type: ClassVar[str] = "deploy_env"

    env_type: str
    env_name: str
    options: dict[str, str] = Field(default_factory=dict)
    #: the env server's sandbox limits (its CPU time covers the whole run)
    limits: Limits = ENV_LIMITS

    @field_validator("env_type")
    @classmethod
    def _known_kind(cls, value: str) -> str:
        if value not in ENV_KINDS:
            raise ValueError(f"unknown env type {value!r} (known: {', '.join(sorted(ENV_KINDS))})")
        return value

    async def execute(self, context: TaskStepContext) -> None:
        runtime = context.runtime
        instance = uuid.uuid4().hex[:12]
        workdir = runtime.env_dir(self.env_name, instance)
        started = await asyncio.to_thread(
            start_env, self.env_type, workdir, self.options, self.limits, lifeline=runtime.run.lifeline
        )
        context.deployed_envs = [e for e in context.deployed_envs if e.name != self.env_name] + [
            DeployedEnv(
                name=self.env_name,
                step_id=self.id,
                env_type=self.env_type,
                url=started.url,
                pid=started.pid,
                instance_id=instance,
                started_at=time.time(),
            )
        ]
        runtime.log.info(f"env {self.env_name!r} ({self.env_type}) listening at {started.url}")


class LoadArtifactStep(TaskStep):
    """Load a JSON file (relative to the task file) into an env, e.g. `{"emails": [...]}`."""

    type: ClassVar[str] = "load_artifact"

    env_name: str
    path: RelativePath

    async def execute(self, context: TaskStepContext) -> None:
        source = resolve_inside(context.runtime.base_dir, self.path)
        data = json.loads(source.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f'{self.path}: an artifact is a JSON object, e.g. {{"emails": [...]}}')
        with context.env_client(self.env_name) as client:
            loaded = await asyncio.to_thread(client.load, data)
        context.metadata.setdefault("loaded_artifacts", {})[self.id] = {
            "env_name": self.env_name,
            "path": self.path,
            "loaded": loaded,
        }


class SnapshotEnvStep(TaskStep):
    """Save an env's state as a JSON file under the run's artifacts."""

    type: ClassVar[str] = "snapshot_env"

    env_name: str

    async def execute(self, context: TaskStepContext) -> None:
        runtime = context.runtime
        with context.env_client(self.env_name) as client:
            state = await asyncio.to_thread(client.state)
        relative = f"snapshots/{self.id}-{runtime.attempt}.json"
        atomic_write_text(runtime.artifacts_dir / relative, json.dumps(safe_value(state), indent=2))
        context.metadata.setdefault("snapshots", {})[self.id] = {
            "env_name": self.env_name,
            "path": f"artifacts/{relative}",
        }


class RunCodeStep(TaskStep):
    """Run a Python script (relative to the task file) against an env, confined (see `sandbox`): it
    reaches the env at `$ENV_URL` and nothing else, writes only in its work folder (its current
    directory, kept across retries of the run), and its stdout (JSON when it parses) lands in
    `metadata.script_results[step id]`."""

    type: ClassVar[str] = "run_code"

    env_name: str
    script: RelativePath
    args: list[str] = Field(default_factory=list)
    timeout_seconds: float = Field(default=60.0, gt=0)
    limits: Limits = Limits()

    async def execute(self, context: TaskStepContext) -> None:
        runtime = context.runtime
        script = resolve_inside(runtime.base_dir, self.script)
        env = context.env(self.env_name)
        sandbox = Sandbox(
            runtime.work_dir(self.id),
            self.limits,
            readonly=(script,),  # the script alone, not the folder it is in
            relay=Path(env.url.removeprefix("unix:")),
        )
        done = await run_confined(
            sandbox, [sys.executable, "-I", str(script), *self.args], self.timeout_seconds
        )
        output: Any = done.stdout
        with contextlib.suppress(json.JSONDecodeError):
            output = json.loads(output)
        context.metadata.setdefault("script_results", {})[self.id] = {
            "script": self.script,
            "exit_code": done.exit_code,
            "output": output,
            "stderr": done.stderr[-2000:],
        }
        if done.exit_code != 0:
            raise RuntimeError(f"{self.script} exited with code {done.exit_code}")


class TeardownStep(TaskStep):
    """Stop envs (all, or the named ones). Best effort: a failure to stop is recorded, never raised."""

    type: ClassVar[str] = "teardown"

    env_names: list[str] | None = None

    async def execute(self, context: TaskStepContext) -> None:
        stopped, problems = [], []
        envs = []
        for env in context.deployed_envs:
            if (self.env_names is None or env.name in self.env_names) and not env.stopped:
                try:
                    if env.pid:
                        await astop_process_group(env.pid)
                        ended(env.pid)
                    stopped.append(env.name)
                    env = env.model_copy(update={"stopped": True})
                except OSError as err:
                    problems.append(f"{env.name}: {err}")
            envs.append(env)
        context.deployed_envs = envs
        missing = sorted(set(self.env_names or ()) - {e.name for e in context.deployed_envs})
        problems += [f"{name}: no such env" for name in missing]
        context.metadata.setdefault("teardown", {})[self.id] = {"stopped": stopped, "problems": problems}
