"""What a running step can reach besides the context: its run's store and folders, the LLM, the
trajectory sink and the log. Built by the Dagster op (or a test) around each step execution."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from training_pipeline.llm.client import ChatClient
from training_pipeline.llm.local import LocalModelServer
from training_pipeline.privacy.stored import SafeLog, safe_value
from training_pipeline.processes import Owner
from training_pipeline.tasks.run_store import PROCESS_FLAG, ContextStore

if TYPE_CHECKING:
    from training_pipeline.tasks.task import Task


class LLMSettings(Protocol):
    """What `LLMResource` offers; a Protocol so the core does not import Dagster."""

    base_url: str | None
    local_model: bool

    def available(self) -> bool: ...

    def client(self, cache_all_temperatures: bool = False) -> ChatClient: ...

    def local_client(self, base_url: str) -> ChatClient: ...

    def context(self) -> int: ...


#: The run's store, in its folder (a continuation reads its parent's by this name).
STORE_FILE_NAME = "context.db"
#: The folders of a run that hold what its steps made (env state, artifacts, work folders): a
#: continuation copies them, and the run's end scrubs them.
STEP_OUTPUT_FOLDERS = ("envs", "artifacts", "work", "sandboxes")


@dataclass(frozen=True)
class Continuation:
    """This run re-executes `rerun`, steps of the finished run `parent_run_id` (whose folder is
    `parent_dir`), and starts from that run's context without what those steps did."""

    parent_run_id: str
    parent_dir: Path
    rerun: frozenset[str]


@dataclass
class TaskRun:
    task: Task
    run_id: str
    run_dir: Path
    llm: LLMSettings | None = None
    write_trajectory: Callable[[dict[str, Any]], None] | None = None
    log: logging.Logger | Any = field(default_factory=lambda: logging.getLogger("training_pipeline.tasks"))
    overrides: dict[str, Any] = field(default_factory=dict)
    step_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    continues: Continuation | None = None
    #: whose death ends what the run starts to outlive a step (its envs, the local model), killed or
    #: not: this process when every step runs in it (Dagster's async and in-process executors), its
    #: parent when each step has a process the run's process started (the multiprocess executor);
    #: None when the run's process is elsewhere (Celery): its end, or an env's time to live, stops them
    lifeline: Owner | None = None

    def __post_init__(self) -> None:
        self.store = ContextStore(self.run_dir / STORE_FILE_NAME)
        self.log = SafeLog(self.log)  # what a step logs may quote what it read

    def env_dir(self, env_name: str, instance_id: str) -> Path:
        """Where an env instance keeps its state: made by `deploy_env`, reused when a continuation
        starts the env again."""
        return self.run_dir / "envs" / f"{env_name}-{instance_id}"

    def work_dir(self, step_id: str) -> Path:
        """A confined step's only writable folder: kept across its retries, and copied into a
        re-execution of the run."""
        return self.run_dir / "work" / step_id

    def sandbox_dir(self, name: str, instance_id: str) -> Path:
        """A deployed sandbox's folder: what its commands leave there, the next ones find."""
        return self.run_dir / "sandboxes" / f"{name}-{instance_id}"

    def chat_client(self) -> ChatClient:
        """The run's LLM: the configured server, else the local model, started once per run (the first
        step that needs it starts it; the run stops it at the end)."""
        if self.llm is None or not self.llm.available():
            raise RuntimeError(
                "this step needs an LLM: run `make local-llm` (the bundled local model), or set LLM_BASE_URL"
            )
        if self.llm.base_url:
            return self.llm.client()
        return self.llm.local_client(self._local_model_url(self.llm.context()))

    def _local_model_url(self, context_tokens: int) -> str:
        store = self.store
        if store.take_flag("local_llm", "starting"):
            try:
                # with a process per step, later steps' processes use it: not this one's to end
                server = LocalModelServer(context_size=context_tokens).start(lifeline=self.lifeline)
            except Exception:
                store.drop_flag("local_llm")
                raise
            store.set_flag(f"{PROCESS_FLAG}local_llm", str(server.pid))
            store.set_flag("local_llm", server.base_url)
        deadline = time.monotonic() + 180
        while (url := store.flag("local_llm")) == "starting" and time.monotonic() < deadline:
            time.sleep(0.2)
        if url is None or url == "starting":
            raise RuntimeError("the local model did not start")
        return url


@dataclass
class StepRuntime:
    run: TaskRun
    step_id: str
    attempt: int

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @property
    def task_name(self) -> str:
        return self.run.task.name

    def env_dir(self, env_name: str, instance_id: str) -> Path:
        return self.run.env_dir(env_name, instance_id)

    def work_dir(self, step_id: str) -> Path:
        return self.run.work_dir(step_id)

    def sandbox_dir(self, name: str, instance_id: str) -> Path:
        return self.run.sandbox_dir(name, instance_id)

    @property
    def base_dir(self) -> Path:
        """Where the task file's relative paths resolve."""
        return self.run.task.base_dir

    @property
    def artifacts_dir(self) -> Path:
        return self.run.run_dir / "artifacts"

    @property
    def log(self) -> Any:
        return self.run.log

    def chat_client(self) -> ChatClient:
        return self.run.chat_client()

    def write_trajectory(self, trajectory: dict[str, Any]) -> bool:
        if self.run.write_trajectory is None:
            return False
        self.run.write_trajectory(safe_value(trajectory))
        return True
