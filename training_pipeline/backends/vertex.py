"""Vertex AI Gemini supervised tuning: Vertex JSONL → Cloud Storage → `tuningJobs` → poll.

Shapes are checked as elizaOS checks them (project id, region, job name), and the bearer token is only
ever sent to Google's hosts (or to loopback, where tests run a stand-in of the service).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlparse

from training_pipeline.backends.base import BackendError, DispatchRequest, DispatchResult
from training_pipeline.backends.formats import (
    VERTEX_MIN_EXAMPLES,
    Ask,
    calls_text,
    chat_converter,
    convert_file,
    to_vertex,
    validate_vertex_file,
)
from training_pipeline.backends.http import ServiceClient, poll

REGION = re.compile(r"^[a-z]{2,20}(?:-[a-z]+)?[1-9]$")
PROJECT_ID = re.compile(r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")
JOB_NAME = re.compile(
    r"^projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/locations/[a-z0-9-]{2,30}/tuningJobs/\d{1,30}$"
)
TERMINAL = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED"}
#: elizaOS's choice of base model per task when none is configured.
DEFAULT_BASE_MODEL = {"action_planner": "gemini-2.5-flash", "response": "gemini-2.5-flash"}
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


@dataclass(frozen=True)
class VertexTarget:
    project_id: str
    region: str
    gcs_bucket: str
    api_endpoint: str | None = None  # None: Google's hosts; otherwise loopback only (tests)

    def check(self) -> None:
        if not PROJECT_ID.fullmatch(self.project_id):
            raise BackendError(f"Invalid GCP project ID: {self.project_id}")
        if not REGION.fullmatch(self.region):
            raise BackendError(f"Invalid Vertex region: {self.region}")
        if self.api_endpoint and urlparse(self.api_endpoint).hostname not in _LOOPBACK:
            raise BackendError(f"Refusing to send a Google token to {urlparse(self.api_endpoint).hostname}")

    def storage_url(self) -> str:
        return self.api_endpoint or "https://storage.googleapis.com"

    def aiplatform_url(self) -> str:
        return self.api_endpoint or f"https://{self.region}-aiplatform.googleapis.com"


def create_tuning_job(
    request: DispatchRequest,
    target: VertexTarget,
    token: str,
    base_model: str | None,
    epochs: int,
    learning_rate_multiplier: float,
) -> DispatchResult:
    """Convert, validate, upload and create the job; polling is `poll_tuning_job`'s (its own step)."""
    target.check()
    as_chat = chat_converter(request.format)
    files = {"training": (request.dataset_path, request.work_dir / f"{request.task}.vertex.jsonl")}
    if request.validation_path is not None:
        files["validation"] = (
            request.validation_path,
            request.work_dir / f"{request.task}.validation.vertex.jsonl",
        )
    counts, uris = {}, {}
    display_name = f"{request.task}-{request.run_id}"[:128]
    for name, (source, converted) in files.items():
        convert_file(source, converted, lambda example: to_vertex(as_chat(example)))
        counts[name] = validate_vertex_file(
            converted, minimum=VERTEX_MIN_EXAMPLES if name == "training" else 1
        )
    storage = ServiceClient("Cloud Storage", target.storage_url(), token)
    try:
        for name, (_, converted) in files.items():
            object_name = f"tuning-data/{display_name}/{name}.jsonl"
            with converted.open("rb") as handle:
                storage.request(
                    "POST",
                    f"/upload/storage/v1/b/{quote(target.gcs_bucket, safe='')}/o",
                    params={"uploadType": "media", "name": object_name},
                    headers={"content-type": "application/octet-stream"},
                    content=handle.read(),
                )
            uris[name] = f"gs://{target.gcs_bucket}/{object_name}"
    finally:
        storage.close()
    uri, count = uris["training"], counts["training"]
    request.log(
        f"uploaded {count} examples to {uri}"
        + (f", {counts['validation']} to validate on" if "validation" in uris else "")
    )
    model = base_model or DEFAULT_BASE_MODEL.get(request.task, "gemini-2.5-flash-lite")
    vertex = ServiceClient("Vertex AI", target.aiplatform_url(), token)
    try:
        job = vertex.request(
            "POST",
            f"/v1/projects/{target.project_id}/locations/{target.region}/tuningJobs",
            json={
                "baseModel": model,
                "supervisedTuningSpec": {
                    "trainingDatasetUri": uri,
                    **({"validationDatasetUri": uris["validation"]} if "validation" in uris else {}),
                    "hyperParameters": {
                        "epochCount": epochs,
                        "learningRateMultiplier": learning_rate_multiplier,
                    },
                },
                "tunedModelDisplayName": display_name,
            },
        )
    finally:
        vertex.close()
    name = job.get("name", "")
    if not JOB_NAME.fullmatch(name):
        raise BackendError(f"Vertex AI answered with an invalid tuning job name: {name!r}")
    request.log(f"Vertex tuning job {name}: {job.get('state')}")
    return DispatchResult(
        True,
        artifact_path=name,
        notes=[f"Vertex tuning job {name} created on {model} with {count} examples", f"training data {uri}"],
        details={
            "poll": {"service": "vertex", "job": name},
            "state": job.get("state"),
            "training_uri": uri,
            "validation_uri": uris.get("validation"),
            "base_model": model,
        },
    )


def poll_tuning_job(
    target: VertexTarget,
    token: str,
    name: str,
    poll_seconds: float,
    timeout_seconds: float,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """Poll to a terminal state (logging every change); returns the final job."""
    if not JOB_NAME.fullmatch(name):
        raise BackendError(f"Invalid Vertex tuning job name: {name}")
    target.check()
    client = ServiceClient("Vertex AI", target.aiplatform_url(), token)
    try:
        return poll(
            lambda: client.request("GET", f"/v1/{name}"),
            lambda job: job.get("state"),
            TERMINAL,
            f"Vertex tuning job {name}",
            poll_seconds,
            timeout_seconds,
            log,
        )
    finally:
        client.close()


def tuned_endpoint(job: dict[str, Any]) -> str | None:
    tuned = job.get("tunedModel") or {}
    return tuned.get("endpoint") or job.get("tunedModelEndpointName")


def base_model_path(target: VertexTarget, model: str) -> str:
    """The Gemini model a tuning job started from, as `generateContent` names it."""
    return f"projects/{target.project_id}/locations/{target.region}/publishers/google/models/{model}"


def gemini_model(client: ServiceClient, model_path: str, max_tokens: int = 512) -> Ask:
    """The model at `model_path` (a tuned model's endpoint, or `base_model_path`) answering through
    `generateContent` on `client` (Vertex AI's), deterministic; a function call is answered as
    `answer_text` writes tool calls."""

    def ask(prompt: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
        body = to_vertex({"messages": prompt, "tools": tools or []})
        body["generationConfig"] = {"temperature": 0, "maxOutputTokens": max_tokens}
        reply = client.request("POST", f"/v1/{model_path}:generateContent", json=body, idempotent=True)
        parts = ((reply.get("candidates") or [{}])[0].get("content") or {}).get("parts") or []
        calls = [p["functionCall"] for p in parts if "functionCall" in p]
        if calls:
            return calls_text([(c["name"], c.get("args") or {}) for c in calls])
        return "".join(p.get("text", "") for p in parts)

    return ask
