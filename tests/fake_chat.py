"""A scripted OpenAI-compatible chat server on loopback: exact answers for exact assertions.

`reply` decides each answer from the request body (content, tool calls, or an HTTP error); every request
is recorded. It speaks `POST /v1/chat/completions` with the real response shape, including `usage`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from tests.loopback import Answer, LoopbackJSONServer

Reply = dict[
    str, Any
]  # {"content": str} | {"tool_calls": [...]} | {"status": int, "error": str, "headers": {}}


def _default(body: dict[str, Any]) -> Reply:
    return {"content": f"echo: {body['messages'][-1].get('content')}"}


class FakeChatServer(LoopbackJSONServer):
    def __init__(self, reply: Callable[[dict[str, Any]], Reply] = _default, delay: float = 0.0) -> None:
        super().__init__()
        self.reply = reply
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def handle(self, method: str, path: str, headers: Any, body: bytes) -> Answer:
        request = json.loads(body)
        with self._lock:
            self.requests.append(request)
            self.headers.append(dict(headers))
        if self.delay:
            time.sleep(self.delay)
        answer = self.reply(request)
        if "status" in answer:
            return (
                answer["status"],
                {"error": {"message": answer.get("error", "error")}},
                answer.get("headers", {}),
            )
        message: dict[str, Any] = {"role": "assistant", "content": answer.get("content")}
        if answer.get("tool_calls"):
            message["tool_calls"] = answer["tool_calls"]
        prompt = sum(len(str(m.get("content") or "").split()) for m in request["messages"])
        completion = len(str(answer.get("content") or "").split()) + 1
        return 200, {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": request.get("model"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if answer.get("tool_calls") else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }
