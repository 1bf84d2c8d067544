"""The jobs' `io_manager` (resources/io_manager.py): values passed between steps are pickled where
Dagster's default puts them, and a run that passes none never makes Dagster's manager."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from dagster import DagsterInstance, In, job, op

from resources.defaults import default_resources
from tests.helpers import REPO
from training_pipeline.settings import load_settings


@op
def count_words() -> dict[str, int]:
    return {"words": 3}


@op(ins={"counted": In()})
def double(counted: dict[str, int]) -> int:
    return counted["words"] * 2


@job
def counting() -> None:
    double(count_words())


def test_a_value_passed_between_steps_is_pickled_under_the_instance_s_storage(tmp_path: Path) -> None:
    resources = default_resources(load_settings({"TRAINING_PIPELINE_DATA": str(tmp_path / "data")}))
    with DagsterInstance.local_temp(str(tmp_path)) as instance:
        result = counting.execute_in_process(
            instance=instance, resources={"io_manager": resources["io_manager"]}
        )
        # `double` loaded what `count_words` stored: through the manager, out of its file
        assert result.success and result.output_for_node("double") == 6
        stored = Path(instance.storage_directory()) / result.run_id / "count_words" / "result"
        assert stored.is_file()  # where Dagster's own filesystem IO manager keeps it


def test_a_day_s_run_passes_no_value_and_never_makes_dagster_s_manager(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from dagster import DagsterInstance\n"
        "from training_pipeline.definitions import defs\n"
        "job = defs.resolve_job_def('datasets_job')\n"
        "with DagsterInstance.ephemeral() as instance:\n"
        "    assert job.execute_in_process(partition_key='2026-11-23', instance=instance).success\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'upath'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "TRAINING_PIPELINE_DATA": str(tmp_path / "data")},
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"
