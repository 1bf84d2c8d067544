"""How close an answer is to the expected one: elizaOS's scorers, behind one interface.

`agreement`: Jaccard overlap of lower-cased word tokens. `planner_action`: 1 when the action the answer
names is the expected one (from `<name>`, `<action>`, or the first UPPER_CASE word), else 0.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Scorer = Callable[[str, str], float]

_NON_TOKEN = re.compile(r"[^a-z0-9\s_-]+")
_NESTED_NAME = re.compile(r"<name>\s*([A-Z0-9_]+)\s*</name>", re.IGNORECASE)
_FLAT_ACTION = re.compile(r"<action>\s*([A-Z0-9_]+)\s*</action>", re.IGNORECASE)
_UPPER_WORD = re.compile(r"\b([A-Z][A-Z0-9_]{2,})\b")


def _tokens(text: str) -> set[str]:
    return {t for t in _NON_TOKEN.sub(" ", text.lower()).split() if t}


def agreement(actual: str, expected: str) -> float:
    got, want = _tokens(actual), _tokens(expected)
    if not got and not want:
        return 1.0
    if not got or not want:
        return 0.0
    common = len(got & want)
    return common / (len(got) + len(want) - common)


def planner_action(text: str | None) -> str | None:
    if not text:
        return None
    for pattern in (_NESTED_NAME, _FLAT_ACTION):
        match = pattern.search(text)
        if match:
            return match[1].upper()
    match = _UPPER_WORD.search(text)
    return match[1] if match else None


def action_match(actual: str, expected: str) -> float:
    want = planner_action(expected)
    return 1.0 if want is not None and planner_action(actual) == want else 0.0


def scorer_for(task: str) -> Scorer:
    """elizaOS's choice: action-name match for the planner, token agreement for everything else."""
    return action_match if task == "action_planner" else agreement
