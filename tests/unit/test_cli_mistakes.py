"""Likely mistakes on the CLI get one line saying what is wrong and what to do, never a traceback, and
nothing runs: a day outside the daily partitions, a date in another form, a misspelt backend."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import CLI, REPO, cli


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("TRAINING_PIPELINE_", "DAGSTER_"))},
        "DAGSTER_HOME": str(tmp_path / "home"),
        "TRAINING_PIPELINE_DATA": str(tmp_path / "data"),
    }


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["materialize", "--start", "2026-11-20"], "is before the first daily partition, 2026-11-23"),
        (["materialize", "--start", "2099-01-01"], "has not ended yet (UTC): the daily partitions run from"),
        (["materialize", "--start", "2026-11-20", "--end", "2026-11-19"], "is before --start"),
        (["materialize", "--start", "2026-13-01"], "use YYYY-MM-DD"),
        (["generate", "out", "--start", "23/11/2026"], "use YYYY-MM-DD"),
    ],
)
def test_a_day_the_pipeline_cannot_take_is_one_line_and_runs_nothing(
    env: dict[str, str], tmp_path: Path, args: list[str], says: str
) -> None:
    done = cli(env, *args, cwd=tmp_path)
    assert done.returncode == 2
    assert says in done.stderr and "Traceback" not in done.stderr
    assert len([line for line in done.stderr.splitlines() if "error" in line]) == 1
    assert not (tmp_path / "home").exists()  # no instance was opened, no run made


def test_a_misspelt_backend_is_an_error_naming_the_known_ones(env: dict[str, str], tmp_path: Path) -> None:
    """Dropped without a word, it left the run "skipped: no backend configured" with exit 0."""
    done = cli(
        {**env, "TRAINING_PIPELINE_BACKENDS": "native,atropus"}, "train", "--task", "response", cwd=tmp_path
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == (
        "training-pipeline: error: TRAINING_PIPELINE_BACKENDS: unknown backend 'atropus'; "
        "known: vertex, atropos, tinker, native, openai"
    )


def test_a_bundled_task_is_found_by_name_and_an_unknown_one_lists_the_known(
    env: dict[str, str], tmp_path: Path
) -> None:
    done = cli(env, "task", "validate", "reply-to-dana", cwd=tmp_path)
    assert done.returncode == 0 and "valid task 'reply-to-dana'" in done.stdout
    done = cli(env, "task", "run", "no-such-task", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "nor a task of that name (known: fix-the-tests, inbox-triage, reply-to-dana)" in done.stderr


def test_runs_list_says_which_folder_it_read(env: dict[str, str], tmp_path: Path) -> None:
    """From another folder it said "no training runs recorded yet" though the project had some."""
    done = cli(env, "runs", "list", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout.strip().startswith(f"no training runs recorded yet in {tmp_path / 'data'}")


def _dagster_home(env: dict[str, str]) -> None:
    """The instance `env` names, made as `make demo` makes it: this repository's `dagster.yaml`."""
    home = Path(env["DAGSTER_HOME"])
    home.mkdir()
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")


def test_a_day_with_nothing_in_the_source_is_said_not_a_silent_ok(
    env: dict[str, str], tmp_path: Path
) -> None:
    _dagster_home(env)
    (tmp_path / "exports").mkdir()  # an empty input folder
    done = cli({**env, "TRAJECTORY_DIR": str(tmp_path / "exports")}, "materialize", "--start", "2026-11-23")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["status"] == "empty"
    assert "warning: 2026-11-23: the trajectory source held no record of this day" in done.stderr


def test_a_run_that_fails_is_one_line_naming_its_cause_and_verbose_shows_the_log(
    env: dict[str, str], tmp_path: Path
) -> None:
    _dagster_home(env)
    wrong = {
        **env,
        "TRAJECTORY_DIR": str(tmp_path / "no-such-folder"),
        "TRAINING_PIPELINE_START_DATE": "2026-11-20",
    }
    done = cli(wrong, "materialize", "--start", "2026-11-23", cwd=tmp_path)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and "Stack Trace" not in done.stderr
    [line] = [text for text in done.stderr.splitlines() if "error" in text]
    assert "failed: daily_layers: FileNotFoundError: trajectory export path does not exist" in line
    assert "--verbose" in line
    # --verbose: Dagster's own log of the run instead of the one line
    shown = cli(wrong, "materialize", "--start", "2026-11-23", "--verbose", cwd=tmp_path)
    assert shown.returncode == 1 and "dagster - ERROR - datasets_job" in shown.stderr, shown.stderr[-3000:]
    assert "RUN_FAILURE" in shown.stderr and "(its full log is on the run's page" not in shown.stderr


def test_an_error_from_dagster_itself_is_one_line(env: dict[str, str], tmp_path: Path) -> None:
    done = cli(env, "materialize", "--start", "2026-11-23", cwd=tmp_path)  # DAGSTER_HOME is no folder
    assert done.returncode == 1 and "Traceback" not in done.stderr
    [line] = [text for text in done.stderr.splitlines() if "error" in text]
    assert "DagsterInvariantViolationError" in line and "is not a directory" in line
    assert "Traceback" in cli(env, "--verbose", "materialize", "--start", "2026-11-23", cwd=tmp_path).stderr


def _project(folder: Path, module: str = "training_pipeline.definitions") -> Path:
    folder.mkdir(parents=True)
    (folder / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    (folder / "workspace.yaml").write_text(f"load_from:\n  - python_module:\n      module_name: {module}\n")
    return folder


def test_commands_find_the_project_from_below_it_or_from_its_venv(tmp_path: Path) -> None:
    from training_pipeline.cli import find_project

    project = _project(tmp_path / "proj")
    deep = project / "notebooks" / "today"
    deep.mkdir(parents=True)
    assert find_project(deep, prefix=tmp_path / "elsewhere" / ".venv") == project
    # from any folder, through the virtual environment the command runs from
    other = _project(tmp_path / "proj2")
    (tmp_path / "scratch").mkdir()
    assert find_project(tmp_path / "scratch", prefix=other / ".venv") == other
    # another Dagster project above is not this one
    foreign = _project(tmp_path / "theirs", module="mycorp.defs")
    (foreign / "src").mkdir()
    assert find_project(foreign / "src", prefix=tmp_path / "elsewhere" / ".venv") != foreign


def test_a_reader_that_goes_away_ends_the_command_quietly(env: dict[str, str], tmp_path: Path) -> None:
    """`training-pipeline runs list | head -0`: the pipe closes before the first line."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [str(CLI), "runs", "list"], env=env, cwd=tmp_path, stdout=write, stderr=subprocess.PIPE, text=True
        )
    finally:
        os.close(write)
    assert done.returncode == 0 and done.stderr == ""
