"""What `pip install` (not editable) ships, and that it loads: the wheel holds the three top-level
packages exactly as the folders do, the data files the code reads, and a code location that loads from
the installed copy alone (outside the repository)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.helpers import REPO, build_wheel

PACKAGES = ("training_pipeline", "assets", "resources")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("dist"))


def test_the_wheel_holds_every_package_folder_and_no_other(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {n.rsplit("/", 1)[0].replace("/", ".") for n in names if n.endswith("/__init__.py")}
    on_disk = {
        ".".join(init.parent.relative_to(REPO).parts)
        for package in PACKAGES
        for init in (REPO / package).rglob("__init__.py")
    }
    assert shipped == on_disk


def test_the_wheel_ships_the_files_the_code_reads(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for relative in (
        "training_pipeline/sample_data/entities.json",
        "training_pipeline/sample_data/trajectories/2026-11-25.jsonl",
        "training_pipeline/tasks/examples/inbox-triage.json",
        "training_pipeline/tasks/examples/artifacts/dana_email.json",
        "training_pipeline/tasks/examples/workspace/test_slugify.py",
        "training_pipeline/tasks/examples/toolservers/files.py",
        "training_pipeline/privacy/gitleaks/gitleaks.toml",
        "training_pipeline/privacy/gitleaks/LICENSE",
    ):
        assert relative in names


def test_the_installed_wheel_loads_the_code_location_on_its_own(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
    )
    load = (
        "import gc, sys, assets, resources, training_pipeline, training_pipeline.definitions as d; "
        "print(assets.__file__); print(resources.__file__); print(training_pipeline.__file__); "
        "print(sorted({'jsonschema', 'httpx'} & set(sys.modules))); print(gc.get_freeze_count()); "
        "print(len(d.defs.resolve_all_job_defs()))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", load],
        cwd=tmp_path,  # not the repository: nothing can be found there
        env={"PYTHONPATH": str(site), "TRAINING_PIPELINE_DATA": str(tmp_path / "data"), "PATH": "/usr/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    *files, lazy, frozen, jobs = loaded.stdout.strip().splitlines()
    assert all(Path(f).is_relative_to(site) for f in files), files
    # imported where a task names a JSON Schema or a client is made, not by every run's process
    assert lazy == "[]"
    # loading it changes nothing of the importing process's (a user's): no garbage-collector freeze
    assert int(frozen) == 0
    assert int(jobs) >= 4
    # loading it raises no Python warning: Dagster's preview note about the partitioned checks (pinned)
    # is not repeated by every process (the sandbox's own notes are log lines, not warnings)
    assert "Warning:" not in loaded.stderr, loaded.stderr
