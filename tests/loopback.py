"""The HTTP plumbing of the stand-ins for remote services: a JSON server on 127.0.0.1 in a thread.

A subclass implements `handle(method, path, headers, body) -> (status, payload[, headers])` with the
service's real paths and shapes; this class does the sockets, the lifecycle and the JSON. A payload of
bytes goes out as it is, with the content type the extra headers name (protobuf answers).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = tuple[int, dict[str, Any] | bytes] | tuple[int, dict[str, Any] | bytes, dict[str, str]]


class LoopbackJSONServer:
    def __init__(self) -> None:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._answer("GET")

            def do_POST(self) -> None:
                self._answer("POST")

            def _answer(self, method: str) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                status, payload, *extra = owner.handle(method, self.path, self.headers, body)
                headers = {"content-type": "application/json", **(extra[0] if extra else {})}
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                headers["content-length"] = str(len(data))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def handle(self, method: str, path: str, headers: Any, body: bytes) -> Answer:
        raise NotImplementedError

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
