"""An LLM agent with the tools of its envs, and the step that prompts it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from training_pipeline.llm.answer_form import AnswerForm
from training_pipeline.llm.client import ChatClient
from training_pipeline.llm.usage import capture_usage
from training_pipeline.optimizers.nearest import demonstrations_for
from training_pipeline.sandbox import Limits, Sandbox
from training_pipeline.tasks.context import DeployedAgent, PromptResponse, TaskStepContext
from training_pipeline.tasks.sandboxes import confined
from training_pipeline.tasks.step import RelativePath, TaskStep, resolve_inside
from training_pipeline.tasks.toolservers import ToolServer
from training_pipeline.tasks.trajectory import LLMCallRecord, conversation_trajectory


class TaskPrompt(BaseModel):
    """The part of an agent's system prompt that a dataset task's training optimises: what an
    evaluation of that task's promoted prompt replaces, leaving the agent's own instructions."""

    model_config = ConfigDict(extra="forbid")

    task: str
    prompt: str


class DeployAgentStep(TaskStep):
    """Register an agent: system prompt, model, sampling, and the envs whose tools it may use.

    Its system prompt is `system_prompt` (its own instructions: tools, persona) followed by
    `task_prompt.prompt`, the part a dataset task optimises. `demonstrations` are chat turns given before
    every prompt, and `answer_form` holds its answers to a decision's form (an evaluation sets both from
    the promoted candidate). With `neighbours`, `demonstrations` is a pool and each prompt is given the
    `neighbours` of them nearest to it (`optimizers.nearest`), as the candidate was scored."""

    type: ClassVar[str] = "deploy_agent"

    agent_name: str
    system_prompt: str = ""
    task_prompt: TaskPrompt | None = None
    model: str | None = None
    env_names: list[str] = Field(default_factory=list)
    #: tool servers (`deploy_tool_server`) whose tools the agent may use besides its envs'
    tool_servers: list[str] = Field(default_factory=list)
    temperature: float = 0.0
    max_tokens: int | None = 512
    demonstrations: list[tuple[str, str]] = Field(default_factory=list)
    neighbours: int = Field(default=0, ge=0)
    answer_form: AnswerForm | None = None

    @model_validator(mode="after")
    def _has_a_prompt(self) -> DeployAgentStep:
        if not self.system_prompt and self.task_prompt is None:
            raise ValueError("give the agent a system_prompt, a task_prompt, or both")
        return self

    @property
    def full_system_prompt(self) -> str:
        parts = [self.system_prompt, self.task_prompt.prompt if self.task_prompt else ""]
        return "\n\n".join(part for part in parts if part)

    async def execute(self, context: TaskStepContext) -> None:
        for env_name in self.env_names:
            context.env(env_name)  # fails now, naming the env, rather than at the first prompt
        for server in self.tool_servers:
            tool_server_spec(context, server)
        agent = DeployedAgent(
            name=self.agent_name,
            step_id=self.id,
            system_prompt=self.full_system_prompt,
            model=self.model,
            env_names=self.env_names,
            tool_servers=self.tool_servers,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            demonstrations=self.demonstrations,
            neighbours=self.neighbours,
            answer_form=asdict(self.answer_form) if self.answer_form else None,
        )
        context.deployed_agents = [a for a in context.deployed_agents if a.name != self.agent_name] + [agent]


class PromptAgentStep(TaskStep):
    """Prompt an agent and let it call tools until it answers or runs out of turns. The conversation is
    written as an elizaOS trajectory, so task runs feed the dataset pipeline."""

    type: ClassVar[str] = "prompt_agent"

    agent_name: str
    prompt_id: str
    prompt: str
    #: further user messages, each sent once the agent has answered the one before (a multi-turn
    #: conversation); the response verified is the last answer
    follow_ups: list[str] = Field(default_factory=list)
    #: model calls per user message (the conversation shares the budget: max_turns × messages)
    max_turns: int = Field(default=8, ge=1)
    timeout_seconds: float = 600.0
    #: tools the agent must have called; otherwise the step fails (and can be retried)
    required_tools: list[str] = Field(default_factory=list)

    async def execute(self, context: TaskStepContext) -> None:
        agent = context.agent(self.agent_name)
        stack = contextlib.ExitStack()
        try:
            providers: dict[str, ToolProvider] = {
                name: stack.enter_context(context.env_client(name)) for name in agent.env_names
            }
            for server in agent.tool_servers:  # started off the event loop: starting waits for the server
                providers[server] = await asyncio.to_thread(stack.enter_context, tool_server(context, server))
            routes, tools = await asyncio.to_thread(_tool_routes, providers)
            chat = context.runtime.chat_client()
            try:
                response = await asyncio.wait_for(
                    self._converse(context, agent, chat, routes, tools), self.timeout_seconds
                )
            finally:
                chat.close()
        finally:  # off the event loop: stopping a tool server waits for its process
            await asyncio.to_thread(stack.close)
        context.prompt_responses = [r for r in context.prompt_responses if r.name != self.prompt_id] + [
            response
        ]
        called = {m["function"]["name"] for m in _tool_calls(response.messages)}
        missing = [tool for tool in self.required_tools if tool not in called]
        if missing:
            raise RuntimeError(f"agent {self.agent_name!r} did not call {', '.join(missing)}")

    async def _converse(
        self,
        context: TaskStepContext,
        agent: DeployedAgent,
        chat: ChatClient,
        routes: dict[str, ToolProvider],
        tools: list[dict[str, Any]],
    ) -> PromptResponse:
        runtime = context.runtime
        messages: list[dict[str, Any]] = [{"role": "system", "content": agent.system_prompt}]
        for question, answer in demonstrations_for(agent.demonstrations, self.prompt, agent.neighbours):
            messages += [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]
        messages.append({"role": "user", "content": self.prompt})
        form = {"answer_form": AnswerForm.from_dict(agent.answer_form)} if agent.answer_form else {}
        calls: list[LLMCallRecord] = []
        tool_calls = turns = 0
        started = time.time()
        pending = list(self.follow_ups)
        with capture_usage() as usage:
            for _ in range(self.max_turns * (1 + len(self.follow_ups))):
                turns += 1
                before, clock = list(messages), time.monotonic()
                answer = await asyncio.to_thread(
                    chat.chat,
                    messages,
                    temperature=agent.temperature,
                    max_tokens=agent.max_tokens,
                    tools=tools or None,
                    model=agent.model,
                    **form,
                )
                calls.append(LLMCallRecord(before, answer, time.time(), (time.monotonic() - clock) * 1000))
                messages.append(answer.message)
                if not answer.tool_calls:
                    if not pending:
                        break
                    messages.append({"role": "user", "content": pending.pop(0)})
                    continue
                for call in answer.tool_calls:
                    tool_calls += 1
                    result = await asyncio.to_thread(_run_tool, routes, call)
                    messages.append({"role": "tool", "tool_call_id": call.get("id", ""), "content": result})
        final = messages[-1]
        trajectory = conversation_trajectory(
            run_id=runtime.run_id,
            task_name=runtime.task_name,
            step_id=self.id,
            attempt=runtime.attempt,
            agent_name=agent.name,
            started_at=started,
            calls=calls,
        )
        written = runtime.write_trajectory(trajectory)
        return PromptResponse(
            step_id=self.id,
            prompt_id=self.prompt_id,
            agent_name=agent.name,
            prompt=self.prompt,
            response=str(final.get("content") or "") if final["role"] == "assistant" else "",
            tool_calls=tool_calls,
            turns=turns,
            usage=usage.usage,
            messages=messages,
            trajectory_id=trajectory["trajectoryId"] if written else None,
        )


class ToolProvider(Protocol):
    """An env's client or a tool server: tools as OpenAI function schemas, and a way to call them."""

    def tools(self) -> list[dict[str, Any]]: ...

    def call_tool(self, name: str, arguments: dict[str, Any]) -> Any: ...


