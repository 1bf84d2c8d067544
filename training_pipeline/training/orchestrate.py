"""One training run, decided as elizaOS's orchestrator decides it, recorded whatever happens.

Order: no data → skipped; no backend → skipped; credentials found by the independent scanner → failed
(never dispatched); dry run → succeeded without dispatch; backend not deployed or declining → skipped;
dispatched → succeeded; a backend error → failed with its reason. A weights backend trains on the
window less a validation and a test split (`holdout`): the service validates on the first, and the
tuned model is judged on the second.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from training_pipeline.backends.base import Backend, BackendError, DispatchRequest
from training_pipeline.datasets.validate import message_texts
from training_pipeline.privacy.scan import SecretScanner
from training_pipeline.training.holdout import split_window
from training_pipeline.training.policy import TrainingPolicy, resolve_backend
from training_pipeline.training.run_records import RunRecord
from training_pipeline.training.window import WindowDataset

#: the backends a window's validation split is held out for, and whether a test split is too: the
#: tuned model is judged on it through the service (`tuned_model`: OpenAI's and Vertex's endpoints,
#: Tinker's sampler); what Atropos' command trains is not judged here, so nothing is kept from it
HELD_OUT_FOR = {"openai": True, "vertex": True, "atropos": False, "tinker": True}


def run_training(
    record: RunRecord,
    window: WindowDataset,
    policy: TrainingPolicy,
    backends: Mapping[str, Backend | None],
    scanner: SecretScanner,
    explicit_backend: str | None = None,
    dry_run: bool = False,
    log: Callable[[str], None] = print,
    scorer: str | None = None,
) -> RunRecord:
    task = record.task
    assert task is not None
    record.dataset_size, record.window, record.dataset_path = window.size, window.days, str(window.path)
    record.per_task_counts = window.per_task_counts
    record.pulled_trajectories, record.filtered_trajectories = (
        window.pulled_trajectories,
        window.filtered_trajectories,
    )
    record.redaction_count, record.anonymization_count = window.redaction_count, window.anonymization_count
    record.dry_run = dry_run

    if window.size == 0:
        return record.finish("skipped", f"no {task} examples in the window")
    backend_name = resolve_backend(policy, task, explicit_backend)  # type: ignore[arg-type]
    record.backend = backend_name
    if not backend_name:
        record.notes.append("set `backends` in the training policy to enable dispatch")
        return record.finish("skipped", "no backend configured")

    findings = scanner.scan(message_texts(window.path)).findings
    if findings:
        record.details["credential_findings"] = dict(findings)
        return record.finish(
            "failed",
            f"dataset holds credentials the filter missed ({sum(findings.values())} "
            f"findings: {', '.join(sorted(findings))}); not dispatched",
        )
    if dry_run:
        record.notes.append(f"dry run; would dispatch {window.path} to backend={backend_name}")
        return record.finish("succeeded", "dry run")

    backend = backends.get(backend_name)
    if backend is None:
        return record.finish("skipped", f"backend {backend_name} is not deployed here")
    work_dir = window.path.parent
    train, validation = window.path, None
    if backend_name in HELD_OUT_FOR:  # native splits for itself
        holdout = split_window(
            window.path, work_dir, test_fraction=0.2 if HELD_OUT_FOR[backend_name] else 0.0
        )
        train, validation = holdout.train, holdout.validation
        record.details["holdout"] = {**holdout.to_dict(), "format": window.format}
        if holdout.test is None and HELD_OUT_FOR[backend_name]:
            record.notes.append(
                f"{window.size} examples: too few to hold out a test split, so the tuned model is not judged"
            )
    try:
        request = DispatchRequest(
            task, train, work_dir, record.run_id, log, scorer, window.format, validation
        )
        result = backend.dispatch(request)
    except BackendError as err:
        return record.finish("failed", str(err))
    record.artifact_path, record.details = result.artifact_path, {**record.details, **result.details}
    record.notes.extend(result.notes)
    if not result.invoked:
        return record.finish("skipped", result.reason or "backend declined to invoke")
    return record.finish("succeeded")
