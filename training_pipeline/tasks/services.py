"""What a running step may use besides the context: its run's identity and folders, the LLM, the
trajectory sink and the log. A Protocol, so the context and the steps know the shape without importing
the runtime that provides it (`runtime.StepRuntime`), which keeps the steps below the runtime."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from training_pipeline.llm.client import ChatClient


class StepServices(Protocol):
    @property
    def run_id(self) -> str: ...

    @property
    def task_name(self) -> str: ...

    @property
    def attempt(self) -> int: ...

    @property
    def base_dir(self) -> Path:
        """Where the task file's relative paths resolve."""
        ...

    @property
    def artifacts_dir(self) -> Path: ...

    @property
    def log(self) -> Any: ...

    def chat_client(self) -> ChatClient: ...

    def write_trajectory(self, trajectory: dict[str, Any]) -> bool: ...

    def env_dir(self, env_name: str, instance_id: str) -> Path: ...

    def work_dir(self, step_id: str) -> Path: ...

    def sandbox_dir(self, name: str, instance_id: str) -> Path: ...
