"""A training session: the root of a records tree, its persistence, its logs and its budget.

    with TrainingSession("optimise response", records_path=..., llm=client) as root:
        root.run_stage("baseline", lambda s: ...)

The tree is written atomically to `training_records.json`, at most every `flush_interval_seconds` and
at the end; stage start/finish lines (with the root's ETC) go to `log`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from training_pipeline.atomic import atomic_write_text
from training_pipeline.llm.usage import capture_usage
from training_pipeline.stages.metrics import Accumulator, render
from training_pipeline.stages.records import (
    AgentRunRecord,
    Attempt,
    Consumption,
    FailureInfo,
    LeafRecord,
    StageRecord,
)
from training_pipeline.stages.retry import FailureAnalyser, RetryPolicy, default_analyser
from training_pipeline.stages.scope import SpendCapExceeded, StageScope


@dataclass(frozen=True)
class Budget:
    """A spend cap: the session stops at the first leaf that takes it past any limit."""

    max_tokens: int | None = None
    max_usd: float | None = None
    max_calls: int | None = None

    def exceeded(self, spent: Consumption) -> str | None:
        if self.max_tokens is not None and spent.total_tokens > self.max_tokens:
            return f"{spent.total_tokens} tokens > cap {self.max_tokens}"
        if self.max_usd is not None and (spent.cost_usd or 0.0) > self.max_usd:
            return f"${spent.cost_usd:.4f} > cap ${self.max_usd:.4f}"
        if self.max_calls is not None and spent.calls > self.max_calls:
            return f"{spent.calls} LLM calls > cap {self.max_calls}"
        return None


class TrainingSession:
    def __init__(
        self,
        name: str,
        *,
        records_path: Path | None = None,
        llm: Any = None,
        dataset: Sequence[Any] = (),
        tracked_agent: Callable[[Any], Any] | None = None,
        budget: Budget | None = None,
        analyser: FailureAnalyser = default_analyser,
        log: Callable[[str], None] = lambda line: None,
        flush_interval_seconds: float = 2.0,
    ) -> None:
        self.llm, self.dataset, self.tracked_agent = llm, dataset, tracked_agent
        self.records_path = records_path
        self.budget = budget
        self.analyser = analyser
        self._log = log
        self._flush_interval = flush_interval_seconds
        self._last_flush = 0.0
        self._lock = threading.RLock()
        self._accs: dict[int, Accumulator] = {}
        self.root = StageRecord(name=name, started_at=time.time())
        self._accs[id(self.root)] = Accumulator()
        self.aborted: str | None = None

    # -- lifecycle --------------------------------------------------------------------------------------
    def __enter__(self) -> StageScope:
        self._log(f"▶ {self.root.name}")
        return StageScope(self, self.root, (self.root,))

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        with self._lock:
            self.root.finished = True
            self.root.elapsed_seconds = time.time() - self.root.started_at
            if error is not None and self.root.failure is None:
                self.root.failure = self.failure_of(error, (self.root,))
            self.root.metrics = render(self.root, self._accs)
        self.write()
        self._log(f"■ {self.root.name} in {self.root.elapsed_seconds:.1f}s")

    def write(self) -> None:
        if self.records_path is None:
            return
        with self._lock:
            self._rerender_running(self.root)
            text = self.root.model_dump_json(indent=1)
        atomic_write_text(self.records_path, text)
        self._last_flush = time.time()

    def _maybe_flush(self) -> None:
        if self.records_path is not None and time.time() - self._last_flush >= self._flush_interval:
            self.write()

    def _rerender_running(self, stage: StageRecord) -> None:
        if not stage.finished:
            stage.metrics = render(stage, self._accs)
        for child in stage.substages:
            if isinstance(child, StageRecord) and not child.finished:
                self._rerender_running(child)

    # -- stages -----------------------------------------------------------------------------------------
    def open_stage(self, path: tuple[StageRecord, ...], record: StageRecord, announce: bool = True) -> None:
        with self._lock:
            path[-1].substages.append(record)
            self._accs[id(record)] = Accumulator()
            self._rerender(path)
        if announce:
            self._log(f"▶ {' / '.join(s.name for s in (*path[1:], record))}")
        self._maybe_flush()

    def close_stage(
        self,
        path: tuple[StageRecord, ...],
        record: StageRecord,
        failure: FailureInfo | None,
        solved: bool | None,
    ) -> None:
        with self._lock:
            record.finished = True
            record.elapsed_seconds = time.time() - record.started_at
            record.failure = failure
            acc = self._accs[id(record)]
            if record.is_dataset:
                acc.close_dataset()
            record.metrics = render(record, self._accs)
            self._accs[id(path[-1])].add_finished_child(record, acc, solved)
            self._rerender(path)
            etc = self.root.metrics.get("etc_seconds")
        status = f"failed: {failure.message[:120]}" if failure else "done"
        eta = f", ETC {etc:.0f}s" if isinstance(etc, float) else ""
        where = " / ".join(s.name for s in (*path[1:], record))
        self._log(f"■ {where} {status} in {record.elapsed_seconds:.1f}s{eta}")
        self._maybe_flush()

    def failure_of(self, error: BaseException, path: Sequence[StageRecord]) -> FailureInfo:
        """The failure of the last stage of `path`, counted in the breakdown of it and its ancestors
        unless a leaf (or a deeper stage) already counted this same error."""
        info = self.analyser(error)
        if not getattr(error, "_recorded_by_leaf", False):
            with self._lock:
                for stage in path:
                    self._accs[id(stage)].add_failure(info.kind, info.transient)
            error._recorded_by_leaf = True  # type: ignore[attr-defined]  # count once per error
        return info

    # -- leaves -----------------------------------------------------------------------------------------
    def run_leaf(
        self,
        path: tuple[StageRecord, ...],
        leaf: LeafRecord,
        call: Callable[[], Any],
        retry: RetryPolicy | None,
    ) -> tuple[Any, BaseException | None]:
        self.check_budget()
        with self._lock:
            path[-1].substages.append(leaf)
        attempt = 0
        while True:
            attempt += 1
            started = time.time()
            with capture_usage() as sink:
                try:
                    value = call()
                except Exception as err:
                    error: BaseException | None = err
                    value = None
                else:
                    error = None
            consumption = sink.usage.model_copy()
            if error is None:
                leaf.completed, leaf.consumption = True, consumption
                return value, None
            info = (retry.analyser if retry else self.analyser)(error)
            if retry is not None and retry.should_retry(info, attempt):
                leaf.previous_attempts.append(
                    Attempt(failure=info, elapsed_seconds=time.time() - started, consumption=consumption)
                )
                time.sleep(retry.delay(attempt))
                continue
            leaf.failure, leaf.consumption = info, consumption
            error._recorded_by_leaf = True  # type: ignore[attr-defined]
            return None, error

    def finish_leaf(
        self, path: tuple[StageRecord, ...], leaf: LeafRecord, error: BaseException | None
    ) -> None:
        with self._lock:
            leaf.finished = True
            leaf.elapsed_seconds = time.time() - leaf.started_at
            for stage in path:
                self._accs[id(stage)].add_leaf(leaf)
            solved = leaf.solved if isinstance(leaf, AgentRunRecord) else None
            self._accs[id(path[-1])].add_finished_child(leaf, None, solved)
            self._rerender(path)
            spent = self._accs[id(self.root)].consumption
        self._maybe_flush()
        if self.budget is not None and self.aborted is None and (why := self.budget.exceeded(spent)):
            self.aborted = why
            self._log(f"spend cap reached: {why}; stopping the session")
            raise SpendCapExceeded(f"spend cap reached: {why}")

    def check_budget(self) -> None:
        if self.aborted is not None:
            raise SpendCapExceeded(f"session stopped: spend cap reached ({self.aborted})")

    # -- metrics ----------------------------------------------------------------------------------------
    def _rerender(self, path: Sequence[StageRecord]) -> None:
        now = time.time()
        for stage in path:
            stage.metrics = render(stage, self._accs, now)

    def metrics_of(self, record: StageRecord) -> dict[str, Any]:
        with self._lock:
            return render(record, self._accs)

    def set_custom_metric(self, record: StageRecord, name: str, value: Any) -> None:
        with self._lock:
            self._accs[id(record)].custom[name] = value
            record.metrics = render(record, self._accs)

    def numeric_metrics(self) -> dict[str, float]:
        return self.root.numeric_metrics()
