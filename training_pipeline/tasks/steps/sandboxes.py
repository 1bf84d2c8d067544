"""Steps that deploy a sandbox, run commands in it, move files in and out of it, and wait for it.

A sandbox is a folder of the run with limits; each command is a fresh confined process tree
(bubblewrap: no network, no host files but the system's read-only ones and the task folder, the
sandbox folder its only writable place), so state lives in the folder, never in a process.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from training_pipeline.sandbox import Limits, sandbox_mode
from training_pipeline.sandbox.beneath import find_files, is_regular_file
from training_pipeline.tasks.context import DeployedSandbox, TaskStepContext
from training_pipeline.tasks.envs.kinds import ENV_KINDS
from training_pipeline.tasks.sandboxes import Completed, confined, copy_in, copy_out, run_confined
from training_pipeline.tasks.step import RelativePath, TaskStep, resolve_inside

#: at most this many files are collected by one `collect_files` step
MAX_COLLECTED = 200


class DeploySandboxStep(TaskStep):
    """A named sandbox for the run's later steps: its folder (fresh on every deployment, so a retry
    from here starts clean), its limits, and files from the task folder copied in."""

    type: ClassVar[str] = "deploy_sandbox"

    sandbox_name: str
    limits: Limits = Limits()
    #: destination in the sandbox → source, relative to the task file
    files: dict[str, RelativePath] = Field(default_factory=dict)

    async def execute(self, context: TaskStepContext) -> None:
        runtime = context.runtime
        folder = runtime.sandbox_dir(self.sandbox_name, uuid.uuid4().hex[:12])
        folder.mkdir(parents=True)
        for destination, source in self.files.items():
            copy_in(resolve_inside(runtime.base_dir, source), folder, destination)
        context.deployed_sandboxes = [
            s for s in context.deployed_sandboxes if s.name != self.sandbox_name
        ] + [
            DeployedSandbox(
                name=self.sandbox_name,
                step_id=self.id,
                kind=sandbox_mode(),
                path=str(folder),
                limits=self.limits.model_dump(),
            )
        ]


class RunInSandboxStep(TaskStep):
    """Run a command in a deployed sandbox (`python` means the pipeline's interpreter); its exit code,
    stdout and stderr land in `metadata.sandbox_results[step id]`, and an exit code other than
    `expect_exit_code` fails the step (`null`: any)."""

    type: ClassVar[str] = "run_in_sandbox"

    sandbox_name: str
    command: list[str] = Field(min_length=1)
    timeout_seconds: float = Field(default=60.0, gt=0)
    expect_exit_code: int | None = 0

    async def execute(self, context: TaskStepContext) -> None:
        done = await run_confined(confined(context, self.sandbox_name), self.command, self.timeout_seconds)
        context.metadata.setdefault("sandbox_results", {})[self.id] = {
            "sandbox_name": self.sandbox_name,
            "command": self.command,
            **done.to_dict(),
        }
        if self.expect_exit_code is not None and done.exit_code != self.expect_exit_code:
            raise RuntimeError(
                f"{' '.join(self.command)} exited with {done.exit_code} (expected {self.expect_exit_code}): "
                f"{done.stderr[-500:]}"
            )


class UploadFilesStep(TaskStep):
    """Copy files from the task folder into a deployed sandbox."""

    type: ClassVar[str] = "upload_files"

    sandbox_name: str
    #: destination in the sandbox → source, relative to the task file
    files: dict[str, RelativePath] = Field(min_length=1)

    async def execute(self, context: TaskStepContext) -> None:
        folder = Path(context.sandbox(self.sandbox_name).path)
        uploaded = {
            destination: copy_in(resolve_inside(context.runtime.base_dir, source), folder, destination)
            for destination, source in self.files.items()
        }
        context.metadata.setdefault("uploads", {})[self.id] = uploaded


class DownloadFilesStep(TaskStep):
    """Copy named files out of a sandbox into the run's artifacts (`artifacts/<step id>/…`); a missing
    file, a link or anything but a regular file fails the step."""

    type: ClassVar[str] = "download_files"

    sandbox_name: str
    paths: list[str] = Field(min_length=1)

    async def execute(self, context: TaskStepContext) -> None:
        folder = Path(context.sandbox(self.sandbox_name).path)
        target = context.runtime.artifacts_dir / self.id
        copied = {path: copy_out(folder, path, target / path) for path in self.paths}
        context.metadata.setdefault("artifacts", {})[self.id] = [f"artifacts/{self.id}/{p}" for p in copied]


class CollectFilesStep(TaskStep):
    """Copy the sandbox files matching glob patterns (e.g. `reports/**/*.json`) into the run's
    artifacts; links and other non-files are skipped and named, at most 200 files. Only the sandbox's
    folder is walked, and no link in it is followed, whatever the pattern says."""

    type: ClassVar[str] = "collect_files"

    sandbox_name: str
    patterns: list[RelativePath] = Field(min_length=1)

    async def execute(self, context: TaskStepContext) -> None:
        folder = Path(context.sandbox(self.sandbox_name).path)
        target = context.runtime.artifacts_dir / self.id
        collected, skipped = [], []
        # walked through descriptors: no pattern, link or swap leads the walk out of the folder
        for entry in await asyncio.to_thread(find_files, folder, self.patterns):
            if entry.kind != "file" or len(collected) == MAX_COLLECTED:
                skipped.append(entry.relative)
                continue
            try:
                copy_out(folder, entry.relative, target / entry.relative)
                collected.append(f"artifacts/{self.id}/{entry.relative}")
            except (ValueError, OSError):
                skipped.append(entry.relative)
        context.metadata.setdefault("artifacts", {})[self.id] = collected
        if skipped:
            context.metadata.setdefault("skipped_files", {})[self.id] = skipped[:MAX_COLLECTED]


class Condition(BaseModel):
    """One of: a file exists in a sandbox; a command in a sandbox exits 0; an env check passes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sandbox_name: str | None = None
    file_exists: str | None = None
    command: list[str] | None = None
    env_name: str | None = None
    check: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_kind(self) -> Condition:
        kinds = [self.file_exists is not None, self.command is not None, self.check is not None]
        if sum(kinds) != 1:
            raise ValueError("give exactly one of file_exists, command or check")
        if (self.file_exists is not None or self.command is not None) and not self.sandbox_name:
            raise ValueError("file_exists and command need sandbox_name")
        if self.check is not None:
            known = {name for kind in ENV_KINDS.values() for name in kind.checks}
            if not self.env_name:
                raise ValueError("check needs env_name")
            if self.check not in known:
                raise ValueError(f"unknown check {self.check!r} (known: {', '.join(sorted(known))})")
        return self

    async def holds(self, context: TaskStepContext, timeout: float) -> tuple[bool, str]:
        if self.file_exists is not None:
            assert self.sandbox_name is not None
            found = is_regular_file(Path(context.sandbox(self.sandbox_name).path), self.file_exists)
            return found, f"{self.file_exists} exists" if found else "not yet"
        if self.command is not None:
            assert self.sandbox_name is not None
            done: Completed = await run_confined(confined(context, self.sandbox_name), self.command, timeout)
            return done.exit_code == 0, f"exit code {done.exit_code}"
        assert self.env_name is not None and self.check is not None
        kind = ENV_KINDS[context.env(self.env_name).env_type]
        with context.env_client(self.env_name) as client:
            state = await asyncio.to_thread(client.state)
        ok, detail = kind.checks[self.check](state, **self.args)
        return ok, str(detail)


class WaitForStep(TaskStep):
    """Wait until a condition holds, checking every `interval_seconds`; past `timeout_seconds` the step
    fails with the last thing it saw."""

    type: ClassVar[str] = "wait_for"

    condition: Condition
    timeout_seconds: float = Field(default=60.0, gt=0, le=86_400)
    interval_seconds: float = Field(default=0.5, gt=0)

    async def execute(self, context: TaskStepContext) -> None:
        started = time.monotonic()
        checks = 0
        while True:
            left = self.timeout_seconds - (time.monotonic() - started)
            ok, seen = await self.condition.holds(context, max(left, 1.0))
            checks += 1
            if ok:
                context.metadata.setdefault("waits", {})[self.id] = {
                    "seconds": round(time.monotonic() - started, 3),
                    "checks": checks,
                    "seen": seen,
                }
                return
            if time.monotonic() - started + self.interval_seconds > self.timeout_seconds:
                raise TimeoutError(
                    f"condition not met after {self.timeout_seconds}s ({checks} checks): {seen}"
                )
            await asyncio.sleep(self.interval_seconds)
