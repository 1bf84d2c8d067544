"""The process's environment where it is not a setting: the values a redaction must hide wherever they
appear, the folder where compiled Hyperscan gates are kept, the redaction's budget, and the mark the
CLI puts on a daemon it starts for its run.

Apart from `settings.py` because the pool's workers read these and need nothing else of the settings
(whose model brings pydantic along)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

#: set (to 1) by the CLI in the environment of a daemon it starts for its run (`training_pipeline.launch`):
#: the code location then loads without sensors and automation, so the daemon only takes queued runs
RUNS_ONLY = "TRAINING_PIPELINE_RUNS_ONLY"


def runs_only() -> bool:
    """Whether this process is (under) a daemon the CLI started for its run (`RUNS_ONLY`)."""
    return os.environ.get(RUNS_ONLY) == "1"


def runs_only_environment() -> dict[str, str]:
    """This process's environment marked `RUNS_ONLY`: for the daemon the CLI starts, and its launch."""
    return {**os.environ, RUNS_ONLY: "1"}


def process_environment() -> Mapping[str, str]:
    """The environment as it is now (read when a filter is built, never copied into the settings)."""
    return os.environ


def cache_dir() -> Path:
    """`$XDG_CACHE_HOME/training_pipeline`, else `~/.cache/training_pipeline`: gitleaks' config parsed
    as JSON, the gates' Hyperscan databases."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "training_pipeline"


def redaction_budget_seconds() -> float:
    """`TRAINING_PIPELINE_REDACTION_BUDGET_SECONDS` (validated with the other settings when the code
    location loads): read here, where a filter is built, since the pool's workers build theirs without
    importing pydantic."""
    value = os.environ.get("TRAINING_PIPELINE_REDACTION_BUDGET_SECONDS", "").strip()
    try:
        seconds = float(value) if value else 30.0
    except ValueError:
        raise ValueError(
            f"TRAINING_PIPELINE_REDACTION_BUDGET_SECONDS must be a number of seconds, got {value!r}"
        ) from None
    return max(seconds, 0.0)


def personal_data_setting() -> str:
    """`TRAINING_PIPELINE_PERSONAL_DATA`: the kinds of personal data `strict` redacts (`all`, the
    default; `none`; or a comma-separated list, `privacy.personal.kinds`)."""
    return os.environ.get("TRAINING_PIPELINE_PERSONAL_DATA", "").strip() or "all"


def ner_model_setting() -> str | None:
    """`TRAINING_PIPELINE_NER_MODEL`: an installed spaCy pipeline (package name or folder) that also
    finds people's names; unset, names are found by cue and by the entity directory."""
    return os.environ.get("TRAINING_PIPELINE_NER_MODEL", "").strip() or None


def hide_values(values: list[str]) -> None:
    """Make `values` secret values of this process's environment, for the stored redaction to hide:
    how the scrub's confined process, which starts with a clean environment, is handed the pipeline's."""
    for index, value in enumerate(values):
        os.environ[f"TRAINING_PIPELINE_HIDDEN_SECRET_{index}"] = value


def local_model_threads() -> int:
    """`TRAINING_PIPELINE_LOCAL_MODEL_THREADS` (validated with the settings at load), else half the
    cores: on cores the pipeline keeps busy, llama.cpp's threads wait on each other, and with one thread
    per core a call took up to 224 s where one thread took 14 (`bench/local_model.py`, two cores);
    on idle cores the two did the same."""
    value = os.environ.get("TRAINING_PIPELINE_LOCAL_MODEL_THREADS", "").strip()
    if value:
        try:
            threads = int(value)
        except ValueError:
            threads = 0
        if threads < 1:
            raise ValueError(
                f"TRAINING_PIPELINE_LOCAL_MODEL_THREADS={value!r}: give a whole number of threads, 1 or more"
            )
        return threads
    return max(1, (os.cpu_count() or 2) // 2)
