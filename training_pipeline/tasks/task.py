"""A task file: parsing, validation and the step graph.

Everything that can be wrong with a task is found here, before anything is saved or run, and reported
all at once, each problem naming the step and the field.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from training_pipeline.tasks.registry import StepRegistry
from training_pipeline.tasks.step import RetryConfig, TaskStep


class TaskError(ValueError):
    def __init__(self, where: str, problems: list[str]) -> None:
        super().__init__(
            f"{where}: " + "; ".join(problems)
            if len(problems) == 1
            else f"{where}: {len(problems)} problems:\n" + "\n".join(f"- {p}" for p in problems)
        )
        self.problems = problems


@dataclass(frozen=True)
class Task:
    name: str
    steps: tuple[TaskStep, ...]
    retries: dict[str, RetryConfig] = field(default_factory=dict)
    #: where relative paths in steps resolve (the task file's folder)
    base_dir: Path = field(default_factory=Path.cwd)

    def step(self, step_id: str) -> TaskStep:
        return self._by_id[step_id]

    @cached_property
    def _by_id(self) -> dict[str, TaskStep]:
        return {step.id: step for step in self.steps}

    @cached_property
    def upstream(self) -> dict[str, tuple[str, ...]]:
        """Each step's direct dependencies, with the omitted form resolved to every earlier step."""
        edges: dict[str, tuple[str, ...]] = {}
        for index, step in enumerate(self.steps):
            if step.depends_on is None:
                edges[step.id] = tuple(earlier.id for earlier in self.steps[:index])
            else:
                edges[step.id] = tuple(dict.fromkeys(dep.task_step_id for dep in step.depends_on))
        return edges

    @cached_property
    def downstream(self) -> dict[str, tuple[str, ...]]:
        edges: dict[str, list[str]] = {step.id: [] for step in self.steps}
        for step_id, parents in self.upstream.items():
            for parent in parents:
                edges[parent].append(step_id)
        return {step_id: tuple(children) for step_id, children in edges.items()}

    def ancestors(self, step_id: str) -> set[str]:
        return _reach(step_id, self.upstream)

    def descendants(self, step_id: str) -> set[str]:
        return _reach(step_id, self.downstream)

    @property
    def job_name(self) -> str:
        return "task_" + re.sub(r"\W", "_", self.name)

    def to_list(self) -> list[dict[str, Any]]:
        documents = []
        for step in self.steps:
            document = step.to_dict()
            if step.id in self.retries:
                document["retry_config"] = self.retries[step.id].model_dump()
            documents.append(document)
        return documents


def _reach(start: str, edges: dict[str, tuple[str, ...]]) -> set[str]:
    seen: set[str] = set()
    todo = list(edges[start])
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(edges[node])
    return seen


def load_task(path: Path, registry: StepRegistry) -> Task:
    """A task from its JSON file; the task's name is the file's stem."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise TaskError(str(path), [f"not a readable JSON file: {err}"]) from err
    return parse_task(document, registry, name=path.stem, base_dir=path.parent, where=str(path))


def parse_task(
    document: Any, registry: StepRegistry, *, name: str, base_dir: Path | None = None, where: str = "task"
) -> Task:
    if not isinstance(document, list) or not document:
        raise TaskError(where, ["a task is a non-empty JSON list of step objects"])
    problems: list[str] = []
    steps: list[TaskStep] = []
    retries: dict[str, RetryConfig] = {}
    positions: dict[str, int] = {}
    for index, raw in enumerate(document):
        label = f"step #{index + 1}"
        if not isinstance(raw, dict):
            problems.append(f"{label}: not a JSON object")
            continue
        step_id = raw.get("id")
        if isinstance(step_id, str) and step_id:
            label = f"step {step_id!r}"
            if step_id in positions:
                problems.append(f"{label}: duplicate id (also step #{positions[step_id] + 1})")
                continue
            positions[step_id] = index
        step_type = raw.get("type")
        if not isinstance(step_type, str):
            problems.append(f"{label}: missing field 'type'")
            continue
        cls = registry.get(step_type)
        if cls is None:
            problems.append(
                f"{label}: unknown type {step_type!r} (known: {', '.join(sorted(registry.types))})"
            )
            continue
        try:
            step = cls.from_dict(raw)
        except ValidationError as err:
            problems += [f"{label} ({step_type}): {_field_problem(e)}" for e in err.errors(include_url=False)]
            continue
        except (TypeError, ValueError, KeyError) as err:
            problems.append(f"{label} ({step_type}): {err}")
            continue
        steps.append(step)
        if raw.get("retry_config") is not None:
            try:
                retries[step.id] = RetryConfig.model_validate(raw["retry_config"])
            except ValidationError as err:
                problems += [
                    f"{label} field 'retry_config': {_field_problem(e)}"
                    for e in err.errors(include_url=False)
                ]
    for step in steps:
        for dep in step.depends_on or ():
            target = dep.task_step_id
            if target not in positions:
                problems.append(f"step {step.id!r} field 'depends_on': unknown step {target!r}")
            elif positions[target] >= positions[step.id]:
                problems.append(
                    f"step {step.id!r} field 'depends_on': {target!r} is not listed before {step.id!r}"
                )
    if problems:
        raise TaskError(where, problems)
    task = Task(name, tuple(steps), retries, base_dir or Path.cwd())
    for step_id, retry in retries.items():
        origin = retry.retry_from_step_id
        if origin != step_id and origin not in task.ancestors(step_id):
            problems.append(
                f"step {step_id!r} field 'retry_config.retry_from_step_id': {origin!r} is neither "
                "the step nor one of its ancestors"
            )
    if problems:
        raise TaskError(where, problems)
    return task


def _field_problem(error: Any) -> str:
    where = ".".join(str(part) for part in error["loc"])
    if error["type"] == "extra_forbidden":
        return f"unknown field {where!r}"
    if error["type"] == "missing":
        return f"missing field {where!r}"
    return f"field {where!r}: {error['msg']}"
