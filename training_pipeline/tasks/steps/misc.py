"""Steps that shape a run rather than act on an env: collecting artifacts and waiting."""

from __future__ import annotations

import asyncio
import json
from typing import ClassVar

from pydantic import Field

from training_pipeline.atomic import atomic_write_text
from training_pipeline.privacy.stored import safe_value
from training_pipeline.tasks.context import TaskStepContext
from training_pipeline.tasks.step import TaskStep


class CollectArtifactsStep(TaskStep):
    """Write the prompt responses and each env's final state as files under the run's artifacts."""

    type: ClassVar[str] = "collect_artifacts"

    prompt_ids: list[str] | None = None
    env_names: list[str] | None = None

    async def execute(self, context: TaskStepContext) -> None:
        runtime = context.runtime
        folder = runtime.artifacts_dir / self.id
        written = []
        responses = [
            r.model_dump(mode="json")
            for r in context.prompt_responses
            if self.prompt_ids is None or r.prompt_id in self.prompt_ids
        ]
        atomic_write_text(folder / "prompt_responses.json", json.dumps(safe_value(responses), indent=2))
        written.append(f"artifacts/{self.id}/prompt_responses.json")
        for env in context.deployed_envs:
            if env.stopped or (self.env_names is not None and env.name not in self.env_names):
                continue
            with context.env_client(env.name) as client:
                state = await asyncio.to_thread(client.state)
            atomic_write_text(folder / f"env-{env.name}.json", json.dumps(safe_value(state), indent=2))
            written.append(f"artifacts/{self.id}/env-{env.name}.json")
        context.metadata.setdefault("artifacts", {})[self.id] = written


class WaitStep(TaskStep):
    """Wait, e.g. for an env to settle (also the unit of the concurrency benchmark)."""

    type: ClassVar[str] = "wait"

    seconds: float = Field(ge=0, le=86_400)

    async def execute(self, context: TaskStepContext) -> None:
        await asyncio.sleep(self.seconds)
