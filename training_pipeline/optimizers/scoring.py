"""How close an answer is to the expected one: the scorers an optimiser can be judged by, by name.

- `token_overlap` (elizaOS's `agreement`): Jaccard overlap of lower-cased word tokens.
- `action_match` (elizaOS's planner scorer): 1 when the action the answer names is the expected one
  (from `<name>`, `<action>`, or the first UPPER_CASE word), else 0. Lenient to a fault: it takes
  `<name>Eliza</name>` of a should_respond answer, or `REDACTED`, for the decision.
- `respond_decision`: 1 when the answer's decision (`<action>RESPOND|IGNORE|STOP</action>`, or the
  answer being that one word) is the expected one; an answer in no such form is wrong.
- `planner_actions`: 1 when the answer's `<actions>…</actions>` names the expected actions (as a set);
  an answer without that tag is wrong.
- `exact_match`: 1 when the answers are equal once whitespace is collapsed, else 0.
- `json_fields`: the share of the expected answer's fields the answer agrees on, for structured
  answers such as `context_routing`'s (`primaryContext`, `secondaryContexts`, `evidenceTurnIds`),
  written as a JSON object, `key: value` lines or `<key>value</key>` tags; lists compare as sets.
- `llm_judge`: an LLM grades the answer against the expected one from 0 to 10 (run by the optimiser as
  a recorded prompt execution, so its calls and tokens count against the budget).

elizaOS uses `action_match` for `action_planner` and `token_overlap` for every other task. Ours measure
the decision where a task makes one (`default_scorer`); the training policy can choose another per task
(`scorers`), and every score says which scorer produced it. `best_constant` is the reference every
score is shown beside: what always giving one answer would score. `answer_form` is the shape of a decision
task's answers (reasoning, then one of a finite set of decisions), for constrained decoding: a small
model then makes the decision instead of a format error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from training_pipeline.datasets.training_tasks import Task
from training_pipeline.llm.answer_form import AnswerForm

_NON_TOKEN = re.compile(r"[^a-z0-9\s_-]+")
_NESTED_NAME = re.compile(r"<name>\s*([A-Z0-9_]+)\s*</name>", re.IGNORECASE)
_FLAT_ACTION = re.compile(r"<action>\s*([A-Z0-9_]+)\s*</action>", re.IGNORECASE)
_UPPER_WORD = re.compile(r"\b([A-Z][A-Z0-9_]{2,})\b")
_KEY_LINE = re.compile(r"^\s*([A-Za-z][\w-]*)\s*:\s*(.*?)\s*$", re.MULTILINE)
#: a tag that holds text only (the innermost of nested tags)
_TAG = re.compile(r"<([A-Za-z][\w-]*)>\s*([^<]*?)\s*</\1>")
_JUDGE_SCORE = re.compile(r"\b(10|[0-9])(?:\.\d+)?\s*(?:/\s*10)?\b")


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


_DECISION_TAG = re.compile(r"<action>\s*(RESPOND|IGNORE|STOP)\s*</action>", re.IGNORECASE)
_DECISION_WORD = re.compile(r"(RESPOND|IGNORE|STOP)", re.IGNORECASE)
_ACTIONS_TAG = re.compile(r"<actions>\s*([A-Za-z0-9_]+(?:\s*,\s*[A-Za-z0-9_]+)*)\s*</actions>")


def respond_decision(text: str | None) -> str | None:
    """A should_respond answer's decision, strictly: the `<action>` tag's RESPOND, IGNORE or STOP, or
    the answer being that one word; None for any other answer."""
    if not text:
        return None
    tagged = _DECISION_TAG.findall(text)
    if len(tagged) == 1:
        return tagged[0].upper()
    bare = _DECISION_WORD.fullmatch(text.strip().strip(".`\"'"))
    return bare[1].upper() if bare and not tagged else None


def planner_action_set(text: str | None) -> frozenset[str] | None:
    """A planner answer's actions, strictly: the one `<actions>` tag's comma-separated names (upper
    case); None when there is no such tag, or more than one."""
    found = _ACTIONS_TAG.findall(text or "")
    if len(found) != 1:
        return None
    return frozenset(name.strip().upper() for name in found[0].split(","))


def decision_match(actual: str, expected: str) -> float:
    want = respond_decision(expected)
    return 1.0 if want is not None and respond_decision(actual) == want else 0.0


def actions_match(actual: str, expected: str) -> float:
    want = planner_action_set(expected)
    return 1.0 if want is not None and planner_action_set(actual) == want else 0.0


def exact_match(actual: str, expected: str) -> float:
    return 1.0 if " ".join(actual.split()) == " ".join(expected.split()) else 0.0


def answer_fields(text: str) -> dict[str, Any]:
    """The named fields of a structured answer: a JSON object (the first `{...}` in the text), else
    `key: value` lines and `<key>value</key>` tags that hold no further tags. Keys compare
    case-insensitively."""
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        try:
            parsed = json.loads(text[start : end + 1])
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return {str(k).lower(): v for k, v in parsed.items()}
    fields: dict[str, Any] = {}
    for key, value in _TAG.findall(text):
        fields[key.lower()] = value
    for key, value in _KEY_LINE.findall(text):
        fields.setdefault(key.lower(), value)
    return fields


def _normalise(value: Any) -> Any:
    if isinstance(value, str):
        text = value.strip()
        if text[:1] == "[" and text[-1:] == "]":
            try:
                value = json.loads(text)
            except ValueError:
                value = [part for part in text[1:-1].split(",") if part.strip()]
        else:
            return text.strip("\"'").lower()
    if isinstance(value, list | tuple | set):
        return frozenset(_normalise(v) if not isinstance(v, list | dict) else json.dumps(v) for v in value)
    if isinstance(value, bool | int | float):
        return str(value).lower()
    return json.dumps(value, sort_keys=True) if isinstance(value, dict) else value


def json_fields(actual: str, expected: str) -> float:
    """Share of the expected answer's fields that the answer has with an equal value; an expected
    answer with no fields is scored by `token_overlap`."""
    want = answer_fields(expected)
    if not want:
        return agreement(actual, expected)
    got = answer_fields(actual)
    same = sum(1 for key, value in want.items() if key in got and _normalise(got[key]) == _normalise(value))
    return same / len(want)


@dataclass(frozen=True)
class LLMJudge:
    """Asks an LLM for a 0-10 grade of an answer against the expected one; the score is grade / 10.
    It is not a plain function: the optimiser sends `messages()` as a recorded prompt execution and
    reads the grade with `parse()`, so the judge's calls are counted and cached like the others."""

    name: str = "llm_judge"
    max_tokens: int = 64

    def messages(self, actual: str, expected: str) -> list[dict[str, str]]:
        return [
            {
                "role": "system",
                "content": "You grade an answer against a reference answer. Judge whether it says the "
                "same thing and would serve the same purpose; wording does not matter. Reply with a JSON "
                'object only: {"score": N} where N is an integer from 0 (wrong) to 10 (equivalent).',
            },
            {"role": "user", "content": f"Reference answer:\n{expected}\n\nAnswer to grade:\n{actual}"},
        ]

    @staticmethod
    def parse(reply: str | None) -> float:
        """The grade / 10, from `{"score": N}` or else the first number 0-10 in the reply; 0 when none."""
        if not reply:
            return 0.0
        fields = answer_fields(reply)
        grade: Any = fields.get("score")
        if grade is None:
            match = _JUDGE_SCORE.search(reply)
            grade = match[1] if match else None
        try:
            value = float(grade)
        except (TypeError, ValueError):
            return 0.0
        return min(max(value, 0.0), 10.0) / 10.0


