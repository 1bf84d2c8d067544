"""What a `StageScope` asks of the session that owns its tree, as a protocol: the scope records and
runs, the session (`TrainingSession`) keeps the tree, its metrics, the budget and the lock. Written
out so that the scope depends on this contract and not on the session, which builds scopes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from training_pipeline.stages.records import FailureInfo, LeafRecord, StageRecord
from training_pipeline.stages.retry import RetryPolicy


class StageHost(Protocol):
    llm: Any
    dataset: Sequence[Any]
    tracked_agent: Callable[[Any], Any] | None

    def check_budget(self) -> None:
        """Raises `SpendCapExceeded` once the budget is spent."""

    def open_stage(self, path: tuple[StageRecord, ...], record: StageRecord, announce: bool = True) -> None:
        """Appends `record` under the last stage of `path`, so the tree shows it running."""

    def close_stage(
        self,
        path: tuple[StageRecord, ...],
        record: StageRecord,
        failure: FailureInfo | None,
        solved: bool | None,
    ) -> None: ...

    def failure_of(self, error: BaseException, path: Sequence[StageRecord]) -> FailureInfo: ...

    def run_leaf(
        self,
        path: tuple[StageRecord, ...],
        leaf: LeafRecord,
        call: Callable[[], Any],
        retry: RetryPolicy | None,
    ) -> tuple[Any, BaseException | None]: ...

    def finish_leaf(
        self, path: tuple[StageRecord, ...], leaf: LeafRecord, error: BaseException | None
    ) -> None: ...

    def metrics_of(self, record: StageRecord) -> dict[str, Any]: ...

    def set_custom_metric(self, record: StageRecord, name: str, value: Any) -> None: ...
