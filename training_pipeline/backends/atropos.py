"""Atropos (Nous Research's RL/SFT stack): stage the dataset where it is read, then run its command."""

from __future__ import annotations

import subprocess
from pathlib import Path

from training_pipeline.atomic import atomic_write_text
from training_pipeline.backends.base import BackendError, DispatchRequest, DispatchResult
from training_pipeline.backends.formats import chat_converter, convert_file

_TAIL = 2000


def run_atropos(
    request: DispatchRequest, data_dir: Path, command: list[str] | None, timeout_seconds: float
) -> DispatchResult:
    """Stage `<data_dir>/<task>/<task>_<run>.jsonl` in chat format (and the validation split beside it,
    `…_<run>.validation.jsonl`); with a command, run it (placeholders `{dataset}`, `{validation}`,
    `{task}`, `{run_id}`, `{data_dir}`) and fail the run on a non-zero exit."""
    staged = data_dir / request.task / f"{request.task}_{request.run_id}.jsonl"
    count = convert_file(request.dataset_path, staged, chat_converter(request.format))
    validation = staged.with_suffix(".validation.jsonl") if request.validation_path else None
    if validation is not None:
        convert_file(request.validation_path, validation, chat_converter(request.format))
    if not command:
        return DispatchResult(
            False,
            reason="atropos command not configured",
            artifact_path=str(staged),
            notes=[
                f"dataset staged at {staged} ({count} examples, chat format)",
                "set `command` on the atropos backend resource to launch training, e.g. "
                '["python", "-m", "your_atropos_sft_entrypoint", "--dataset", "{dataset}"]',
            ],
        )
    values = {
        "{dataset}": str(staged),
        "{validation}": str(validation or ""),
        "{task}": request.task,
        "{run_id}": request.run_id,
        "{data_dir}": str(data_dir),
    }
    args = [_fill(arg, values) for arg in command]
    request.log(f"running atropos: {args[0]} ({len(args) - 1} args)")
    try:
        proc = subprocess.run(
            args, capture_output=True, text=True, timeout=timeout_seconds, cwd=request.work_dir
        )
    except FileNotFoundError as err:
        raise BackendError(f"atropos command not found: {args[0]}") from err
    except subprocess.TimeoutExpired as err:
        raise BackendError(f"atropos did not finish within {timeout_seconds:.0f}s") from err
    log_path = request.work_dir / "atropos.log"
    atomic_write_text(log_path, f"$ {' '.join(args)}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}\n")
    if proc.returncode != 0:
        raise BackendError(f"atropos exited with code {proc.returncode}: {proc.stderr[-_TAIL:].strip()}")
    return DispatchResult(
        True,
        artifact_path=str(staged),
        notes=[f"atropos exited with code 0 ({count} examples)", f"output in {log_path}"],
        details={"exit_code": 0, "log": str(log_path), "stdout_tail": proc.stdout[-_TAIL:]},
    )


def _fill(arg: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        arg = arg.replace(key, value)
    return arg
