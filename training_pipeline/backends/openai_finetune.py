"""OpenAI fine-tuning: chat JSONL → `POST /files` → `POST /fine_tuning/jobs` → poll to a terminal state."""

from __future__ import annotations

from typing import Any

from training_pipeline.backends.base import BackendError, DispatchRequest, DispatchResult
from training_pipeline.backends.formats import (
    Ask,
    answer_text,
    chat_converter,
    convert_file,
    validate_openai_file,
)
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
    uploaded = _upload(client, training_file)
    request.log(f"uploaded {count} examples to OpenAI as {uploaded.get('id')}")
    spec = {"training_file": uploaded["id"], "model": model, "suffix": request.task.replace("_", "-")[:18]}
    if request.validation_path is not None:
        validation_file = request.work_dir / f"{request.task}.validation.openai.jsonl"
        convert_file(request.validation_path, validation_file, chat_converter(request.format))
        validation_count = validate_openai_file(validation_file, minimum=1)
        spec["validation_file"] = _upload(client, validation_file)["id"]
        request.log(f"uploaded {validation_count} validation examples as {spec['validation_file']}")
    job = client.request("POST", "/fine_tuning/jobs", json=spec)
    details: dict[str, Any] = {
        "file_id": uploaded["id"],
        "validation_file_id": spec.get("validation_file"),
        "job_id": job["id"],
        "status": job.get("status"),
        "base_model": model,
    }
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
        # `tuned_model` judges it on the run's test split through the chat endpoint
        details["poll"] = {"service": "openai", "model": job.get("fine_tuned_model")}
        notes.append(f"fine-tuned model: {job.get('fine_tuned_model')}")
    return DispatchResult(
        True, artifact_path=details.get("fine_tuned_model") or job["id"], notes=notes, details=details
    )


def _upload(client: ServiceClient, path: Any) -> dict[str, Any]:
    with path.open("rb") as handle:
        return client.request(
            "POST", "/files", data={"purpose": "fine-tune"}, files={"file": (path.name, handle)}
        )


def chat_model(client: ServiceClient, model: str, max_tokens: int = 512) -> Ask:
    """`model` (a base model or a fine-tuned one) answering through chat completions, deterministic."""

    def ask(prompt: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
        body: dict[str, Any] = {
            "model": model,
            "messages": prompt,
            "temperature": 0,
            "max_tokens": max_tokens,
        }
        if tools:
            body["tools"] = tools
        reply = client.request("POST", "/chat/completions", json=body, idempotent=True)
        return answer_text(reply["choices"][0]["message"])

    return ask
