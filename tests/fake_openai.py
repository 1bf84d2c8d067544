"""A loopback stand-in for OpenAI's fine-tuning REST API (the hosted service cannot be reached here).

It speaks the real protocol: `POST /v1/files` (multipart, `purpose=fine-tune`), `POST /v1/fine_tuning/jobs`,
`GET /v1/fine_tuning/jobs/{id}` moving through validating_files → running → succeeded, bearer auth with
OpenAI's 401 body, and OpenAI's `{"error": {...}}` shape for refusals. Faults can be injected.
"""

from __future__ import annotations

import json
import re
import threading
from email.parser import BytesParser
from email.policy import default
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeOpenAI:
    def __init__(self, api_key: str = "sk-test-key-for-fake-server-0000") -> None:
        self.api_key = api_key
        self.files: dict[str, dict[str, Any]] = {}
        self.jobs: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str]] = []
        self.fail_next_get_with: list[int] = []  # status codes to answer the next job GETs with
        self.job_outcome = "succeeded"
        self.reject_create: str | None = None
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _authorised(self) -> bool:
                if self.headers.get("authorization") == f"Bearer {server.api_key}":
                    return True
                self._send(
                    401,
                    {
                        "error": {
                            "message": "Incorrect API key provided.",
                            "type": "invalid_request_error",
                            "code": "invalid_api_key",
                        }
                    },
                )
                return False

            def do_POST(self) -> None:
                server.requests.append(("POST", self.path))
                if not self._authorised():
                    return
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                if self.path == "/v1/files":
                    message = BytesParser(policy=default).parsebytes(
                        b"content-type: " + self.headers["content-type"].encode() + b"\r\n\r\n" + body
                    )
                    parts = {
                        p.get_param("name", header="content-disposition"): p for p in message.iter_parts()
                    }
                    if parts["purpose"].get_content().strip() != "fine-tune" or "file" not in parts:
                        return self._send(400, {"error": {"message": "purpose must be fine-tune"}})
                    content = parts["file"].get_payload(decode=True)
                    file_id = f"file-{len(server.files) + 1:04d}"
                    server.files[file_id] = {
                        "id": file_id,
                        "bytes": len(content),
                        "content": content,
                        "filename": parts["file"].get_filename(),
                        "purpose": "fine-tune",
                    }
                    return self._send(
                        200,
                        {
                            "object": "file",
                            "id": file_id,
                            "bytes": len(content),
                            "purpose": "fine-tune",
                            "filename": parts["file"].get_filename(),
                        },
                    )
                if self.path == "/v1/fine_tuning/jobs":
                    if server.reject_create:
                        return self._send(400, {"error": {"message": server.reject_create}})
                    request = json.loads(body)
                    if request.get("training_file") not in server.files:
                        return self._send(400, {"error": {"message": "invalid training_file"}})
                    job_id = f"ftjob-{len(server.jobs) + 1:04d}"
                    server.jobs[job_id] = {
                        "object": "fine_tuning.job",
                        "id": job_id,
                        "model": request["model"],
                        "training_file": request["training_file"],
                        "status": "validating_files",
                        "fine_tuned_model": None,
                        "error": None,
                        "polls": 0,
                        "suffix": request.get("suffix"),
                    }
                    return self._send(200, _public(server.jobs[job_id]))
                self._send(404, {"error": {"message": "not found"}})

            def do_GET(self) -> None:
                server.requests.append(("GET", self.path))
                if not self._authorised():
                    return
                match = re.fullmatch(r"/v1/fine_tuning/jobs/([\w-]+)", self.path)
                if not match or match[1] not in server.jobs:
                    return self._send(404, {"error": {"message": "job not found"}})
                if server.fail_next_get_with:
                    return self._send(
                        server.fail_next_get_with.pop(0), {"error": {"message": "server error"}}
                    )
                job = server.jobs[match[1]]
                job["polls"] += 1
                job["status"] = ["validating_files", "running", server.job_outcome][min(job["polls"], 2)]
                if job["status"] == "succeeded":
                    job["fine_tuned_model"] = f"ft:{job['model']}:org::{match[1]}"
                if job["status"] == "failed":
                    job["error"] = {"code": "invalid_training_file", "message": "training file has bad lines"}
                self._send(200, _public(job))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def _public(job: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in job.items() if k != "polls"}
