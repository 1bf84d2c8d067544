"""OpenAI fine-tuning: chat JSONL → `POST /files` → `POST /fine_tuning/jobs` → poll to a terminal state."""

from __future__ import annotations

from typing import Any

from training_pipeline.backends.base import BackendError, DispatchRequest, DispatchResult
from training_pipeline.backends.formats import chat_converter, convert_file, validate_openai_file
from training_pipeline.backends.http import ServiceClient, poll

TERMINAL = {"succeeded", "failed", "cancelled"}


def run_openai_finetune(
    request: DispatchRequest,
    client: ServiceClient,
    model: str,
    wait: bool = True,
    poll_seconds: float = 30.0,
    timeout_seconds: float = 24 * 3600,
) -> DispatchResult:
    training_file = request.work_dir / f"{request.task}.openai.jsonl"
    convert_file(request.dataset_path, training_file, chat_converter(request.format))
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
        job_id = job["id"]
        job = poll(
            lambda: client.request("GET", f"/fine_tuning/jobs/{job_id}"),
            lambda j: j.get("status"),
            TERMINAL,
            f"OpenAI fine-tuning job {job_id}",
            poll_seconds,
            timeout_seconds,
            request.log,
        )
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