def _tool_routes(
    providers: dict[str, ToolProvider],
) -> tuple[dict[str, ToolProvider], list[dict[str, Any]]]:
    routes: dict[str, ToolProvider] = {}
    tools: list[dict[str, Any]] = []
    owners: dict[str, str] = {}
    for owner, provider in providers.items():
        for tool in provider.tools():
            name = tool["function"]["name"]
            if name in routes:
                raise ValueError(f"{owners[name]!r} and {owner!r} both offer the tool {name!r}")
            routes[name], owners[name] = provider, owner
            tools.append(tool)
    return routes, tools


def _run_tool(routes: dict[str, ToolProvider], call: dict[str, Any]) -> str:
    """The tool's result as the tool message's content; errors go back to the agent, not up."""
    function = call.get("function") or {}
    name = function.get("name", "")
    try:
        arguments = json.loads(function.get("arguments") or "{}")
        if name not in routes:
            raise ValueError(f"no tool named {name!r}")
        return json.dumps(routes[name].call_tool(name, arguments))
    except (ValueError, RuntimeError, TimeoutError) as err:
        return json.dumps({"error": str(err) or type(err).__name__})


def _tool_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [call for m in messages if m.get("role") == "assistant" for call in m.get("tool_calls") or ()]


class DeployToolServerStep(TaskStep):
    """Register an MCP tool server (a command speaking MCP over stdio, e.g. a script of the task
    folder) for agents to use: it is started confined, its tools listed to check that it works, and
    stopped; each conversation of an agent that names it starts it again. With `sandbox_name` it runs in
    that deployed sandbox's folder, so its tools work on the files later steps see."""

    type: ClassVar[str] = "deploy_tool_server"

    server_name: str
    #: a Python file of the task folder, or an installed module (`python -m`), that serves MCP on stdio
    script: RelativePath | None = None
    module: str | None = None
    args: list[str] = Field(default_factory=list)
    sandbox_name: str | None = None
    #: limits when it runs outside a deployed sandbox (inside one, the sandbox's apply)
    limits: Limits = Limits()
    timeout_seconds: float = Field(default=30.0, gt=0)

    @model_validator(mode="after")
    def _script_or_module(self) -> DeployToolServerStep:
        if (self.script is None) == (self.module is None):
            raise ValueError("give exactly one of script and module")
        return self

    async def execute(self, context: TaskStepContext) -> None:
        if self.sandbox_name is not None:
            context.sandbox(self.sandbox_name)
        files: list[str] = []
        if self.script is not None:
            files.append(str(resolve_inside(context.runtime.base_dir, self.script)))
            command = ["python", files[0], *self.args]
        else:
            command = ["python", "-m", str(self.module), *self.args]
        context.metadata.setdefault("tool_servers", {})[self.server_name] = {
            "step_id": self.id,
            "command": command,
            "files": files,
            "sandbox_name": self.sandbox_name,
            "limits": self.limits.model_dump(),
            "timeout_seconds": self.timeout_seconds,
        }
        server = await asyncio.to_thread(tool_server(context, self.server_name).__enter__)
        try:
            names = [tool["function"]["name"] for tool in server.tools()]
        finally:
            await asyncio.to_thread(server.close)
        context.metadata["tool_servers"][self.server_name]["tools"] = names
        context.runtime.log.info(f"tool server {self.server_name!r} offers {', '.join(names) or 'no tools'}")


def tool_server_spec(context: TaskStepContext, name: str) -> dict[str, Any]:
    spec = context.metadata.get("tool_servers", {}).get(name)
    if spec is None:
        raise LookupError(f"no tool server named {name!r} in the run context (deploy_tool_server first)")
    return spec


def tool_server(context: TaskStepContext, name: str) -> ToolServer:
    """The registered tool server `name`, to start (`with`, or `__enter__` then `close`)."""
    spec = tool_server_spec(context, name)
    files = tuple(Path(path) for path in spec.get("files", ()))  # the script alone, not its folder
    if spec["sandbox_name"]:
        sandbox = confined(context, spec["sandbox_name"], files)
    else:
        sandbox = Sandbox(context.runtime.work_dir(spec["step_id"]), Limits(**spec["limits"]), readonly=files)
    errlog = context.runtime.work_dir(spec["step_id"]) / f"{name}.stderr.log"
    return ToolServer(name, sandbox, spec["command"], errlog, spec["timeout_seconds"])
