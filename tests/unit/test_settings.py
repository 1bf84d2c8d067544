"""The deployment's settings: one model, every variable documented, typos named, secrets kept secret."""

from __future__ import annotations

import ast
import os

import pytest

from resources.defaults import default_resources
from tests.helpers import REPO
from training_pipeline.settings import VARIABLES, SettingsError, load_settings


def test_every_variable_is_documented_in_the_configuration_page() -> None:
    page = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert [v for v in VARIABLES if f"`{v}`" not in page] == []


def test_a_malformed_value_fails_with_the_variables_name() -> None:
    with pytest.raises(SettingsError, match="TRAINING_PIPELINE_SENSOR_INTERVAL_SECONDS"):
        load_settings({"TRAINING_PIPELINE_SENSOR_INTERVAL_SECONDS": "often"})
    with pytest.raises(SettingsError, match="TRAINING_PIPELINE_PRIVACY_PROFILE"):
        load_settings({"TRAINING_PIPELINE_PRIVACY_PROFILE": "lenient"})


def test_secrets_reach_resources_as_variable_names_never_values() -> None:
    secret = "postgresql+psycopg://etl:hunter2-s3cret@db.internal/eliza"
    settings = load_settings({"TRAJECTORY_DB_URL": secret, "LLM_API_KEY": "sk-live-abcdef0123456789"})
    assert "hunter2" not in repr(settings) and "sk-live" not in repr(settings)
    resources = default_resources(settings)
    shown = repr({k: v for k, v in resources.items()})
    assert "hunter2" not in shown and "sk-live" not in shown
    assert "TRAJECTORY_DB_URL" in shown and "LLM_API_KEY" in shown


def test_no_module_reads_the_environment_but_settings() -> None:
    """`os.environ`/`os.getenv` only in `settings.py` and `environment.py` (what is not a setting: secret
    values to hide, the cache folder, Dagster's own variables), and where a child process is handed its
    environment (the CLI's defaults for the runs it starts, the sandbox's launcher); never at a module's
    top level."""
    allowed = {
        "training_pipeline/settings.py",
        "training_pipeline/environment.py",
        "training_pipeline/cli.py",
        "training_pipeline/sandbox/inside.py",
    }
    readers, at_import = set(), []
    for package in ("training_pipeline", "assets", "resources"):
        for path in (REPO / package).rglob("*.py"):
            relative = str(path.relative_to(REPO))
            tree = ast.parse(path.read_text(encoding="utf-8"))
            if any(_reads_environment(node) for node in ast.walk(tree)):
                readers.add(relative)
            for statement in tree.body:
                if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    continue
                if any(_reads_environment(n) or _calls_settings(n) for n in ast.walk(statement)):
                    at_import.append(f"{relative}: {ast.unparse(statement)[:80]}")
    assert readers <= allowed
    assert [line for line in at_import if not line.startswith("training_pipeline/definitions.py")] == []


def _reads_environment(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "os"
        and node.attr in ("environ", "environb", "getenv")
    )


def _calls_settings(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "settings"


def test_the_local_models_threads_are_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from training_pipeline.environment import local_model_threads

    monkeypatch.setenv("TRAINING_PIPELINE_LOCAL_MODEL_THREADS", "1")
    assert local_model_threads() == 1
    monkeypatch.delenv("TRAINING_PIPELINE_LOCAL_MODEL_THREADS")
    assert local_model_threads() == max(1, (os.cpu_count() or 2) // 2)
    monkeypatch.setenv("TRAINING_PIPELINE_LOCAL_MODEL_THREADS", "two")
    with pytest.raises(ValueError, match="TRAINING_PIPELINE_LOCAL_MODEL_THREADS='two'"):
        local_model_threads()
    with pytest.raises(ValueError, match="TRAINING_PIPELINE_LOCAL_MODEL_THREADS"):
        load_settings({"TRAINING_PIPELINE_LOCAL_MODEL_THREADS": "0"})
