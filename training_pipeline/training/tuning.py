"""Following what a training run left on a hosted service to its end, and writing the outcome on the
run's record: a Vertex tuning job polled to the tuned model's endpoint, or a Tinker run's sampler
weights confirmed listed by the service; or the failure and its reason. Then the tuned model judged
against its base on the run's test split (`judge_tuned`), through the service's own way of answering:
OpenAI's chat completions, Vertex's `generateContent`, Tinker's sampling clients."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from training_pipeline.backends.base import BackendError
from training_pipeline.backends.formats import Ask
from training_pipeline.backends.http import ServiceClient
from training_pipeline.backends.openai_finetune import chat_model
from training_pipeline.backends.tinker import TinkerConfig, sampler_checkpoint, sampling_models
from training_pipeline.backends.vertex import (
    VertexTarget,
    base_model_path,
    gemini_model,
    poll_tuning_job,
    tuned_endpoint,
)
from training_pipeline.training.promotion import PromotionPolicy
from training_pipeline.training.run_records import RunRecord, RunStore
from training_pipeline.training.tuned_evaluation import TunedEvaluation, evaluate_tuned, held_out_cases


class TuningFailed(RuntimeError):
    """The job ended without a model, or could not be followed; the record says so already."""


def to_follow(record: RunRecord | None) -> dict[str, Any] | None:
    """What a succeeded run left on a service to follow (`service` names it), if anything."""
    poll = (record.details.get("poll") if record else None) or {}
    if (
        record is None
        or record.status != "succeeded"
        or poll.get("service") not in ("vertex", "tinker", "openai")
    ):
        return None
    return poll


def follow_vertex_job(
    record: RunRecord,
    runs: RunStore,
    target: Any,
    token: str,
    interval_seconds: float,
    timeout_seconds: float,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """Polls the run's Vertex tuning job to a terminal state and saves the record with the outcome;
    returns the job. Raises `TuningFailed` (the record failed and saved first) when it ends otherwise."""
    job_name = record.details["poll"]["job"]
    try:
        job = poll_tuning_job(target, token, job_name, interval_seconds, timeout_seconds, log)
    except BackendError as err:
        record.notes.append(f"polling failed: {err}")
        runs.save(record.finish("failed", str(err)))
        raise TuningFailed(f"training run {record.run_id}: {err}") from None
    state = job.get("state")
    record.details["state"] = state
    if state != "JOB_STATE_SUCCEEDED":
        message = (job.get("error") or {}).get("message") or state
        runs.save(record.finish("failed", f"Vertex tuning job {job_name} ended {state}: {message}"))
        raise TuningFailed(f"training run {record.run_id}: Vertex tuning job ended {state}: {message}")
    endpoint = tuned_endpoint(job)
    record.artifact_path = endpoint
    record.notes.append(f"tuned model endpoint: {endpoint}")
    runs.save(record)
    return job


def follow_tinker_run(
    record: RunRecord, runs: RunStore, base_url: str | None, api_key: str, log: Callable[[str], None]
) -> dict[str, Any]:
    """Confirms the service lists the sampler weights the run recorded and saves the record with them;
    returns the checkpoint. Raises `TuningFailed` (the record failed and saved first) when it does not."""
    poll = record.details["poll"]
    try:
        checkpoint = sampler_checkpoint(base_url, api_key, poll["training_run"], poll["sampler_path"])
    except Exception as err:  # the SDK's errors (connection, HTTP status) and a missing checkpoint alike
        runs.save(record.finish("failed", f"Tinker sampler weights not confirmed: {err}"))
        raise TuningFailed(
            f"training run {record.run_id}: Tinker sampler weights not confirmed: {err}"
        ) from None
    log(f"Tinker lists {checkpoint['tinker_path']} ({checkpoint.get('size_bytes')} bytes)")
    record.details["checkpoint"] = checkpoint
    record.artifact_path = checkpoint["tinker_path"]
    runs.save(record)
    return checkpoint


def unjudged(record: RunRecord, policy: PromotionPolicy) -> str | None:
    """Why the run's tuned model cannot be judged, or None: asked before any model is reached."""
    if not (record.details.get("holdout") or {}).get("test"):
        return "no test split was held out (too few examples): the tuned model is not judged"
    if policy.scorer_for(record.task or "") == "llm_judge":  # its grades would need a third model
        return "the task is scored by llm_judge: the tuned model is not judged (set another scorer)"
    return None


def judge_tuned(
    record: RunRecord,
    runs: RunStore,
    base: Ask,
    tuned: Ask,
    policy: PromotionPolicy,
    log: Callable[[str], None],
) -> TunedEvaluation | None:
    """The tuned model against its base on the run's test split, by the promotion gate, written on the
    record (`details.evaluation`); None when it cannot be judged (`unjudged`)."""
    if reason := unjudged(record, policy):
        log(reason)
        return None
    holdout = record.details["holdout"]
    scorer = policy.scorer_for(record.task or "")
    cases = held_out_cases(Path(holdout["test"]), holdout.get("format", "elizaos"))
    evaluation = evaluate_tuned(cases, scorer, base, tuned, policy, log)
    verdict = evaluation.verdict
    record.details["evaluation"] = evaluation.to_dict()
    record.notes.append(
        f"tuned model {'better' if verdict.promoted else 'not shown better'} than its base on "
        f"{verdict.n} test examples: {evaluation.tuned_score:.3f} against {evaluation.base_score:.3f} "
        f"({verdict.reason})"
    )
    runs.save(record)
    return evaluation


def judge_openai_model(
    record: RunRecord,
    runs: RunStore,
    base_url: str,
    api_key: str,
    default_model: str,
    policy: PromotionPolicy,
    log: Callable[[str], None],
) -> TunedEvaluation | None:
    """`judge_tuned` through OpenAI's chat completions: the fine-tuned model against the model it was
    tuned from (the run's, else `default_model`)."""
    client = ServiceClient("OpenAI", base_url, api_key)
    try:
        base = chat_model(client, record.details.get("base_model") or default_model)
        return judge_tuned(
            record, runs, base, chat_model(client, record.details["poll"]["model"]), policy, log
        )
    finally:
        client.close()


def judge_vertex_model(
    record: RunRecord,
    runs: RunStore,
    target: VertexTarget,
    token: str,
    default_base: str | None,
    policy: PromotionPolicy,
    log: Callable[[str], None],
) -> TunedEvaluation | None:
    """`judge_tuned` through Vertex AI's `generateContent`: the tuned endpoint (the record's artifact,
    once `follow_vertex_job` has it) against the publisher's base model."""
    client = ServiceClient("Vertex AI", target.aiplatform_url(), token)
    try:
        base = gemini_model(
            client, base_model_path(target, record.details.get("base_model") or default_base or "")
        )
        tuned = gemini_model(client, record.artifact_path or "")
        return judge_tuned(record, runs, base, tuned, policy, log)
    finally:
        client.close()


def judge_tinker_model(
    record: RunRecord,
    runs: RunStore,
    config: TinkerConfig,
    policy: PromotionPolicy,
    log: Callable[[str], None],
) -> TunedEvaluation | None:
    """`judge_tuned` through Tinker's sampling clients: the sampler weights the run saved (the record's
    artifact, once `follow_tinker_run` confirmed it) against the base model they were trained from."""
    if reason := unjudged(record, policy):  # said before the tokenizer is loaded and a client made
        log(reason)
        return None
    base_model = record.details.get("base_model") or config.base_model
    with sampling_models(config, base_model, record.artifact_path or "") as (base, tuned):
        return judge_tuned(record, runs, base, tuned, policy, log)
