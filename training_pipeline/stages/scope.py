"""The Stage DSL: nested stages, agent runs and prompt executions that record themselves.

Fallible operations return a `Result`; a failure is recorded in the tree (and rolled up) before anything
is raised, and the `*_or_raise` variants raise it afterwards. A stage is appended to its parent before
its block runs, so the tree always shows what is running.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import copy_context
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from training_pipeline.stages.host import StageHost
from training_pipeline.stages.records import AgentRunRecord, PromptExecutionRecord, StageRecord
from training_pipeline.stages.retry import RetryPolicy

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


class SpendCapExceeded(RuntimeError):
    """The session's budget is spent: the session stops (once) and its partial tree is kept."""


class RunUntil(enum.Enum):
    SOLVED = "solved"
    COMPLETED = "completed"


@dataclass(frozen=True)
class AgentOutcome:
    """What an agent returns for an item: its output and, when it can tell, whether the item is solved."""

    output: Any
    solved: bool | None = None


@dataclass(frozen=True)
class Result(Generic[T]):
    value: T | None = None
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def get_or_raise(self) -> T:
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[return-value]


class StageScope:
    def __init__(self, session: StageHost, record: StageRecord, path: tuple[StageRecord, ...]) -> None:
        self._session = session
        self.record = record
        self._path = path  # root .. this stage

    # -- defaults ---------------------------------------------------------------------------------------
    @property
    def dataset(self) -> Sequence[Any]:
        return self._session.dataset

    @property
    def tracked_agent(self) -> Callable[[Any], Any] | None:
        return self._session.tracked_agent

    # -- stages -----------------------------------------------------------------------------------------
    def run_stage(
        self,
        name: str,
        block: Callable[[StageScope], T],
        *,
        substages_total: int | None = None,
        is_dataset: bool = False,
    ) -> Result[T]:
        self._session.check_budget()
        record = StageRecord(
            name=name, started_at=time.time(), substages_total=substages_total, is_dataset=is_dataset
        )
        self._session.open_stage(self._path, record)
        return self._run_in(StageScope(self._session, record, (*self._path, record)), block)

    def _run_in(self, child: StageScope, block: Callable[[StageScope], T]) -> Result[T]:
        """Run `block` in the already-appended stage `child`; record its end, success or failure."""
        record = child.record
        try:
            value = block(child)
        except SpendCapExceeded as err:
            self._session.close_stage(
                self._path, record, self._session.failure_of(err, child._path), solved=None
            )
            raise
        except Exception as err:
            self._session.close_stage(
                self._path, record, self._session.failure_of(err, child._path), solved=None
            )
            return Result(error=err)
        self._session.close_stage(self._path, record, None, solved=_solved_of(value))
        return Result(value)

    def run_stage_or_raise(self, name: str, block: Callable[[StageScope], T], **kwargs: Any) -> T:
        return self.run_stage(name, block, **kwargs).get_or_raise()

    def map_iterable_stage(
        self,
        name: str,
        items: Iterable[Any],
        block: Callable[[StageScope, Any], T],
        item_name: Callable[[Any], str] = str,
    ) -> Result[list[T]]:
        """A stage with one substage per item (so ETC is known from the start); the results in order."""
        items = list(items)

        def run(scope: StageScope) -> list[T]:
            return [
                scope.run_stage_or_raise(item_name(item), lambda s, it=item: block(s, it)) for item in items
            ]

        return self.run_stage(name, run, substages_total=len(items))

    def run_iterable_stage(
        self,
        name: str,
        items: Iterable[Any],
        block: Callable[[StageScope, Any], Any],
        item_name: Callable[[Any], str] = str,
    ) -> Result[None]:
        result = self.map_iterable_stage(name, items, block, item_name)
        return Result(None, result.error)

    def parallel_map(
        self,
        name: str,
        items: Iterable[Any],
        block: Callable[[StageScope, Any], T],
        *,
        max_concurrency: int = 4,
        item_name: Callable[[Any], str] = str,
    ) -> Result[list[T]]:
        """Like `map_iterable_stage`, up to `max_concurrency` items at once; substages are appended in
        item order whatever finishes first, and each item's LLM usage is attributed to its own leaf."""
        items = list(items)

        def run(scope: StageScope) -> list[T]:
            slots = [scope._reserve(item_name(item)) for item in items]
            with ThreadPoolExecutor(max_workers=max(1, max_concurrency)) as pool:
                futures = [
                    pool.submit(
                        copy_context().run, scope._run_reserved, slot, lambda s, it=item: block(s, it)
                    )
                    for slot, item in zip(slots, items, strict=True)
                ]
                results = [f.result() for f in futures]
            return [r.get_or_raise() for r in results]

        return self.run_stage(name, run, substages_total=len(items))

    def _reserve(self, name: str) -> StageRecord:
        record = StageRecord(name=name, started_at=time.time())
        self._session.open_stage(self._path, record, announce=False)
        return record

    def _run_reserved(self, record: StageRecord, block: Callable[[StageScope], T]) -> Result[T]:
        record.started_at = time.time()  # it waited in line until now
        return self._run_in(StageScope(self._session, record, (*self._path, record)), block)

    def iterate_dataset(
        self,
        block: Callable[[StageScope, Any], Any],
        dataset: Sequence[Any] | None = None,
        *,
        name: str = "dataset",
        early_stop: Callable[[dict[str, Any]], bool] | None = None,
        failure_rate_threshold: float = 0.9,
        min_items_for_threshold: int = 5,
        item_name: Callable[[Any], str] = str,
    ) -> Result[list[Any]]:
        """One substage per item with solved-rate metrics. Stops early when `early_stop(metrics)` says
        so, and fails once the failure rate passes `failure_rate_threshold` (after a few items)."""
        items = list(self.dataset if dataset is None else dataset)

        def run(scope: StageScope) -> list[Any]:
            outputs = []
            for item in items:
                result = scope.run_stage(item_name(item), lambda s, it=item: block(s, it))
                outputs.append(result.value)
                metrics = scope._session.metrics_of(scope.record)
                rate = metrics["failure_rate"] or 0.0
                if metrics["substages_finished"] >= min_items_for_threshold and rate > failure_rate_threshold:
                    raise RuntimeError(
                        f"failure rate {rate:.0%} passed {failure_rate_threshold:.0%} in {name}"
                    )
                if early_stop is not None and early_stop(metrics):
                    scope.log_action("early_stop", after_items=metrics["substages_finished"])
                    break
            return outputs

        return self.run_stage(name, run, substages_total=len(items), is_dataset=True)

    # -- leaves -----------------------------------------------------------------------------------------
    def run_agent(
        self,
        item: Any,
        agent: Callable[[Any], Any] | None = None,
        *,
        name: str = "agent",
        retry: RetryPolicy | None = None,
    ) -> Result[AgentOutcome]:
        agent = agent or self.tracked_agent
        if agent is None:
            raise ValueError("run_agent needs an agent: pass one or set the session's tracked_agent")
        leaf = AgentRunRecord(name=name, started_at=time.time(), item=_short(item))
        value, error = self._session.run_leaf(self._path, leaf, lambda: _outcome(agent(item)), retry)
        if value is not None:
            leaf.solved = value.solved
        self._session.finish_leaf(self._path, leaf, error)
        return Result(value, error)

    def run_agent_or_raise(
        self, item: Any, agent: Callable[[Any], Any] | None = None, **kwargs: Any
    ) -> AgentOutcome:
        return self.run_agent(item, agent, **kwargs).get_or_raise()

    def run_agent_with_retries(
        self,
        item: Any,
        max_attempts: int,
        until: RunUntil = RunUntil.SOLVED,
        agent_provider: Callable[[], Callable[[Any], Any]] | None = None,
    ) -> Result[AgentOutcome]:
        """Re-sample: up to `max_attempts` runs (a fresh agent each, from `agent_provider`), returning the
        first whose outcome satisfies `until`. Meant for intentional re-sampling, not transient errors."""

        def attempts(scope: StageScope) -> AgentOutcome | None:
            last: AgentOutcome | None = None
            for attempt in range(1, max_attempts + 1):
                agent = agent_provider() if agent_provider else None
                result = scope.run_agent(item, agent, name=f"attempt {attempt}")
                if result.ok:
                    last = result.value
                    if until is RunUntil.COMPLETED or (last is not None and last.solved):
                        return last
            if last is None:
                raise RuntimeError(f"all {max_attempts} attempts failed")
            return last

        result = self.run_stage(f"resample {_short(item, 40)}", attempts, substages_total=max_attempts)
        return Result(result.value, result.error)

    def execute_prompt(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        name: str = "prompt",
        llm: Any = None,
        retry: RetryPolicy | None = None,
        **chat: Any,
    ) -> Result[Any]:
        client = llm or self._session.llm
        if client is None:
            raise ValueError("execute_prompt needs an LLM client: pass one or give the session one")
        leaf = PromptExecutionRecord(name=name, started_at=time.time())
        value, error = self._session.run_leaf(self._path, leaf, lambda: client.chat(messages, **chat), retry)
        self._session.finish_leaf(self._path, leaf, error)
        return Result(value, error)

    def execute_prompt_or_raise(self, messages: Sequence[dict[str, Any]], **kwargs: Any) -> Any:
        return self.execute_prompt(messages, **kwargs).get_or_raise()

    def execute_prompt_structured(
        self,
        messages: Sequence[dict[str, Any]],
        model: type[M],
        *,
        name: str = "structured prompt",
        llm: Any = None,
        retry: RetryPolicy | None = None,
        **chat: Any,
    ) -> Result[M]:
        """JSON mode, parsed into `model`; a reply that does not validate is a recorded failure."""
        client = llm or self._session.llm
        if client is None:
            raise ValueError("execute_prompt_structured needs an LLM client")
        leaf = PromptExecutionRecord(name=name, started_at=time.time())

        def call() -> M:
            response = client.chat(messages, json_mode=True, **chat)
            return model.model_validate_json(response.content or "")

        value, error = self._session.run_leaf(self._path, leaf, call, retry)
        self._session.finish_leaf(self._path, leaf, error)
        return Result(value, error)

    def execute_prompt_structured_or_raise(
        self, messages: Sequence[dict[str, Any]], model: type[M], **kwargs: Any
    ) -> M:
        return self.execute_prompt_structured(messages, model, **kwargs).get_or_raise()

    # -- annotations ------------------------------------------------------------------------------------
    def log_action(self, action: str, **details: Any) -> None:
        self.record.action_log.append({"action": action, "at": time.time(), **details})

    def record_custom_metric(self, name: str, value: Any) -> None:
        self._session.set_custom_metric(self.record, name, value)

    def set_additional_data(self, data: Any) -> None:
        self.record.additional_data = data


def _outcome(value: Any) -> AgentOutcome:
    return value if isinstance(value, AgentOutcome) else AgentOutcome(value)


def _solved_of(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, AgentOutcome):
        return value.solved
    return None


def _short(item: Any, limit: int = 200) -> str:
    text = str(item)
    return text if len(text) <= limit else text[: limit - 1] + "…"
