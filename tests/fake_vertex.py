"""A loopback stand-in for Cloud Storage's media upload and Vertex AI's `tuningJobs` REST API.

Real paths, real JSON shapes (`name`, `state`, `tunedModel.endpoint`), bearer auth and Google's error
body (`{"error": {"code", "message", "status"}}`); jobs move PENDING → RUNNING → the chosen outcome.
`POST /v1/{model}:generateContent` answers as a publisher's base model or as a job's tuned endpoint
(`tests.tuned_behaviour`: from the job's training data).
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qs, urlparse

from tests.loopback import Answer, LoopbackJSONServer
from tests.tuned_behaviour import BASE_ANSWER, NearestExample


def _error(code: int, message: str, status: str) -> Answer:
    return code, {"error": {"code": code, "message": message, "status": status}}


class FakeVertex(LoopbackJSONServer):
    def __init__(self, token: str = "ya29.test-token-for-the-fake-service") -> None:
        super().__init__()
        self.token = token
        self.objects: dict[str, bytes] = {}
        self.jobs: dict[str, dict[str, Any]] = {}
        self.outcome = "JOB_STATE_SUCCEEDED"
        self.generated: list[tuple[str, dict[str, Any]]] = []

    @property
    def endpoint(self) -> str:
        return self.origin

    def handle(self, method: str, path: str, headers: Any, body: bytes) -> Answer:
        if headers.get("authorization") != f"Bearer {self.token}":
            return _error(401, "Request had invalid authentication credentials.", "UNAUTHENTICATED")
        url = urlparse(path)
        upload = re.fullmatch(r"/upload/storage/v1/b/([^/]+)/o", url.path)
        create = re.fullmatch(r"/v1/projects/([^/]+)/locations/([^/]+)/tuningJobs", url.path)
        if method == "POST" and upload:
            query = parse_qs(url.query)
            if query.get("uploadType") != ["media"] or not query.get("name"):
                return _error(400, "uploadType=media and name are required", "INVALID_ARGUMENT")
            name = query["name"][0]
            self.objects[f"gs://{upload[1]}/{name}"] = body
            return 200, {"kind": "storage#object", "bucket": upload[1], "name": name, "size": str(len(body))}
        generate = re.fullmatch(r"/v1/(.+):generateContent", url.path)
        if method == "POST" and generate:
            return self._generate(generate[1], json.loads(body))
        if method == "POST" and create:
            return self._create(create[1], create[2], json.loads(body))
        if method == "GET" and url.path.removeprefix("/v1/") in self.jobs:
            return self._get(url.path.removeprefix("/v1/"))
        return _error(404, f"{url.path} not found", "NOT_FOUND")

    def _create(self, project: str, region: str, request: dict[str, Any]) -> Answer:
        if request.get("supervisedTuningSpec", {}).get("trainingDatasetUri") not in self.objects:
            return _error(400, "trainingDatasetUri does not exist", "INVALID_ARGUMENT")
        name = f"projects/{project}/locations/{region}/tuningJobs/{1000 + len(self.jobs)}"
        self.jobs[name] = {
            "name": name,
            "state": "JOB_STATE_PENDING",
            "request": request,
            "polls": 0,
            "tunedModelDisplayName": request.get("tunedModelDisplayName"),
            "baseModel": request.get("baseModel"),
        }
        return 200, _public(self.jobs[name])

    def _get(self, name: str) -> Answer:
        job = self.jobs[name]
        job["polls"] += 1
        job["state"] = ["JOB_STATE_PENDING", "JOB_STATE_RUNNING", self.outcome][min(job["polls"], 2)]
        project, region = name.split("/")[1], name.split("/")[3]
        if job["state"] == "JOB_STATE_SUCCEEDED":
            job["tunedModel"] = {
                "model": f"projects/{project}/locations/{region}/models/77",
                "endpoint": f"projects/{project}/locations/{region}/endpoints/88",
            }
        if job["state"] == "JOB_STATE_FAILED":
            job["error"] = {"code": 3, "message": "dataset has too few valid examples"}
        return 200, _public(job)

    def _generate(self, model: str, request: dict[str, Any]) -> Answer:
        self.generated.append((model, request))
        parts: list[dict[str, Any]] = [{"text": BASE_ANSWER}]
        if "/publishers/google/models/" not in model:
            job = next(
                (j for j in self.jobs.values() if j.get("tunedModel", {}).get("endpoint") == model), None
            )
            if job is None:
                return _error(404, f"{model} not found", "NOT_FOUND")
            uri = job["request"]["supervisedTuningSpec"]["trainingDatasetUri"]
            examples = [json.loads(line)["contents"] for line in self.objects[uri].decode().splitlines()]
            tuned = NearestExample([(_last_user(contents), contents[-1]["parts"]) for contents in examples])
            parts = tuned.answer(_last_user(request["contents"]))
        return 200, {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}]}


def _last_user(contents: list[dict[str, Any]]) -> str:
    user = next((c for c in reversed(contents) if c["role"] == "user"), {"parts": []})
    return "".join(part.get("text", "") for part in user["parts"])


def _public(job: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in job.items() if k not in ("polls", "request")}
