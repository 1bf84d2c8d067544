"""What the steps of one run share: four typed, named lists and a free-form `metadata` dict.

A step gets the context as it stands when it starts and changes it in place; the runner turns the
change into a diff (`diff`), which the run store keeps per step so a retry can take it back. Diffs are
by entry name and metadata key path, so steps running side by side merge instead of overwriting each
other. Services a step needs (the LLM, directories, env tokens) hang off `runtime`, never in the data.
"""

from __future__ import annotations

import copy
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from training_pipeline.llm.usage import Usage
from training_pipeline.tasks.envs.kinds import EnvClient
from training_pipeline.tasks.services import StepServices

LISTS = ("deployed_envs", "deployed_agents", "deployed_sandboxes", "prompt_responses")
Ops = list[dict[str, Any]]


class Entry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    step_id: str = ""


class DeployedEnv(Entry):
    env_type: str
    url: str
    pid: int | None = None
    instance_id: str
    started_at: float
    stopped: bool = False


class DeployedAgent(Entry):
    system_prompt: str
    model: str | None = None
    env_names: list[str] = Field(default_factory=list)
    tool_servers: list[str] = Field(default_factory=list)
    temperature: float = 0.0
    max_tokens: int | None = None
    #: (user, answer) chat turns given before a prompt
    demonstrations: list[tuple[str, str]] = Field(default_factory=list)
    #: 0: all of `demonstrations` before every prompt; n: the n of them nearest to the prompt
    neighbours: int = 0
    #: the form its answers are held to (`llm.answer_form.AnswerForm`'s fields), if any
    answer_form: dict[str, Any] | None = None


class DeployedSandbox(Entry):
    #: `bwrap`, or `off` where the deployment turned confinement off
    kind: str
    path: str
    limits: dict[str, int] = Field(default_factory=dict)


class PromptResponse(Entry):
    prompt_id: str
    agent_name: str
    prompt: str
    response: str
    tool_calls: int = 0
    turns: int = 0
    usage: Usage = Field(default_factory=Usage)
    messages: list[dict[str, Any]] = Field(default_factory=list)
    trajectory_id: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _named_by_prompt_id(cls, data: Any) -> Any:
        if isinstance(data, dict) and "name" not in data and "prompt_id" in data:
            return {**data, "name": data["prompt_id"]}
        return data


E = TypeVar("E", bound=Entry)


class TaskStepContext(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    deployed_envs: list[DeployedEnv] = Field(default_factory=list)
    deployed_agents: list[DeployedAgent] = Field(default_factory=list)
    deployed_sandboxes: list[DeployedSandbox] = Field(default_factory=list)
    prompt_responses: list[PromptResponse] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    _runtime: StepServices | None = PrivateAttr(default=None)

    @property
    def runtime(self) -> StepServices:
        if self._runtime is None:
            raise RuntimeError("this context is not attached to a run")
        return self._runtime

    def env(self, name: str) -> DeployedEnv:
        return _named(self.deployed_envs, name, "env")

    def env_client(self, name: str) -> EnvClient:
        """A client to a deployed env, over its socket (close it, or use it in a `with`)."""
        return EnvClient(self.env(name).url)

    def agent(self, name: str) -> DeployedAgent:
        return _named(self.deployed_agents, name, "agent")

    def sandbox(self, name: str) -> DeployedSandbox:
        return _named(self.deployed_sandboxes, name, "sandbox")

    def response(self, prompt_id: str) -> PromptResponse:
        return _named(self.prompt_responses, prompt_id, "prompt response")

    def verify(self, verifier_id: str, score: float, results: list[dict[str, Any]]) -> None:
        self.metadata.setdefault("verifications", {})[verifier_id] = {"score": score, "results": results}


def _named(entries: list[E], name: str, what: str) -> E:
    for entry in entries:
        if entry.name == name:
            return entry
    known = ", ".join(repr(entry.name) for entry in entries) or "none"
    raise LookupError(f"no {what} named {name!r} in the run context (known: {known})")


def diff(before: dict[str, Any], after: dict[str, Any]) -> Ops:
    """The change from one dumped context to another, as ops `apply` replays."""
    ops: Ops = []
    for key in LISTS:
        old = {entry["name"]: entry for entry in before.get(key, [])}
        new = {entry["name"]: entry for entry in after.get(key, [])}
        ops += [{"op": "drop", "list": key, "name": name} for name in old if name not in new]
        ops += [
            {"op": "put", "list": key, "value": entry}
            for name, entry in new.items()
            if old.get(name) != entry
        ]
    _diff_dict(before.get("metadata", {}), after.get("metadata", {}), [], ops)
    return ops


def _diff_dict(old: dict[str, Any], new: dict[str, Any], path: list[str], ops: Ops) -> None:
    for key in old:
        if key not in new:
            ops.append({"op": "unset", "path": [*path, key]})
    for key, value in new.items():
        previous = old.get(key, _MISSING)
        if previous == value:
            continue
        if isinstance(value, dict) and not isinstance(previous, dict):
            # a new dict is built key by key, so steps filling the same new dict side by side
            # (two verifiers creating `verifications`) merge instead of overwriting each other
            kind = "ensure" if previous is _MISSING else "set"
            ops.append({"op": kind, "path": [*path, key], "value": {}})
            previous = {}
        if isinstance(previous, dict) and isinstance(value, dict):
            _diff_dict(previous, value, [*path, key], ops)
        else:
            ops.append({"op": "set", "path": [*path, key], "value": value})


_MISSING = object()


def apply(state: dict[str, Any], ops: Ops) -> None:
    """Replay `ops` onto a dumped context in place."""
    for op in ops:
        kind = op["op"]
        if kind in ("put", "drop"):
            entries: list[dict[str, Any]] = state.setdefault(op["list"], [])
            name = op["value"]["name"] if kind == "put" else op["name"]
            index = next((i for i, entry in enumerate(entries) if entry["name"] == name), None)
            if kind == "drop":
                if index is not None:
                    del entries[index]
            elif index is None:
                entries.append(copy.deepcopy(op["value"]))
            else:
                entries[index] = copy.deepcopy(op["value"])
            continue
        *parents, last = op["path"]
        node = state.setdefault("metadata", {})
        for part in parents:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        if kind == "set":
            node[last] = copy.deepcopy(op["value"])
        elif kind == "ensure":
            if not isinstance(node.get(last), dict):
                node[last] = {}
        elif kind == "unset":
            node.pop(last, None)
        elif kind == "append":
            target = node.get(last)
            if not isinstance(target, list):
                target = node[last] = []
            target.append(copy.deepcopy(op["value"]))
        else:
            raise ValueError(f"unknown context op {kind!r}")
