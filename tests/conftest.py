"""Shared fixtures: bundled sample data, a real PostgreSQL server, resources pointed at tmp_path.

The suite runs on pytest-xdist's workers (`addopts`): a session fixture (the PostgreSQL server, the
traced agent's runs) is made once per worker, and every test keeps to its own `tmp_path`, free ports and
process markers, so tests on two workers never meet."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tests.postgres_server import PostgresServer
from training_pipeline import SAMPLE_ENTITIES, SAMPLE_TRAJECTORIES

os.environ.setdefault("DAGSTER_DISABLE_TELEMETRY", "1")

# Property tests assert behaviour, not speed (that is bench/'s): an example that happens to build a rule
# gate for the first time (seconds, when the compiled database is not cached yet) is not a failure.
settings.register_profile("behaviour", deadline=None)
settings.load_profile("behaviour")


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    server = PostgresServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()
        server.remove()


@pytest.fixture(scope="session")
def traced_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, list[dict[str, Any]]]]:
    """The traced agent run once under each instrumentation (`otlp_store.traced_run`): the folder of
    its OTLP requests, and what its client sent and got."""
    from tests.otlp_store import traced_run

    base = tmp_path_factory.mktemp("traces")
    return {kind: (base / kind, traced_run(kind, base / kind)) for kind in ("genai", "openinference", "both")}


@pytest.fixture
def sample_trajectories() -> Path:
    return SAMPLE_TRAJECTORIES


@pytest.fixture
def sample_entities() -> Path:
    return SAMPLE_ENTITIES


@pytest.fixture(autouse=True)
def _fresh_settings() -> Iterator[None]:
    """Each test is a fresh process as far as settings go: the process's settings are read once and
    cached, and tests change the environment (monkeypatch) between them."""
    from training_pipeline.settings import settings

    settings.cache_clear()
    yield
    settings.cache_clear()
