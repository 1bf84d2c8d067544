"""Optimisation examples: read from a dataset, duplicates removed, split by trajectory.

Splitting by trajectory (not by row) keeps every call of a conversation on one side, so nothing the
optimiser learns from (demonstrations, selection) has seen the validation or test conversations.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Example:
    id: str
    system: str
    user: str
    expected: str
    group: str  # the source trajectory; the split never separates a group


def load_examples(dataset: Path, ids: Path | None = None) -> list[Example]:
    """Rows of an elizaOS-format dataset (`ids`, when given, names each row's trajectory); rows
    without a user message or an expected answer are skipped, exact duplicates kept once."""
    groups = None
    if ids is not None and ids.is_file():
        groups = [str(json.loads(line)) for line in ids.read_text(encoding="utf-8").splitlines()]
    examples, seen = [], set()
    with dataset.open(encoding="utf-8") as handle:
        for index, line in enumerate(handle):
            if not line.strip():
                continue
            roles = {m.get("role"): m.get("content") for m in json.loads(line).get("messages", [])}
            system, user, expected = roles.get("system") or "", roles.get("user"), roles.get("model")
            if not user or not expected or (system, user, expected) in seen:
                continue
            seen.add((system, user, expected))
            group = groups[index] if groups is not None and index < len(groups) else f"row-{index}"
            examples.append(Example(f"row-{index}", system, user, expected, group))
    return examples


@dataclass(frozen=True)
class Split:
    """Three disjoint sets of whole trajectories. `train` gives demonstrations and the proposer's
    failing examples; `validation` chooses among candidates; `test` is read once, for the figure the
    gate judges, so a candidate that won on validation by luck does not carry its luck into it."""

    train: list[Example]
    validation: list[Example]
    test: list[Example]

    @property
    def sizes(self) -> dict[str, int]:
        return {"train": len(self.train), "validation": len(self.validation), "test": len(self.test)}


def split_by_trajectory(
    examples: list[Example],
    validation_fraction: float = 0.35,
    test_fraction: float = 0.35,
    seed: int = 0,
    *,
    max_validation: int | None = None,
    max_test: int | None = None,
) -> Split:
    """A seeded, stable split of whole trajectories (groups in a hash order, test filled first, then
    validation, train the rest, each to its share of the examples, at most `max_…` of them: every
    candidate pays a call per validation example); each side gets at least one group when there are
    three or more."""
    groups = sorted(
        {e.group for e in examples}, key=lambda g: hashlib.sha256(f"{seed}:{g}".encode()).hexdigest()
    )
    if len(groups) < 3:
        return Split(list(examples), [], [])
    sizes: dict[str, int] = {}
    for example in examples:
        sizes[example.group] = sizes.get(example.group, 0) + 1
    side: dict[str, str] = {}
    wanted = {
        "test": min(test_fraction * len(examples), max_test or len(examples)),
        "validation": min(validation_fraction * len(examples), max_validation or len(examples)),
    }
    filled = dict.fromkeys(wanted, 0)
    remaining = list(groups)
    for name in ("test", "validation"):
        while remaining and (filled[name] == 0 or filled[name] + sizes[remaining[0]] / 2 <= wanted[name]):
            if len(remaining) <= (2 if name == "test" else 1):
                break  # leave one group for each side still to fill
            group = remaining.pop(0)
            side[group] = name
            filled[name] += sizes[group]
    return Split(
        [e for e in examples if e.group not in side],
        [e for e in examples if side.get(e.group) == "validation"],
        [e for e in examples if side.get(e.group) == "test"],
    )
