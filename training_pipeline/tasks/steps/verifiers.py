"""Verifiers: each writes `metadata.verifications[verifier_id] = {score, results}` (verifier_id
defaults to the step id); a check that does not pass scores, it does not raise."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from training_pipeline.tasks.context import TaskStepContext
from training_pipeline.tasks.envs.kinds import ENV_KINDS
from training_pipeline.tasks.step import TaskStep


class VerifierStep(TaskStep):
    verifier_id: str | None = None

    @property
    def key(self) -> str:
        return self.verifier_id or self.id


def _score(results: list[dict[str, Any]]) -> float:
    return sum(1 for r in results if r["result"]) / len(results) if results else 0.0


class AgentPromptResponseVerifier(VerifierStep):
    """The response to `prompt_id` contains (or not) these texts and matches these regexes."""

    type: ClassVar[str] = "agent_prompt_response_verifier"

    prompt_id: str
    contains: list[str] = Field(default_factory=list)
    not_contains: list[str] = Field(default_factory=list)
    regex: list[str] = Field(default_factory=list)
    case_sensitive: bool = False

    @field_validator("regex")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as err:
                raise ValueError(f"regex {pattern!r}: {err}") from err
        return patterns

    async def execute(self, context: TaskStepContext) -> None:
        text = context.response(self.prompt_id).response
        folded = text if self.case_sensitive else text.lower()

        def fold(value: str) -> str:
            return value if self.case_sensitive else value.lower()

        results = [{"criterion": f"contains {t!r}", "result": fold(t) in folded} for t in self.contains]
        results += [
            {"criterion": f"does not contain {t!r}", "result": fold(t) not in folded}
            for t in self.not_contains
        ]
        flags = 0 if self.case_sensitive else re.IGNORECASE
        results += [
            {"criterion": f"matches /{p}/", "result": re.search(p, text, flags) is not None}
            for p in self.regex
        ]
        context.verify(self.key, _score(results), results)


class EnvCheck(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    check: str
    args: dict[str, Any] = Field(default_factory=dict)
    weight: float = Field(default=1.0, gt=0)

    @field_validator("check")
    @classmethod
    def _known(cls, value: str) -> str:
        known = {name for kind in ENV_KINDS.values() for name in kind.checks}
        if value not in known:
            raise ValueError(f"unknown check {value!r} (known: {', '.join(sorted(known))})")
        return value


class EnvOutcomeVerifier(VerifierStep):
    """Named Python checks of an env's state, e.g. `email_sent` with `{"to": "dana@example.com"}`."""

    type: ClassVar[str] = "env_outcome_verifier"

    env_name: str
    checks: list[EnvCheck] = Field(min_length=1)

    async def execute(self, context: TaskStepContext) -> None:
        kind = ENV_KINDS[context.env(self.env_name).env_type]
        with context.env_client(self.env_name) as client:
            state = await asyncio.to_thread(client.state)
        results, total, passed = [], 0.0, 0.0
        for item in self.checks:
            function = kind.checks.get(item.check)
            if function is None:
                raise ValueError(f"the {self.env_name!r} env has no check {item.check!r}")
            ok, detail = function(state, **item.args)
            results.append({"criterion": item.check, "args": item.args, "result": ok, "detail": detail})
            total += item.weight
            passed += item.weight if ok else 0.0
        context.verify(self.key, passed / total, results)


class Criterion(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    criterion: str
    weight: float = Field(default=1.0, gt=0)


_JUDGE_SYSTEM = (
    "You are a strict grader. For each numbered criterion, decide whether the response meets it. "
    'Answer with JSON only: {"results": [{"index": 1, "passed": true, "reason": "..."}, ...]}'
)


class RubricsVerifier(VerifierStep):
    """An LLM judge grades the response to `prompt_id` against weighted criteria."""

    type: ClassVar[str] = "rubrics_verifier"

    prompt_id: str
    criteria: list[Criterion] = Field(min_length=1)
    model: str | None = None

    async def execute(self, context: TaskStepContext) -> None:
        response = context.response(self.prompt_id)
        listing = "\n".join(f"{i}. {c.criterion}" for i, c in enumerate(self.criteria, 1))
        messages = [
            {"role": "system", "content": _JUDGE_SYSTEM},
            {
                "role": "user",
                "content": f"# Prompt\n{response.prompt}\n\n# Response\n{response.response}"
                f"\n\n# Criteria\n{listing}",
            },
        ]
        chat = context.runtime.chat_client()
        try:
            answer = await asyncio.to_thread(chat.chat, messages, json_mode=True, model=self.model)
        finally:
            chat.close()
        verdicts = _parse_verdicts(answer.content or "", len(self.criteria))
        results = [
            {"criterion": c.criterion, "weight": c.weight, "result": verdicts[i][0], "reason": verdicts[i][1]}
            for i, c in enumerate(self.criteria)
        ]
        total = sum(c.weight for c in self.criteria)
        context.verify(self.key, sum(r["weight"] for r in results if r["result"]) / total, results)


def _parse_verdicts(text: str, count: int) -> list[tuple[bool, str]]:
    """The judge's verdict per criterion; a reply that does not say is an error (retryable), never a
    silent pass or fail."""
    match = re.search(r"\{.*\}", text, re.DOTALL)
    try:
        items = json.loads(match.group(0) if match else text)["results"]
        verdicts = {int(item["index"]): (bool(item["passed"]), str(item.get("reason", ""))) for item in items}
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"the judge's reply is not the expected JSON: {text[:200]!r}") from err
    missing = [i for i in range(1, count + 1) if i not in verdicts]
    if missing:
        raise ValueError(f"the judge gave no verdict for criteria {missing}")
    return [verdicts[i] for i in range(1, count + 1)]


class AggregateVerifiers(VerifierStep):
    """Combine verifications: all_pass / any_pass (a verification passes at `pass_score` or more) or
    weighted_average (weights per verifier id, default 1)."""

    type: ClassVar[str] = "aggregate_verifiers"

    verifier_ids: list[str] = Field(min_length=1)
    mode: Literal["all_pass", "any_pass", "weighted_average"] = "all_pass"
    weights: dict[str, float] = Field(default_factory=dict)
    pass_score: float = 1.0

    async def execute(self, context: TaskStepContext) -> None:
        verifications = context.metadata.get("verifications", {})
        missing = [v for v in self.verifier_ids if v not in verifications]
        if missing:
            raise LookupError(f"no verification {', '.join(map(repr, missing))} in the run context")
        scores = {v: float(verifications[v]["score"]) for v in self.verifier_ids}
        results = [{"criterion": v, "score": s, "result": s >= self.pass_score} for v, s in scores.items()]
        if self.mode == "all_pass":
            score = 1.0 if all(r["result"] for r in results) else 0.0
        elif self.mode == "any_pass":
            score = 1.0 if any(r["result"] for r in results) else 0.0
        else:
            weights = {v: self.weights.get(v, 1.0) for v in self.verifier_ids}
            score = sum(scores[v] * w for v, w in weights.items()) / sum(weights.values())
        context.verify(self.key, score, results)
