"""A loopback stand-in for Cloud Storage's media upload and Vertex AI's `tuningJobs` REST API.

Real paths, real JSON shapes (`name`, `state`, `tunedModel.endpoint`), bearer auth and Google's error
body (`{"error": {"code", "message", "status"}}`); jobs move PENDING → RUNNING → the chosen outcome.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse


class FakeVertex:
    def __init__(self, token: str = "ya29.test-token-for-the-fake-service") -> None:
        self.token = token
        self.objects: dict[str, bytes] = {}
        self.jobs: dict[str, dict[str, Any]] = {}
        self.outcome = "JOB_STATE_SUCCEEDED"
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

            def _error(self, code: int, message: str, status: str) -> None:
                self._send(code, {"error": {"code": code, "message": message, "status": status}})

            def _authorised(self) -> bool:
                if self.headers.get("authorization") == f"Bearer {server.token}":
                    return True
                self._error(401, "Request had invalid authentication credentials.", "UNAUTHENTICATED")
                return False

            def do_POST(self) -> None:
                if not self._authorised():
                    return
                url = urlparse(self.path)
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                upload = re.fullmatch(r"/upload/storage/v1/b/([^/]+)/o", url.path)
                if upload:
                    query = parse_qs(url.query)
                    if query.get("uploadType") != ["media"] or not query.get("name"):
                        return self._error(400, "uploadType=media and name are required", "INVALID_ARGUMENT")
                    name = query["name"][0]
                    server.objects[f"gs://{upload[1]}/{name}"] = body
                    return self._send(
                        200,
                        {"kind": "storage#object", "bucket": upload[1], "name": name, "size": str(len(body))},
                    )
                create = re.fullmatch(r"/v1/projects/([^/]+)/locations/([^/]+)/tuningJobs", url.path)
                if create:
                    request = json.loads(body)
                    spec = request.get("supervisedTuningSpec", {})
                    if spec.get("trainingDatasetUri") not in server.objects:
                        return self._error(400, "trainingDatasetUri does not exist", "INVALID_ARGUMENT")
                    job_id = str(1000 + len(server.jobs))
                    name = f"projects/{create[1]}/locations/{create[2]}/tuningJobs/{job_id}"
                    server.jobs[name] = {
                        "name": name,
                        "state": "JOB_STATE_PENDING",
                        "request": request,
                        "polls": 0,
                        "tunedModelDisplayName": request.get("tunedModelDisplayName"),
                        "baseModel": request.get("baseModel"),
                    }
                    return self._send(200, _public(server.jobs[name]))
                self._error(404, "not found", "NOT_FOUND")

            def do_GET(self) -> None:
                if not self._authorised():
                    return
                name = urlparse(self.path).path.removeprefix("/v1/")
                job = server.jobs.get(name)
                if job is None:
                    return self._error(404, f"TuningJob {name} not found", "NOT_FOUND")
                job["polls"] += 1
                job["state"] = ["JOB_STATE_PENDING", "JOB_STATE_RUNNING", server.outcome][
                    min(job["polls"], 2)
                ]
                if job["state"] == "JOB_STATE_SUCCEEDED":
                    project, region = name.split("/")[1], name.split("/")[3]
                    job["tunedModel"] = {
                        "model": f"projects/{project}/locations/{region}/models/77",
                        "endpoint": f"projects/{project}/locations/{region}/endpoints/88",
                    }
                if job["state"] == "JOB_STATE_FAILED":
                    job["error"] = {"code": 3, "message": "dataset has too few valid examples"}
                self._send(200, _public(job))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeVertex:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def _public(job: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in job.items() if k not in ("polls", "request")}
