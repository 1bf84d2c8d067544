"""An agent conversation as an elizaOS trajectory: one step per LLM call, prompts rendered the way
elizaOS agents log them, so the dataset pipeline takes task runs like any other agent traffic."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from training_pipeline.llm.client import ChatResponse


@dataclass
class LLMCallRecord:
    messages: list[dict[str, Any]]
    answer: ChatResponse
    finished_at: float
    latency_ms: float


def render_messages(messages: list[dict[str, Any]]) -> str:
    """Every non-system message as `role: text` lines; tool calls and results as compact JSON."""
    lines = []
    for message in messages:
        role = message.get("role")
        if role == "system":
            continue
        content = message.get("content") or ""
        if message.get("tool_calls"):
            calls = [call.get("function") for call in message["tool_calls"]]
            content = (content + "\n" if content else "") + "tool_calls: " + json.dumps(calls)
        lines.append(f"{role}: {content}")
    return "\n".join(lines)


def conversation_trajectory(
    *,
    run_id: str,
    task_name: str,
    step_id: str,
    attempt: int,
    agent_name: str,
    started_at: float,
    calls: list[LLMCallRecord],
) -> dict[str, Any]:
    trajectory_id = f"task-{run_id}-{step_id}-{attempt}"
    steps = []
    for index, call in enumerate(calls):
        answer = call.answer
        system = next((m.get("content") or "" for m in call.messages if m.get("role") == "system"), "")
        if answer.tool_calls:
            response = json.dumps({"tool_calls": [c.get("function") for c in answer.tool_calls]})
            purpose = "action"
        else:
            response, purpose = answer.content or "", "response"
        timestamp = int(call.finished_at * 1000)
        steps.append(
            {
                "stepId": f"{trajectory_id}-{index}",
                "timestamp": timestamp,
                "kind": "llm",
                "llmCalls": [
                    {
                        "callId": f"{trajectory_id}-call-{index}",
                        "timestamp": timestamp,
                        "model": answer.model,
                        "systemPrompt": system,
                        "userPrompt": render_messages(call.messages),
                        "response": response,
                        "purpose": purpose,
                        "stepType": "tool_call" if answer.tool_calls else "reply",
                        "promptTokens": answer.usage.prompt_tokens,
                        "completionTokens": answer.usage.completion_tokens,
                        "latencyMs": round(call.latency_ms, 1),
                    }
                ],
            }
        )
    end = max([started_at * 1000, *(s["timestamp"] for s in steps)])
    return {
        "trajectoryId": trajectory_id,
        "agentId": agent_name,
        "source": f"task:{task_name}",
        "startTime": int(started_at * 1000),
        "endTime": int(end),
        "durationMs": int(end - started_at * 1000),
        "scenarioId": task_name,
        "batchId": run_id,
        "steps": steps,
        "metadata": {"taskRunId": run_id, "taskStepId": step_id, "attempt": attempt},
    }
