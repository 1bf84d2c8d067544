"""Optimisation examples: read from a dataset, duplicates removed, split by trajectory.

Splitting by trajectory (not by row) keeps every call of a conversation on one side, so nothing the
optimiser learns from (demonstrations, selection) has seen the validation conversations.
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


def split_by_trajectory(
    examples: list[Example], validation_fraction: float = 0.3, seed: int = 0
) -> tuple[list[Example], list[Example]]:
    """A seeded, stable split of whole trajectories; both sides get at least one group when there
    are two or more."""
    groups = sorted(
        {e.group for e in examples}, key=lambda g: hashlib.sha256(f"{seed}:{g}".encode()).hexdigest()
    )
    if not groups:
        return [], []
    count = len(groups)
    n_val = min(max(1, round(count * validation_fraction)), count - 1) if count > 1 else 0
    validation = set(groups[:n_val])
    return (
        [e for e in examples if e.group not in validation],
        [e for e in examples if e.group in validation],
    )