Scorer = Callable[[str, str], float] | LLMJudge

SCORERS: dict[str, Scorer] = {
    "token_overlap": agreement,
    "action_match": action_match,
    "respond_decision": decision_match,
    "planner_actions": actions_match,
    "exact_match": exact_match,
    "json_fields": json_fields,
    "llm_judge": LLMJudge(),
}


_DEFAULT_SCORERS = {
    "should_respond": "respond_decision",
    "action_planner": "planner_actions",
    "context_routing": "json_fields",
}


def default_scorer(task: Task | str) -> str:
    """The decision where the task makes one (respond or not, which actions, which context); token
    overlap for free text (elizaOS's own choice: `action_match` for the planner, token overlap for
    every other task, is a policy setting away)."""
    return _DEFAULT_SCORERS.get(task, "token_overlap")


@dataclass(frozen=True)
class Reference:
    """The best a constant answer does on some examples: `answer`, and its score on each."""

    answer: str
    scores: list[float]

    @property
    def mean(self) -> float:
        return sum(self.scores) / len(self.scores) if self.scores else 0.0


def best_constant(expected: list[str], scorer: Scorer, most: int = 64) -> Reference | None:
    """Which one of the expected answers (the `most` commonest), given every time, scores best on
    `expected`: the majority class for a decision, the best stock reply for free text. None for an LLM
    judge (its grades cost calls) or no examples. A candidate that does no better has learnt nothing
    but the commonest answer."""
    if isinstance(scorer, LLMJudge) or not expected:
        return None
    counts: dict[str, int] = {}
    for answer in expected:
        counts[answer] = counts.get(answer, 0) + 1
    candidates = sorted(counts, key=lambda answer: -counts[answer])[:most]
    best: Reference | None = None
    for answer in candidates:
        reference = Reference(answer, [scorer(answer, want) for want in expected])
        if best is None or reference.mean > best.mean:
            best = reference
    return best


