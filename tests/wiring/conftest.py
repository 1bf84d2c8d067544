"""Fixtures of the wiring tests: a task run's data folder, sample days materialised into an ephemeral
instance."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import DagsterInstance, materialize

from resources.defaults import default_resources
from tests.helpers import ASSET_CHECKS, DATASET_ASSETS
from training_pipeline.settings import load_settings

DAYS = ["2026-11-23", "2026-11-24", "2026-11-25"]


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The data folder of task runs started in this test (no LLM unless the test sets one)."""
    folder = tmp_path / "data"
    monkeypatch.setenv("TRAINING_PIPELINE_DATA", str(folder))
    monkeypatch.delenv("LLM_BASE_URL", raising=False)
    return folder


@pytest.fixture(scope="module")
def days_ready(tmp_path_factory: pytest.TempPathFactory) -> tuple[DagsterInstance, Path]:
    """Three sample days materialised into one ephemeral instance."""
    data = tmp_path_factory.mktemp("data")
    instance = DagsterInstance.ephemeral()
    resources = default_resources(load_settings({"TRAINING_PIPELINE_DATA": str(data)}))
    for day in DAYS:
        assert materialize(
            DATASET_ASSETS + ASSET_CHECKS, partition_key=day, resources=resources, instance=instance
        ).success
    return instance, data
