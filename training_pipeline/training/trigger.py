"""The threshold trigger's memory, kept in the sensor's cursor so it survives daemon restarts.

Per task (one of elizaOS's five, or a trace dataset): examples counted since its last threshold run, by
day. A day counted again (a re-materialised
partition, a backfill over days already seen) replaces its earlier count instead of adding to it, so
nothing is counted twice; a threshold run that finishes (succeeded, skipped or failed) resets the task,
as elizaOS's trigger service does.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime

from training_pipeline.datasets.training_tasks import TASKS
from training_pipeline.training.policy import TrainingPolicy


@dataclass
class TaskCounter:
    after_storage_id: int = 0  # last materialisation event read for this task
    days: dict[str, int] = field(default_factory=dict)  # day -> examples, since the last threshold run
    fired_run_key: str | None = None  # the threshold run in flight, if any
    fired: int = 0  # how many threshold runs so far (makes run keys unique)

    @property
    def count(self) -> int:
        return sum(self.days.values())


@dataclass
class TriggerState:
    tasks: dict[str, TaskCounter] = field(default_factory=lambda: {t: TaskCounter() for t in TASKS})

    @classmethod
    def from_cursor(cls, cursor: str | None, names: Sequence[str] = TASKS) -> TriggerState:
        """The state in `cursor`, counting `names` (a name the cursor lacks starts at zero; one the
        deployment no longer has is dropped)."""
        state = cls({name: TaskCounter() for name in names})
        if cursor:
            for task, raw in json.loads(cursor).get("tasks", {}).items():
                if task in state.tasks:
                    state.tasks[task] = TaskCounter(**raw)
        return state

    def to_cursor(self) -> str:
        return json.dumps({"tasks": {t: asdict(c) for t, c in self.tasks.items()}}, sort_keys=True)

    def record(self, task: str, storage_id: int, day: str | None, examples: int, counting: bool) -> None:
        counter = self.tasks[task]
        counter.after_storage_id = max(counter.after_storage_id, storage_id)
        if counting and day is not None:
            counter.days[day] = examples

    def reset(self, task: str) -> None:
        counter = self.tasks[task]
        counter.days, counter.fired_run_key = {}, None

    def ready(
        self,
        policy: TrainingPolicy,
        now: datetime,
        in_flight: set[str],
        last_finished: dict[str, datetime],
    ) -> list[str]:
        """Tasks to fire now, most examples first: at or over threshold, past cooldown, none in flight."""
        ready = []
        for task, counter in self.tasks.items():
            task_policy = policy.for_task(task)  # type: ignore[arg-type]
            if counter.fired_run_key or task in in_flight or counter.count < task_policy.threshold:
                continue
            finished = last_finished.get(task)
            if finished and (now - finished).total_seconds() < task_policy.cooldown_seconds:
                continue
            ready.append(task)
        return sorted(ready, key=lambda t: -self.tasks[t].count)
