"""An LLM agent with the tools of its envs, and the step that prompts it."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, ClassVar

from pydantic import Field

from training_pipeline.llm.client import ChatClient
from training_pipeline.llm.usage import capture_usage
from training_pipeline.tasks.context import DeployedAgent, PromptResponse, TaskStepContext
from training_pipeline.tasks.envs.kinds import EnvClient
from training_pipeline.tasks.step import TaskStep
from training_pipeline.tasks.trajectory import LLMCallRecord, conversation_trajectory


class DeployAgentStep(TaskStep):
    """Register an agent: system prompt, model, sampling, and the envs whose tools it may use."""

    type: ClassVar[str] = "deploy_agent"

    agent_name: str
    system_prompt: str
    model: str | None = None
    env_names: list[str] = Field(default_factory=list)
    temperature: float = 0.0
    max_tokens: int | None = 512

    async def execute(self, context: TaskStepContext) -> None:
        for env_name in self.env_names:
            context.env(env_name)  # fails now, naming the env, rather than at the first prompt
        agent = DeployedAgent(
            name=self.agent_name,
            step_id=self.id,
            system_prompt=self.system_prompt,
            model=self.model,
            env_names=self.env_names,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
        )
        context.deployed_agents = [a for a in context.deployed_agents if a.name != self.agent_name] + [agent]


class PromptAgentStep(TaskStep):
    """Prompt an agent and let it call tools until it answers or runs out of turns. The conversation is
    written as an elizaOS trajectory, so task runs feed the dataset pipeline."""

    type: ClassVar[str] = "prompt_agent"

    agent_name: str
    prompt_id: str
    prompt: str
    max_turns: int = Field(default=8, ge=1)
    timeout_seconds: float = 600.0
    #: tools the agent must have called; otherwise the step fails (and can be retried)
    required_tools: list[str] = Field(default_factory=list)

    async def execute(self, context: TaskStepContext) -> None:
        agent = context.agent(self.agent_name)
        clients = {name: context.env_client(name) for name in agent.env_names}
        try:
            routes, tools = await asyncio.to_thread(_tool_routes, clients)
            chat = context.runtime.chat_client()
            try:
                response = await asyncio.wait_for(
                    self._converse(context, agent, chat, routes, tools), self.timeout_seconds
                )
            finally:
                chat.close()
        finally:
            for client in clients.values():
                client.close()
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
        routes: dict[str, EnvClient],
        tools: list[dict[str, Any]],
    ) -> PromptResponse:
        runtime = context.runtime
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": agent.system_prompt},
            {"role": "user", "content": self.prompt},
        ]
        calls: list[LLMCallRecord] = []
        tool_calls = turns = 0
        started = time.time()
        with capture_usage() as usage:
            for turns in range(1, self.max_turns + 1):  # noqa: B007 - the last value is the count
                before, clock = list(messages), time.monotonic()
                answer = await asyncio.to_thread(
                    chat.chat,
                    messages,
                    temperature=agent.temperature,
                    max_tokens=agent.max_tokens,
                    tools=tools or None,
                    model=agent.model,
                )
                calls.append(LLMCallRecord(before, answer, time.time(), (time.monotonic() - clock) * 1000))
                messages.append(answer.message)
                if not answer.tool_calls:
                    break
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


def _tool_routes(clients: dict[str, EnvClient]) -> tuple[dict[str, EnvClient], list[dict[str, Any]]]:
    routes: dict[str, EnvClient] = {}
    tools: list[dict[str, Any]] = []
    owners: dict[str, str] = {}
    for env_name, client in clients.items():
        for tool in client.tools():
            name = tool["function"]["name"]
            if name in routes:
                raise ValueError(f"envs {owners[name]!r} and {env_name!r} both offer the tool {name!r}")
            routes[name], owners[name] = client, env_name
            tools.append(tool)
    return routes, tools


def _run_tool(routes: dict[str, EnvClient], call: dict[str, Any]) -> str:
    """The tool's result as the tool message's content; errors go back to the agent, not up."""
    function = call.get("function") or {}
    name = function.get("name", "")
    try:
        arguments = json.loads(function.get("arguments") or "{}")
        if name not in routes:
            raise ValueError(f"no tool named {name!r}")
        return json.dumps(routes[name].call_tool(name, arguments))
    except (ValueError, RuntimeError) as err:
        return json.dumps({"error": str(err)})


def _tool_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [call for m in messages if m.get("role") == "assistant" for call in m.get("tool_calls") or ()]