#: the decision's span in an answer, per decision scorer (group 1: the choice)
_DECISION_SPANS = {"respond_decision": _DECISION_TAG, "planner_actions": _ACTIONS_TAG}
#: longest reasoning a decision's answer may write before it (characters)
REASONING_CHARS = 80


def _common_prefix(texts: list[str]) -> str:
    """The longest text all of `texts` start with, character by character (the lexically first and
    last share exactly what all share)."""
    first, last = min(texts), max(texts)
    length = 0
    while length < min(len(first), len(last)) and first[length] == last[length]:
        length += 1
    return first[:length]


def answer_form(scorer: str, expected: Iterable[str]) -> AnswerForm | None:
    """The form of a decision task's answers, from the `expected` ones: their common opening up to
    a tag, free reasoning where they differ, the common text before the decision, the decision from
    the choices they hold (as the scorer reads them), and the common closing tags. None for a scorer
    of free text (there is no finite set of decisions)."""
    pattern = _DECISION_SPANS.get(scorer)
    if pattern is None:
        return None
    befores, choices, afters = [], set(), []
    for text in expected:
        found = pattern.search(text)
        if found is None:
            continue
        if scorer == "planner_actions":
            choice = ", ".join(sorted(planner_action_set(found[0]) or ()))
        else:
            choice = found[1].upper()
        befores.append(text[: found.start(1)])
        choices.add(choice)
        afters.append(text[found.end(1) :])
    if not choices:
        return None
    opening = _common_prefix(befores)
    opening = opening[: opening.rfind(">") + 1]
    closing = _common_prefix([before[::-1] for before in befores])[::-1]
    closing = closing[closing.find("<") :] if "<" in closing else ""
    after = _common_prefix(afters)
    after = after[: after.rfind(">") + 1]
    free = any(len(before) > len(opening) + len(closing) for before in befores)
    return AnswerForm(tuple(sorted(choices)), opening, closing, after, REASONING_CHARS if free else 0)


def scorer_named(name: str) -> Scorer:
    try:
        return SCORERS[name]
    except KeyError:
        raise ValueError(f"unknown scorer {name!r}; choose one of {', '.join(SCORERS)}") from None
