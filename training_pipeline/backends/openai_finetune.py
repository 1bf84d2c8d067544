"""OpenAI fine-tuning: chat JSONL → `POST /files` → `POST /fine_tuning/jobs` → poll to a terminal state."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from training_pipeline.backends.base import BackendError, DispatchRequest, DispatchResult
from training_pipeline.backends.formats import convert_file, to_chat, validate_openai_file
from training_pipeline.backends.http import ServiceClient

TERMINAL = {"succeeded", "failed", "cancelled"}


def wait_for_job(
    client: ServiceClient,
    job_id: str,
    poll_seconds: float,
    timeout_seconds: float,
    log: Callable[[str], None],
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_seconds
    last = None
    while True:
        job = client.request("GET", f"/fine_tuning/jobs/{job_id}")
        status = job.get("status")
        if status != last:
            log(f"OpenAI fine-tuning job {job_id}: {status}")
            last = status
        if status in TERMINAL:
            return job
        if time.monotonic() > deadline:
            raise BackendError(f"OpenAI fine-tuning job {job_id} still {status} after {timeout_seconds:.0f}s")
        time.sleep(poll_seconds)


def run_openai_finetune(
    request: DispatchRequest,
    client: ServiceClient,
    model: str,
    wait: bool = True,
    poll_seconds: float = 30.0,
    timeout_seconds: float = 24 * 3600,
) -> DispatchResult:
    training_file = request.work_dir / f"{request.task}.openai.jsonl"
    convert_file(request.dataset_path, training_file, to_chat)
    count = validate_openai_file(training_file)
    with training_file.open("rb") as handle:
        uploaded = client.request(
            "POST", "/files", data={"purpose": "fine-tune"}, files={"file": (training_file.name, handle)}
        )
    request.log(f"uploaded {count} examples to OpenAI as {uploaded.get('id')}")
    job = client.request(
        "POST",
        "/fine_tuning/jobs",
        json={"training_file": uploaded["id"], "model": model, "suffix": request.task.replace("_", "-")[:18]},
    )
    details: dict[str, Any] = {"file_id": uploaded["id"], "job_id": job["id"], "status": job.get("status")}
    notes = [f"OpenAI fine-tuning job {job['id']} created on {model} with {count} examples"]
    if wait:
        job = wait_for_job(client, job["id"], poll_seconds, timeout_seconds, request.log)
        details["status"] = job["status"]
        if job["status"] != "succeeded":
            error = job.get("error") or {}
            raise BackendError(
                f"OpenAI fine-tuning job {job['id']} {job['status']}: {error.get('message') or error}"
            )
        details["fine_tuned_model"] = job.get("fine_tuned_model")
        notes.append(f"fine-tuned model: {job.get('fine_tuned_model')}")
    return DispatchResult(
        True, artifact_path=details.get("fine_tuned_model") or job["id"], notes=notes, details=details
    )
