"""A loopback stand-in for OpenAI's fine-tuning REST API (the hosted service cannot be reached here).

It speaks the real protocol: `POST /v1/files` (multipart, `purpose=fine-tune`), `POST /v1/fine_tuning/jobs`,
`GET /v1/fine_tuning/jobs/{id}` moving through validating_files → running → succeeded, bearer auth with
OpenAI's 401 body, and OpenAI's `{"error": {...}}` shape for refusals. Faults can be injected.
`POST /v1/chat/completions` answers as the base model or as a job's fine-tuned model
(`tests.tuned_behaviour`: from the job's training file; `tuning_learns = False`: as its base).
"""

from __future__ import annotations

import json
import re
from email.parser import BytesParser
from email.policy import default
from typing import Any

from tests.loopback import Answer, LoopbackJSONServer
from tests.tuned_behaviour import BASE_ANSWER, NearestExample


class FakeOpenAI(LoopbackJSONServer):
    def __init__(self, api_key: str = "sk-test-key-for-fake-server-0000") -> None:
        super().__init__()
        self.api_key = api_key
        self.files: dict[str, dict[str, Any]] = {}
        self.jobs: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str]] = []
        self.fail_next_get_with: list[int] = []  # status codes to answer the next job GETs with
        self.job_outcome = "succeeded"
        self.reject_create: str | None = None
        self.tuning_learns = True
        self.chats: list[dict[str, Any]] = []

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def handle(self, method: str, path: str, headers: Any, body: bytes) -> Answer:
        self.requests.append((method, path))
        if headers.get("authorization") != f"Bearer {self.api_key}":
            return 401, {
                "error": {
                    "message": "Incorrect API key provided.",
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                }
            }
        if method == "POST" and path == "/v1/files":
            return self._upload(headers, body)
        if method == "POST" and path == "/v1/fine_tuning/jobs":
            return self._create(json.loads(body))
        if method == "POST" and path == "/v1/chat/completions":
            return self._chat(json.loads(body))
        match = re.fullmatch(r"/v1/fine_tuning/jobs/([\w-]+)", path)
        if method == "GET" and match and match[1] in self.jobs:
            return self._get(match[1])
        return 404, {"error": {"message": "not found"}}

    def _upload(self, headers: Any, body: bytes) -> Answer:
        message = BytesParser(policy=default).parsebytes(
            b"content-type: " + headers["content-type"].encode() + b"\r\n\r\n" + body
        )
        parts = {p.get_param("name", header="content-disposition"): p for p in message.iter_parts()}
        if "file" not in parts or parts["purpose"].get_content().strip() != "fine-tune":
            return 400, {"error": {"message": "purpose must be fine-tune"}}
        content = parts["file"].get_payload(decode=True)
        file_id = f"file-{len(self.files) + 1:04d}"
        self.files[file_id] = {
            "id": file_id,
            "bytes": len(content),
            "content": content,
            "purpose": "fine-tune",
        }
        return 200, {
            "object": "file",
            "id": file_id,
            "bytes": len(content),
            "purpose": "fine-tune",
            "filename": parts["file"].get_filename(),
        }

    def _create(self, request: dict[str, Any]) -> Answer:
        if self.reject_create:
            return 400, {"error": {"message": self.reject_create}}
        if request.get("training_file") not in self.files:
            return 400, {"error": {"message": "invalid training_file"}}
        job_id = f"ftjob-{len(self.jobs) + 1:04d}"
        self.jobs[job_id] = {
            "object": "fine_tuning.job",
            "id": job_id,
            "model": request["model"],
            "training_file": request["training_file"],
            "status": "validating_files",
            "fine_tuned_model": None,
            "error": None,
            "polls": 0,
            "suffix": request.get("suffix"),
            "validation_file": request.get("validation_file"),
        }
        return 200, _public(self.jobs[job_id])

    def _get(self, job_id: str) -> Answer:
        if self.fail_next_get_with:
            return self.fail_next_get_with.pop(0), {"error": {"message": "server error"}}
        job = self.jobs[job_id]
        job["polls"] += 1
        job["status"] = ["validating_files", "running", self.job_outcome][min(job["polls"], 2)]
        if job["status"] == "succeeded":
            job["fine_tuned_model"] = f"ft:{job['model']}:org::{job_id}"
        if job["status"] == "failed":
            job["error"] = {"code": "invalid_training_file", "message": "training file has bad lines"}
        return 200, _public(job)

    def _chat(self, request: dict[str, Any]) -> Answer:
        self.chats.append(request)
        job = next((j for j in self.jobs.values() if j["fine_tuned_model"] == request["model"]), None)
        answer: dict[str, Any] = {"role": "assistant", "content": BASE_ANSWER}
        if job is not None and self.tuning_learns:
            lines = self.files[job["training_file"]]["content"].decode().splitlines()
            examples = [json.loads(line)["messages"] for line in lines]
            model = NearestExample([(_last_user(messages), messages[-1]) for messages in examples])
            answer = model.answer(_last_user(request["messages"]))
        return 200, {
            "id": f"chatcmpl-{len(self.chats)}",
            "object": "chat.completion",
            "model": request["model"],
            "choices": [{"index": 0, "message": answer, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }


def _last_user(messages: list[dict[str, Any]]) -> str:
    return next((m.get("content") or "" for m in reversed(messages) if m["role"] == "user"), "")


def _public(job: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in job.items() if k != "polls"}
