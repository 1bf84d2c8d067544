"""A scripted OpenAI-compatible chat server on loopback: exact answers for exact assertions.

`reply` decides each answer from the request body (content, tool calls, or an HTTP error); every request
is recorded. It speaks `POST /v1/chat/completions` with the real response shape, including `usage`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = dict[
    str, Any
]  # {"content": str} | {"tool_calls": [...]} | {"status": int, "error": str, "headers": {}}


def _default(body: dict[str, Any]) -> Reply:
    return {"content": f"echo: {body['messages'][-1].get('content')}"}


class FakeChatServer:
    def __init__(self, reply: Callable[[dict[str, Any]], Reply] = _default, delay: float = 0.0) -> None:
        self.reply = reply
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                with server._lock:
                    server.requests.append(body)
                    server.headers.append(dict(self.headers))
                if server.delay:
                    time.sleep(server.delay)
                answer = server.reply(body)
                if "status" in answer:
                    self._send(
                        answer["status"],
                        {"error": {"message": answer.get("error", "error")}},
                        answer.get("headers", {}),
                    )
                    return
                message: dict[str, Any] = {"role": "assistant", "content": answer.get("content")}
                if answer.get("tool_calls"):
                    message["tool_calls"] = answer["tool_calls"]
                prompt = sum(len(str(m.get("content") or "").split()) for m in body["messages"])
                completion = len(str(answer.get("content") or "").split()) + 1
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{len(server.requests)}",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body.get("model"),
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
                    },
                )

            def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
