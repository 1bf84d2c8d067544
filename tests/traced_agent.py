"""A small tool-using agent on the real `openai` client, traced by a real instrumentation and exported by
the real OTLP/HTTP exporter: what a user's agent sends us. Run as a process of its own (instrumentors
patch the client for the whole process):

    python -m tests.traced_agent --instrumentation genai|openinference|both \
        --chat-url URL --otlp-endpoint URL/v1/traces --record sent.json

Two conversations: a weather question answered through a tool call (two LLM calls, an agent span and a
tool span, one conversation id), and a plain translation (one call, no tools). `--record` writes each
LLM call's request messages, tools and answer as the client sent and got them.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
SYSTEM = "You are a weather assistant. Answer briefly."
QUESTION = "What is the weather in Paris? Mail me at jane.doe@example.com, my token is tok-live-0f9e8d7c6b5a"


def reply(body: dict[str, Any]) -> dict[str, Any]:
    """The chat server's answers (`tests.fake_chat.FakeChatServer`)."""
    last = body["messages"][-1]
    if last["role"] == "user" and "weather" in last["content"]:
        return {
            "tool_calls": [
                {
                    "id": "call_weather_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ]
        }
    if last["role"] == "tool":
        return {"content": "It is sunny in Paris, 24 °C."}
    return {"content": "Bonjour."}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instrumentation", choices=["genai", "openinference", "both"], required=True)
    parser.add_argument("--chat-url", required=True)
    parser.add_argument("--otlp-endpoint", required=True)
    parser.add_argument("--record", type=Path, required=True)
    args = parser.parse_args()

    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "weather-service"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=args.otlp_endpoint)))
    trace.set_tracer_provider(provider)
    if args.instrumentation in ("genai", "both"):
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor as GenAI

        GenAI().instrument(tracer_provider=provider)
    if args.instrumentation in ("openinference", "both"):
        from openinference.instrumentation.openai import OpenAIInstrumentor as OpenInference

        OpenInference().instrument(tracer_provider=provider)

    import openai
    from openinference.instrumentation import using_session

    client = openai.OpenAI(base_url=args.chat_url, api_key="sk-test-not-a-real-key-000000")
    tracer = trace.get_tracer("weather-agent")
    sent: list[dict[str, Any]] = []

    def chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> Any:
        request: dict[str, Any] = {"model": "gpt-4o-mini", "messages": messages}
        if tools:
            request["tools"] = tools
        answer = client.chat.completions.create(**request).choices[0].message
        answered = answer.model_dump(exclude_none=True, exclude={"refusal", "annotations"})
        sent.append({"messages": json.loads(json.dumps(messages)), "tools": tools, "answer": answered})
        return answer

    with (
        using_session("conversation-weather-1"),
        tracer.start_as_current_span(
            "invoke_agent weather-agent",
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "weather-agent",
                "gen_ai.conversation.id": "conversation-weather-1",
            },
        ),
    ):
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": QUESTION},
        ]
        answer = chat(messages, TOOLS)
        call = answer.tool_calls[0]
        with tracer.start_as_current_span(
            "execute_tool get_weather",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": call.function.name,
                "gen_ai.tool.call.id": call.id,
            },
        ):
            result = "sunny, 24 °C"
        messages.append(answer.model_dump(exclude_none=True, exclude={"refusal", "annotations"}))
        messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        chat(messages, TOOLS)

    chat(
        [
            {"role": "system", "content": "You translate into French."},
            {"role": "user", "content": "Translate: good morning"},
        ],
        None,
    )
    provider.shutdown()
    args.record.write_text(json.dumps(sent, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
