"""Verifiers: each writes `metadata.verifications[verifier_id] = {score, results}` (verifier_id
defaults to the step id); a check that does not pass scores, it does not raise."""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any, ClassVar, Literal
from xml.etree import ElementTree

from pydantic import BaseModel, ConfigDict, Field, field_validator

from training_pipeline.sandbox.beneath import open_regular
from training_pipeline.tasks.context import TaskStepContext
from training_pipeline.tasks.envs.kinds import ENV_KINDS
from training_pipeline.tasks.sandboxes import confined, run_confined
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
    #: the response is JSON (the first object or array in it) valid against this JSON Schema
    json_schema: dict[str, Any] | None = None
    case_sensitive: bool = False

    @field_validator("json_schema")
    @classmethod
    def _valid_schema(cls, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        if schema is not None:
            # imported where a task names a schema: every process that loads the code location (each
            # run's) would otherwise pay jsonschema's import
            from jsonschema import Draft202012Validator
            from jsonschema.exceptions import SchemaError

            try:
                Draft202012Validator.check_schema(schema)
            except SchemaError as err:
                raise ValueError(f"json_schema: {err.message}") from err
        return schema

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
        if self.json_schema is not None:
            results.append(_schema_result(text, self.json_schema))
        context.verify(self.key, _score(results), results)


def _schema_result(text: str, schema: dict[str, Any]) -> dict[str, Any]:
    from jsonschema import Draft202012Validator

    criterion = "valid JSON for the schema"
    match = re.search(r"[\[{].*[\]}]", text, re.DOTALL)
    try:
        document = json.loads(match.group(0) if match else text)
    except ValueError as err:
        return {"criterion": criterion, "result": False, "detail": f"not JSON: {err}"}
    errors = sorted(Draft202012Validator(schema).iter_errors(document), key=lambda e: list(e.path))
    detail = [f"{'/'.join(map(str, e.path)) or '(root)'}: {e.message}" for e in errors[:10]]
    return {"criterion": criterion, "result": not errors, "detail": detail}


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


class Judge(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: the model this judge asks (default: the run's LLM's model)
    model: str | None = None
    #: what this judge is told to care about, added to the grading instructions
    persona: str | None = None


class RubricsVerifier(VerifierStep):
    """LLM judges grade the response to `prompt_id` against weighted criteria. With several judges,
    each criterion's verdict is aggregated: `majority` (more than half pass it), `unanimous`, `any`, or
    `mean` (the share of judges that pass it counts as partial credit)."""

    type: ClassVar[str] = "rubrics_verifier"

    prompt_id: str
    criteria: list[Criterion] = Field(min_length=1)
    model: str | None = None
    judges: list[Judge] = Field(default_factory=list)
    aggregation: Literal["majority", "unanimous", "any", "mean"] = "majority"

    async def execute(self, context: TaskStepContext) -> None:
        response = context.response(self.prompt_id)
        listing = "\n".join(f"{i}. {c.criterion}" for i, c in enumerate(self.criteria, 1))
        question = f"# Prompt\n{response.prompt}\n\n# Response\n{response.response}\n\n# Criteria\n{listing}"
        judges = self.judges or [Judge(model=self.model)]
        chat = context.runtime.chat_client()
        try:
            replies = await asyncio.gather(
                *(
                    asyncio.to_thread(
                        chat.chat,
                        [
                            {
                                "role": "system",
                                "content": _JUDGE_SYSTEM + (f" {j.persona}" if j.persona else ""),
                            },
                            {"role": "user", "content": question},
                        ],
                        json_mode=True,
                        model=j.model,
                    )
                    for j in judges
                )
            )
        finally:
            chat.close()
        verdicts = [_parse_verdicts(reply.content or "", len(self.criteria)) for reply in replies]
        results = []
        for i, criterion in enumerate(self.criteria):
            passes = [v[i][0] for v in verdicts]
            credit = _aggregate(passes, self.aggregation)
            results.append(
                {
                    "criterion": criterion.criterion,
                    "weight": criterion.weight,
                    "result": credit >= 1.0 if self.aggregation == "mean" else bool(credit),
                    "credit": credit,
                    "votes": [{"passed": v[i][0], "reason": v[i][1]} for v in verdicts],
                }
            )
        total = sum(c.weight for c in self.criteria)
        context.verify(self.key, sum(r["weight"] * r["credit"] for r in results) / total, results)


def _aggregate(passes: list[bool], how: str) -> float:
    if how == "mean":
        return sum(passes) / len(passes)
    if how == "unanimous":
        return float(all(passes))
    if how == "any":
        return float(any(passes))
    return float(sum(passes) * 2 > len(passes))


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


class UnitTestVerifier(VerifierStep):
    """Run a test command in a deployed sandbox and score the share of tests that pass. The results
    come from a JUnit XML report the command writes (`junit_xml`, a path in the sandbox: pytest's
    `--junitxml`), else from the summary line of pytest or unittest in its output, else from the exit
    code alone (1 test). A command that cannot report (timeout, no tests found) scores 0."""

    type: ClassVar[str] = "unit_test_verifier"

    sandbox_name: str
    command: list[str] = Field(min_length=1)
    junit_xml: str | None = None
    timeout_seconds: float = Field(default=300.0, gt=0)

    async def execute(self, context: TaskStepContext) -> None:
        sandbox = confined(context, self.sandbox_name)
        try:
            done = await run_confined(sandbox, self.command, self.timeout_seconds)
        except TimeoutError as err:
            context.verify(
                self.key, 0.0, [{"criterion": "tests finished", "result": False, "detail": str(err)}]
            )
            return
        counts = None
        if self.junit_xml is not None:
            counts = _junit_counts(Path(sandbox.workdir), self.junit_xml)
        counts = counts or _summary_counts(done.stdout + "\n" + done.stderr)
        if counts is None:
            counts = (1, 1) if done.exit_code == 0 else (0, 1)
        passed, total = counts
        results = [
            {
                "criterion": f"{passed} of {total} tests pass",
                "result": total > 0 and passed == total,
                "passed": passed,
                "total": total,
                "exit_code": done.exit_code,
                "output": (done.stdout + done.stderr)[-2000:],
            }
        ]
        context.verify(self.key, passed / total if total else 0.0, results)


def _junit_counts(folder: Path, relative: str) -> tuple[int, int] | None:
    """(passed, total) from a JUnit XML report in the sandbox, or None when there is none to read."""
    try:
        with open_regular(folder, relative) as report:
            if os.fstat(report.fileno()).st_size > 16 * 1024 * 1024:
                return None
            root = ElementTree.fromstring(report.read())
    except (OSError, ValueError, ElementTree.ParseError):
        return None
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    total = failed = 0
    for suite in suites:
        total += int(suite.get("tests", 0))
        failed += int(suite.get("failures", 0)) + int(suite.get("errors", 0)) + int(suite.get("skipped", 0))
    return (total - failed, total) if total else None


_PYTEST_COUNT = re.compile(r"(\d+) (passed|failed|error|errors)\b")
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in", re.MULTILINE)
_UNITTEST_FAILED = re.compile(r"^FAILED \(([^)]*)\)", re.MULTILINE)


def _summary_counts(output: str) -> tuple[int, int] | None:
    ran = _UNITTEST_RAN.search(output)
    if ran:
        total = int(ran.group(1))
        failed = _UNITTEST_FAILED.search(output)
        bad = sum(int(n) for n in re.findall(r"(?:failures|errors)=(\d+)", failed.group(1))) if failed else 0
        return total - bad, total
    tail = output.strip().splitlines()[-1:] if output.strip() else []
    counts = {kind: int(n) for n, kind in _PYTEST_COUNT.findall(tail[0])} if tail else {}
    if counts:
        passed = counts.get("passed", 0)
        total = passed + counts.get("failed", 0) + counts.get("error", 0) + counts.get("errors", 0)
        return passed, total
    return None
