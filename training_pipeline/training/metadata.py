"""Markdown renderings of a training run's results, for the UI's metadata panels."""

from __future__ import annotations

from typing import Any

from training_pipeline.stages.records import StageRecord
from training_pipeline.training.promotion import Verdict


def records_preview(tree: StageRecord, most: int = 30) -> str:
    """The top of the records tree as a small table: each top-level stage (one per seed) and the
    stages in it, their status and cost."""
    rows = ["| stage | status | seconds | tokens |", "|---|---|---:|---:|"]
    shown = []
    for stage in tree.substages:
        shown.append((stage.name, stage))
        if isinstance(stage, StageRecord):
            shown += [
                (f"{stage.name} › {inner.name}", inner)
                for inner in stage.substages
                if isinstance(inner, StageRecord)
            ]
    for name, stage in shown[:most]:
        status = "failed" if stage.failure else ("done" if stage.finished else "running")
        tokens = (
            stage.metrics.get("tokens", 0)
            if isinstance(stage, StageRecord)
            else stage.consumption.total_tokens
        )
        rows.append(f"| {name} | {status} | {stage.elapsed_seconds or 0:.1f} | {tokens} |")
    return "\n".join(rows)


def score_chart(lineage: list[dict]) -> str:
    """Best score of each round as a Markdown bar chart (training minibatches and validation, where
    candidates were chosen, then the final test)."""
    best: dict[str, tuple[str, float]] = {}
    for entry in lineage:
        key = f"{entry['round']} ({entry['split']})"
        if key not in best or entry["score"] > best[key][1]:
            best[key] = (entry.get("notes", ""), entry["score"])
    rows = ["| round | best score | |", "|---|---:|---|"]
    rows += [f"| {key} | {score:.3f} | {'█' * round(score * 20)} |" for key, (_, score) in best.items()]
    return "\n".join(rows)


def gate_table(verdict: Verdict) -> str:
    """The promotion gate's numbers and decision."""
    decision = "**promoted**" if verdict.promoted else "**rejected**"
    reference = "n/a" if verdict.reference is None else f"{verdict.reference:.3f}"
    seeds = (
        "one"
        if verdict.seeds_gain is None
        else f"{verdict.seeds}: {verdict.seeds_gain:+.3f} "
        f"[{verdict.seeds_low:+.3f}, {verdict.seeds_high:+.3f}]"
    )
    return "\n".join(
        [
            "| gain (test) | interval | test examples | margin | best constant answer | seeds, pooled gain "
            "| scorer | decision |",
            "|---:|---|---:|---:|---:|---|---|---|",
            f"| {verdict.gain:+.3f} | [{verdict.low:+.3f}, {verdict.high:+.3f}] "
            f"({verdict.confidence:.0%}, {verdict.resamples} resamples) | {verdict.n} | {verdict.margin:g} "
            f"| {reference} | {seeds} | {verdict.scorer} | {decision} |",
            "",
            verdict.reason,
        ]
    )


def evaluation_table(summary: dict[str, Any]) -> str:
    """Each evaluation task file's verifier score with the promoted prompt and with the baseline."""
    rows = ["| task file | promoted | baseline |", "|---|---:|---:|"]
    for name, scores in summary["by_task_file"].items():
        rows.append(f"| {name} | {scores.get('promoted', 0):.3f} | {scores.get('baseline', 0):.3f} |")
    rows.append(f"| **mean** | {summary['promoted_score']:.3f} | {summary['baseline_score']:.3f} |")
    return "\n".join(rows)
