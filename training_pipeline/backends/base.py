"""What every training backend receives and returns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol


class BackendError(RuntimeError):
    """A real failure (bad data, refused upload, failed job): the run fails with this reason."""


@dataclass(frozen=True)
class DispatchRequest:
    task: str
    dataset_path: Path  # elizaOS-format JSONL ({"messages": [system, user, model]})
    work_dir: Path  # a folder of this run's own for converted files and logs
    run_id: str
    log: Callable[[str], None] = print
    #: the scorer the task is judged by (`optimizers.scoring`), for backends that score (native)
    scorer: str | None = None


@dataclass
class DispatchResult:
    """`invoked=False` is a skip (the backend declined, e.g. not configured), never a failure."""

    invoked: bool
    #: Why the backend declined, when it did (shown as the run record's reason).
    reason: str | None = None
    artifact_path: str | None = None
    notes: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


class Backend(Protocol):
    def dispatch(self, request: DispatchRequest) -> DispatchResult: ...
