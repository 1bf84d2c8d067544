"""Fixtures of the wiring tests: a task run's data folder, sample days materialised into an ephemeral
instance, and `DAGSTER_HOME`s with the README's and the production instance's `dagster.yaml`."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from dagster import DagsterInstance, materialize

from resources.defaults import default_resources
from tests.helpers import DATASET_ASSETS, REPO
from tests.postgres_server import PostgresServer
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
        assert materialize(DATASET_ASSETS, partition_key=day, resources=resources, instance=instance).success
    return instance, data


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `DAGSTER_HOME` with the README's `dagster.yaml` (which reads the variable)."""
    folder = tmp_path / "home"
    folder.mkdir()
    shutil.copy(REPO / "dagster.yaml", folder / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(folder))
    return folder


@pytest.fixture
def production_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres: PostgresServer) -> Path:
    """A `DAGSTER_HOME` with `deploy/dagster.yaml`, on a database of its own on the tests' server."""
    database = f"storage_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(postgres.url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(sa.text(f"CREATE DATABASE {database}"))
    admin.dispose()
    folder = tmp_path / "production"
    folder.mkdir()
    shutil.copy(REPO / "deploy" / "dagster.yaml", folder / "dagster.yaml")
    for name, value in {
        "DAGSTER_HOME": str(folder),
        "DAGSTER_PG_HOST": "127.0.0.1",
        "DAGSTER_PG_PORT": str(postgres.port),
        "DAGSTER_PG_DB": database,
        "DAGSTER_PG_USER": "postgres",
        "DAGSTER_PG_PASSWORD": "",
        "DAGSTER_SHARED_DIR": str(tmp_path / "shared"),
    }.items():
        monkeypatch.setenv(name, value)
    return folder
