"""What every training backend receives and returns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol


class BackendError(RuntimeError):
    """A real failure (bad data, refused upload, failed job): the run fails with this reason."""


#: what a training file's lines are: elizaOS's three messages, or OpenAI chat (a trace dataset's:
#: multi-turn, with tools); not `datasets.formats.DatasetFormat`, the extra forms a build writes
ExampleFormat = Literal["elizaos", "openai-chat"]


@dataclass(frozen=True)
class DispatchRequest:
    #: what is trained: one of elizaOS's five tasks, or a trace dataset (`chat`, `tool_use`, a route's)
    task: str
    #: JSONL in `format`: elizaOS's `{"messages": [system, user, model]}`, or OpenAI chat (multi-turn
    #: `messages` with `tool_calls` and `tool` results, and the `tools` offered)
    dataset_path: Path
    work_dir: Path  # a folder of this run's own for converted files and logs
    run_id: str
    log: Callable[[str], None] = print
    #: the scorer the task is judged by (`optimizers.scoring`), for backends that score (native)
    scorer: str | None = None
    format: ExampleFormat = "elizaos"
    #: examples the service validates on while it trains, in `format` (None: the window trained whole)
    validation_path: Path | None = None


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
