"""What several test files need: the daily graph, the CLI as a user runs it, Python code in a fresh
process, a task file run as a Dagster job, and a materialisation's metadata as plain values."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from dagster import AssetKey, build_reconstructable_job, execute_job, instance_for_test

from assets.datasets.definitions import daily_graph
from assets.keys import UNPREFIXED
from assets.partitions import GROUP
from assets.training.assets import training_assets
from assets.training.automation import evaluation_job, evaluation_sensor, threshold_sensor, training_job
from assets.training.evaluation import prompt_evaluation_asset
from training_pipeline.settings import load_settings

REPO = Path(__file__).resolve().parents[1]
#: The daily graph on the default settings (one multi-asset, its checks in it): what tests materialise.
DATASET_ASSETS = daily_graph(load_settings({}))
#: The training domain as this repository's code location has it (no key prefix).
TRAINING = training_assets(UNPREFIXED, GROUP)
TRAINING_JOB = training_job(UNPREFIXED, TRAINING)
PROMPT_EVALUATION = prompt_evaluation_asset(UNPREFIXED, GROUP)
EVALUATION_JOB = evaluation_job(UNPREFIXED, PROMPT_EVALUATION)


def layer_resources(source, privacy, store) -> dict[str, Any]:
    """What the daily layers need: a trajectory source, the privacy settings, the store and the IO
    manager that loads the layers for downstream assets."""
    from resources.layers_io import LAYERS_IO_MANAGER, LayersIOManager

    return {
        "training_pipeline_source": source,
        "training_pipeline_privacy": privacy,
        "training_pipeline_store": store,
        LAYERS_IO_MANAGER: LayersIOManager(store=store),
    }


def run_training_job(
    instance: Any,
    data: Path,
    task: str,
    backend_name: str | None = None,
    backend: Any = None,
    settings: Any = None,
) -> tuple[Any, Any]:
    """`TRAINING_JOB` for `task` (one of elizaOS's or a trace dataset) in one run on `instance`, as the
    UI or the sensor launches it, with `backend` as `backend_name` (none: every backend unconfigured,
    the policy's choice) and the policy `settings` (none: the deployment's); the result and the run
    record."""
    from dagster import Definitions

    from resources.backends import (
        AtroposBackend,
        NativeBackend,
        OpenAIBackend,
        TinkerBackend,
        TrainingBackends,
        VertexBackend,
    )
    from resources.defaults import default_resources
    from resources.llm import LLMResource
    from training_pipeline.training.run_records import RunStore

    resources = default_resources(load_settings({"TRAINING_PIPELINE_DATA": str(data)}))
    backends = {
        "native": NativeBackend(llm=LLMResource(local_model=False)),
        "atropos": AtroposBackend(data_dir=str(data / "atropos")),
        "tinker": TinkerBackend(),
        "openai": OpenAIBackend(),
        "vertex": VertexBackend(),
    }
    if backend_name:
        backends[backend_name] = backend
    resources["training_pipeline_backends"] = TrainingBackends(**backends)
    if settings is not None:
        resources["training_pipeline_policy"] = settings
    job = Definitions(assets=TRAINING.assets, jobs=[TRAINING_JOB], resources=resources).resolve_job_def(
        TRAINING_JOB.name
    )
    result = job.execute_in_process(
        partition_key=task,
        instance=instance,
        raise_on_error=False,
        run_config={"ops": {"training_run": {"config": {"backend": backend_name} if backend_name else {}}}},
    )
    return result, RunStore(data).list(limit=1)[0]


def threshold(interval_seconds: int = 60):
    """The training threshold sensor on `TRAINING_JOB`."""
    return threshold_sensor(UNPREFIXED, TRAINING_JOB, interval_seconds)


def evaluations(interval_seconds: int = 30):
    """The evaluation sensor on `EVALUATION_JOB`."""
    return evaluation_sensor(UNPREFIXED, EVALUATION_JOB, interval_seconds, running=True)


#: The installed console script, beside this interpreter.
CLI = Path(sys.executable).parent / "training-pipeline"


def build_wheel(dist: Path) -> Path:
    """This repository built into a wheel in `dist`, as `pip install .` would build it. One build at a
    time: setuptools writes its `build/` and `*.egg-info` folders into the repository, and two pytest
    workers building at once trip over each other's."""
    lock = Path(tempfile.gettempdir()) / f"training-pipeline-wheel-{os.getuid()}.lock"
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--quiet",
                "--no-deps",
                "--wheel-dir",
                str(dist),
                str(REPO),
            ],
            check=True,
            capture_output=True,
        )
    return next(dist.glob("*.whl"))


def cli(env: dict[str, str], *args: str, cwd: Path | None = None, timeout: float | None = None):
    """`training-pipeline ARGS` in its own process, as a user runs it."""
    return subprocess.run(
        [str(CLI), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def fresh_python(code: str, **env: str) -> str:
    """What `code` prints in a new interpreter, the environment's variables updated by `env` (a
    process that has imported nothing yet: what a pool's fork server or a run worker starts as)."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
        env={**os.environ, **env},
    )
    return done.stdout


def run_task_file(path: Path, run_config: dict | None = None, executor: str = "async"):
    """A task file's job, reconstructable as the CLI builds it, on a fresh instance: (result, the run's
    events, seconds)."""
    job = build_reconstructable_job(
        "assets.tasks.jobs", "job_for_file", reconstructable_args=(str(path), executor)
    )
    with instance_for_test() as instance:
        started = time.monotonic()
        result = execute_job(job, instance, run_config=run_config or {}, raise_on_error=False)
        elapsed = time.monotonic() - started
        events = instance.all_logs(result.run_id)
    return result, events, elapsed


def asset_metadata(result, key: str | None = None) -> dict[str, Any]:
    """The metadata of the one materialisation of `key` (or the only one) in a run's result."""
    events = result.get_asset_materialization_events()
    [event] = [e for e in events if key is None or e.asset_key == AssetKey(key)]
    return {k: v.value for k, v in event.materialization.metadata.items()}


def write_task(folder: Path, steps: list[dict[str, Any]], name: str = "t") -> Path:
    """A task file of `steps` in `folder`, named `<name>.json`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps(steps))
    return path


def task_context(data: Path, run_id: str) -> dict[str, Any]:
    """The context a finished task run saved (`context.json`)."""
    return json.loads((data / "task_runs" / run_id / "context.json").read_text())


def command_lines(text: str) -> dict[int, list[str]]:
    """This machine's processes whose command line mentions `text`: pid → arguments."""
    found = {}
    for entry in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            raw = entry.read_bytes()
        except OSError:
            continue
        if text.encode() in raw:
            found[int(entry.parent.name)] = raw.decode(errors="replace").rstrip("\0").split("\0")
    return found


def until_gone(text: str, seconds: float) -> None:
    """Until no process mentions `text` (`command_lines`); fails, naming them, after `seconds`."""
    deadline = time.monotonic() + seconds
    while left := command_lines(text):
        assert time.monotonic() < deadline, left
        time.sleep(0.1)
