"""Stage metrics, rolled up as events happen so each event costs O(depth), however wide the tree.

A finished leaf adds its consumption, failure and retries to every ancestor at once (live totals); a
finished child adds its timing and per-substage figures to its parent. `render` turns a stage's
accumulator into the `metrics` of its record, with koog's estimated time to completion (ETC).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from training_pipeline.stages.records import AgentRunRecord, Consumption, PromptExecutionRecord, StageRecord


@dataclass
class Accumulator:
    consumption: Consumption = field(default_factory=Consumption)
    consumption_without_retries: Consumption = field(default_factory=Consumption)
    failures: Counter[str] = field(default_factory=Counter)
    transient_failures: int = 0
    permanent_failures: int = 0
    unknown_failures: int = 0
    retries: int = 0
    retried_leaves: int = 0
    agent_runs: int = 0
    agent_runs_completed: int = 0
    agent_runs_failed: int = 0
    agent_runs_solved: int = 0
    prompts: int = 0
    prompts_failed: int = 0
    finished_children: int = 0
    failed_children: int = 0
    finished_elapsed_sum: float = 0.0
    finished_elapsed_max: float = 0.0
    substage_tokens_min: int | None = None
    substage_tokens_max: int | None = None
    substage_tokens_sum: int = 0
    items_solved: int = 0
    items_unsolved: int = 0
    min_solved_rate: float | None = None
    max_failure_rate: float | None = None
    custom: dict[str, Any] = field(default_factory=dict)

    def add_failure(self, kind: str, transient: bool | None) -> None:
        self.failures[kind] += 1
        if transient is None:
            self.unknown_failures += 1
        elif transient:
            self.transient_failures += 1
        else:
            self.permanent_failures += 1

    def add_leaf(self, leaf: AgentRunRecord | PromptExecutionRecord) -> None:
        """Called on every ancestor of a finished leaf."""
        final = leaf.consumption
        total = final
        for attempt in leaf.previous_attempts:
            total = total.plus(attempt.consumption)
        self.consumption = self.consumption.plus(total)
        self.consumption_without_retries = self.consumption_without_retries.plus(final)
        if leaf.previous_attempts:
            self.retries += len(leaf.previous_attempts)
            self.retried_leaves += 1
        if leaf.failure is not None:
            self.add_failure(leaf.failure.kind, leaf.failure.transient)
        if isinstance(leaf, AgentRunRecord):
            self.agent_runs += 1
            self.agent_runs_completed += leaf.completed
            self.agent_runs_failed += leaf.failure is not None
            self.agent_runs_solved += leaf.solved is True
        else:
            self.prompts += 1
            self.prompts_failed += leaf.failure is not None

    def add_finished_child(
        self,
        child: StageRecord | AgentRunRecord | PromptExecutionRecord,
        child_acc: Accumulator | None,
        solved: bool | None,
    ) -> None:
        """Called on the parent of a finished child (stage or leaf)."""
        self.finished_children += 1
        self.failed_children += child.failure is not None
        elapsed = child.elapsed_seconds or 0.0
        self.finished_elapsed_sum += elapsed
        self.finished_elapsed_max = max(self.finished_elapsed_max, elapsed)
        tokens = child_acc.consumption.total_tokens if child_acc else child.consumption.total_tokens  # type: ignore[union-attr]
        self.substage_tokens_sum += tokens
        self.substage_tokens_min = (
            tokens if self.substage_tokens_min is None else min(self.substage_tokens_min, tokens)
        )
        self.substage_tokens_max = (
            tokens if self.substage_tokens_max is None else max(self.substage_tokens_max, tokens)
        )
        if solved is True:
            self.items_solved += 1
        elif solved is False or child.failure is not None:  # a failed item is not solved
            self.items_unsolved += 1
        if child_acc is not None:
            if child_acc.min_solved_rate is not None:
                self.min_solved_rate = (
                    child_acc.min_solved_rate
                    if self.min_solved_rate is None
                    else min(self.min_solved_rate, child_acc.min_solved_rate)
                )
            if child_acc.max_failure_rate is not None:
                self.max_failure_rate = (
                    child_acc.max_failure_rate
                    if self.max_failure_rate is None
                    else max(self.max_failure_rate, child_acc.max_failure_rate)
                )

    def close_dataset(self) -> None:
        """A dataset stage finished: its own rates join the min/max rolled up to the root."""
        solved, failure = self.solved_rate(), self.failure_rate()
        if solved is not None:
            self.min_solved_rate = (
                solved if self.min_solved_rate is None else min(self.min_solved_rate, solved)
            )
        if failure is not None:
            self.max_failure_rate = (
                failure if self.max_failure_rate is None else max(self.max_failure_rate, failure)
            )

    def solved_rate(self) -> float | None:
        judged = self.items_solved + self.items_unsolved
        return self.items_solved / judged if judged else None

    def failure_rate(self) -> float | None:
        return self.failed_children / self.finished_children if self.finished_children else None


def etc_seconds(stage: StageRecord, accs: dict[int, Accumulator], now: float) -> float | None:
    """koog's rule: the running child's ETC + the average finished child's time × children not yet
    started; without a usable running child, elapsed / finished × remaining. None until a child ends."""
    if stage.finished:
        return 0.0
    acc = accs[id(stage)]
    if not acc.finished_children:
        return None
    average = acc.finished_elapsed_sum / acc.finished_children
    total = stage.substages_total
    not_started = max(total - len(stage.substages), 0) if total is not None else 0
    running = stage.substages[-1] if stage.substages and not stage.substages[-1].finished else None
    if running is not None:
        # a running stage that can estimate itself does; otherwise it is treated like a running leaf
        running_etc = etc_seconds(running, accs, now) if isinstance(running, StageRecord) else None
        if running_etc is None:
            running_etc = max(average - (now - running.started_at), 0.0)
        return running_etc + average * not_started
    remaining = max(total - acc.finished_children, 0) if total is not None else 0
    return (now - stage.started_at) / acc.finished_children * remaining


def render(stage: StageRecord, accs: dict[int, Accumulator], now: float | None = None) -> dict[str, Any]:
    now = time.time() if now is None else now
    acc = accs[id(stage)]
    count = len(stage.substages)
    consumption = acc.consumption
    metrics: dict[str, Any] = {
        "substages": count,
        "substages_finished": acc.finished_children,
        "substages_failed": acc.failed_children,
        "substages_total": stage.substages_total,
        "finished_ratio": acc.finished_children / stage.substages_total
        if stage.substages_total
        else (acc.finished_children / count if count else None),
        "failed_ratio": acc.failure_rate(),
        "elapsed_seconds": stage.elapsed_seconds if stage.finished else now - stage.started_at,
        "avg_substage_seconds": acc.finished_elapsed_sum / acc.finished_children
        if acc.finished_children
        else None,
        "max_substage_seconds": acc.finished_elapsed_max if acc.finished_children else None,
        "etc_seconds": etc_seconds(stage, accs, now),
        "tokens": consumption.total_tokens,
        "prompt_tokens": consumption.prompt_tokens,
        "completion_tokens": consumption.completion_tokens,
        "tokens_without_retries": acc.consumption_without_retries.total_tokens,
        "cost_usd": consumption.cost_usd,
        "cost_usd_without_retries": acc.consumption_without_retries.cost_usd,
        "llm_calls": consumption.calls,
        "substage_tokens_min": acc.substage_tokens_min,
        "substage_tokens_max": acc.substage_tokens_max,
        "substage_tokens_avg": acc.substage_tokens_sum / acc.finished_children
        if acc.finished_children
        else None,
        "failures": sum(acc.failures.values()),
        "failures_by_kind": dict(acc.failures),
        "transient_failures": acc.transient_failures,
        "permanent_failures": acc.permanent_failures,
        "unknown_failures": acc.unknown_failures,
        "retries": acc.retries,
        "retried_leaves": acc.retried_leaves,
        "agent_runs": acc.agent_runs,
        "agent_runs_completed": acc.agent_runs_completed,
        "agent_runs_failed": acc.agent_runs_failed,
        "agent_runs_solved": acc.agent_runs_solved,
        "prompt_executions": acc.prompts,
        "prompt_executions_failed": acc.prompts_failed,
        "min_solved_rate": acc.min_solved_rate,
        "max_failure_rate": acc.max_failure_rate,
    }
    if stage.is_dataset:
        solved = acc.items_solved
        metrics.update(
            {
                "items_solved": solved,
                "solved_rate": acc.solved_rate(),
                "failure_rate": acc.failure_rate(),
                "tokens_per_solved_item": consumption.total_tokens / solved if solved else None,
            }
        )
    metrics.update(acc.custom)
    return metrics
