"""A Dagster user adds the pipeline to a project of their own, as the docs say (docs/adopting.md):
a project made by `create-dagster`, this package installed into its environment with only the base
dependencies, once at each end of the Dagster range pyproject.toml allows, the Component scaffolded with
`dg` under a key prefix beside the user's own asset named `response`, and a user asset that takes a
dataset as its input.

Slow (two fresh environments from the package index): `make test-adoption`, which `.ci/run` runs after
the suite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import build_wheel

pytestmark = pytest.mark.adoption

#: the oldest Dagster the range allows, and the newest `dagster-dg-cli` is released for
DAGSTER_VERSIONS = ("1.12.2", "1.13.27")
DAYS = ("2026-11-23", "2026-11-24", "2026-11-25")
LAYERS = (
    "trajectories",
    "filtered_trajectories",
    "should_respond",
    "context_routing",
    "action_planner",
    "response",
    "media_description",
)

USER_ASSETS = '''
import json
from pathlib import Path

import dagster as dg

DAILY = dg.DailyPartitionsDefinition(start_date="2026-11-20")


@dg.asset
def response() -> None:
    """The project's own asset named `response`: the pipeline's is agents/response."""


@dg.asset(partitions_def=DAILY, ins={"dataset": dg.AssetIn(key=["agents", "response"])})
def response_report(context: dg.AssetExecutionContext, dataset) -> None:
    """Takes a day's `response` dataset (a pyarrow Table) as its input."""
    roles = sorted({m["role"] for row in dataset.column("messages").to_pylist() for m in row})
    out = Path(__file__).parents[3] / "report.json"
    out.write_text(json.dumps({"day": context.partition_key, "rows": dataset.num_rows, "roles": roles}))
'''


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("dist"))


def _run(command: list[str], cwd: Path, env: dict[str, str], timeout: float = 900) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(command)}\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return done.stdout


@pytest.mark.parametrize("version", DAGSTER_VERSIONS)
def test_a_user_project_adds_the_component_and_launches_it(version: str, wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    bin_dir = venv / "bin"
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "DAGSTER_HOME": str(tmp_path / "home"),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "DAGSTER_DISABLE_TELEMETRY": "1",
        # the sandbox is the deployment's concern; this project only loads and runs the daily assets
        "TRAINING_PIPELINE_SANDBOX": os.environ.get("TRAINING_PIPELINE_SANDBOX", "bwrap"),
    }
    (tmp_path / "home").mkdir()
    pip = [str(bin_dir / "python"), "-m", "pip", "install", "--quiet"]
    # the base install: no extras, so nothing the tinker or deploy extras bring is there to lean on
    _run(
        [
            *pip,
            f"dagster=={version}",
            f"dagster-webserver=={version}",
            f"dagster-dg-cli=={version}",
            f"create-dagster=={version}",
            str(wheel),
        ],
        tmp_path,
        env,
    )
    _run([str(bin_dir / "python"), "-m", "pip", "check"], tmp_path, env)

    _run([str(bin_dir / "create-dagster"), "project", "user_project", "--no-uv-sync"], tmp_path, env)
    project = tmp_path / "user_project"
    _run([*pip, "--no-deps", "-e", str(project)], tmp_path, env)
    (project / "src" / "user_project" / "defs" / "reports.py").write_text(USER_ASSETS)

    components = _run([str(bin_dir / "dg"), "list", "components", "--json"], project, env)
    assert "training_pipeline.component.TrainingPipelineComponent" in components
    _run(
        [
            str(bin_dir / "dg"),
            "scaffold",
            "defs",
            "training_pipeline.component.TrainingPipelineComponent",
            "pipeline",
        ],
        project,
        env,
    )
    defs_yaml = project / "src" / "user_project" / "defs" / "pipeline" / "defs.yaml"
    assert "training_pipeline.component.TrainingPipelineComponent" in defs_yaml.read_text()
    defs_yaml.write_text(
        textwrap.dedent(
            """
            type: training_pipeline.component.TrainingPipelineComponent
            attributes:
              key_prefix: [agents]
              data_root: data
              start_date: "2026-11-20"
              owners: [team:agents]
            """
        )
    )
    _run([str(bin_dir / "dg"), "check", "defs"], project, env)
    listed = json.loads(_run([str(bin_dir / "dg"), "list", "defs", "--json"], project, env))
    keys = {asset.get("asset_key", asset.get("key")) for asset in listed["assets"]}  # 1.13 / 1.12
    assert {"response", "response_report", *(f"agents/{layer}" for layer in LAYERS)} <= keys
    assert "agents/training_run" in keys and "training_run" not in keys
    jobs = {job["name"] for job in listed["jobs"]}
    assert {"agents_datasets_job", "agents_training_job"} <= jobs

    # one day by the job, then three days by their assets in one run (the single-run backfill policy)
    _run(
        [str(bin_dir / "dg"), "launch", "--job", "agents_datasets_job", "--partition", DAYS[1]], project, env
    )
    selection = ",".join(f"agents/{layer}" for layer in LAYERS)
    _run(
        [
            str(bin_dir / "dg"),
            "launch",
            "--assets",
            selection,
            "--partition-range",
            f"{DAYS[0]}...{DAYS[-1]}",
        ],
        project,
        env,
    )
    data = project / "data"
    for day in DAYS:
        assert (data / "trajectories" / f"{day}.parquet").is_file()
        assert (data / "datasets" / day / "response_trajectories.jsonl").is_file()

    _run([str(bin_dir / "dg"), "launch", "--assets", "response_report", "--partition", DAYS[1]], project, env)
    report = json.loads((project / "report.json").read_text())
    lines = (data / "datasets" / DAYS[1] / "response_trajectories.jsonl").read_text().splitlines()
    assert report == {"day": DAYS[1], "rows": len(lines), "roles": ["model", "system", "user"]}
    assert report["rows"] > 0
