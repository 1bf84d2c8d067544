"""The Component in a project of the user's: keys under the user's prefix beside the user's own assets
and resources, nothing of theirs overridden or switched on, and a user asset that takes a dataset as
its input (the layers' IO manager). `tests/adoption` does the same through `create-dagster` and `dg`."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pytest

from tests.helpers import fresh_python
from training_pipeline.component import TrainingPipelineComponent
from training_pipeline.datasets.training_tasks import TASK_FILE_NAMES

DAY = "2026-11-24"


@dg.asset
def response() -> None:
    """The user's own asset named `response`."""


@dg.asset(
    partitions_def=dg.DailyPartitionsDefinition(start_date="2026-11-20"),
    backfill_policy=dg.BackfillPolicy.single_run(),  # as the layers': a range is one run (docs/adopting.md)
    ins={
        "dataset": dg.AssetIn(key=["agents", "response"]),
        "stored": dg.AssetIn(key=["agents", "trajectories"]),
    },
)
def response_report(dataset: pa.Table, stored: pa.Table) -> dict:
    return {"rows": dataset.num_rows, "columns": dataset.column_names, "stored": stored.num_rows}


def _user_defs(component: TrainingPipelineComponent) -> dg.Definitions:
    """The user's project: its own `response` asset, an `llm` and an `io_manager` of its own, merged with
    what the Component builds."""
    mine = dg.Definitions(
        assets=[response, response_report],
        resources={
            "llm": dg.ResourceDefinition.hardcoded_resource("the user's"),
            "io_manager": dg.mem_io_manager,
        },
    )
    return dg.Definitions.merge(mine, dg.component_defs(component=component))


def test_the_component_keys_everything_under_the_prefix_and_leaves_the_project_alone(tmp_path: Path) -> None:
    defs = _user_defs(TrainingPipelineComponent(key_prefix=["agents"], data_root=str(tmp_path)))
    graph = defs.resolve_asset_graph()
    keys = {key.to_user_string() for key in graph.get_all_asset_keys()}
    assert {"response", "response_report", "agents/response", "agents/training_run"} <= keys
    assert all(key.startswith("agents/") for key in keys - {"response", "response_report"})
    assert all(check.asset_key.path[0] == "agents" for check in graph.asset_check_keys)
    assert graph.get(dg.AssetKey(["agents", "response"])).parent_keys == {
        dg.AssetKey(["agents", "filtered_trajectories"])
    }
    dataset = defs.resolve_assets_def(dg.AssetKey(["agents", "response"]))
    metadata = dataset.specs_by_key[dg.AssetKey(["agents", "response"])].metadata
    assert "dagster/code_references" in metadata  # the UI links the asset to its code
    assert dataset.specs_by_key[dg.AssetKey(["agents", "response"])].owners == []
    mine = {"llm", "io_manager"}
    assert all(key.startswith("training_pipeline_") for key in set(defs.resources or {}) - mine)
    assert defs.executor is None  # the project's choice
    repository = defs.get_repository_def()
    assert {s.name: s.default_status for s in repository.sensor_defs} == {
        "agents_training_threshold_sensor": dg.DefaultSensorStatus.STOPPED,
        "agents_evaluation_sensor": dg.DefaultSensorStatus.STOPPED,
        "agents_nightly_datasets_automation": dg.DefaultSensorStatus.STOPPED,
    }
    assert list(repository.schedule_defs) == []
    jobs = {job.name for job in repository.get_all_jobs()}
    assert {"agents_datasets_job", "agents_training_job", "agents_evaluation_job"} <= jobs
    assert "agents_task_reply_to_dana" in jobs


def test_a_user_asset_takes_a_dataset_and_the_stored_day_as_inputs(tmp_path: Path) -> None:
    component = TrainingPipelineComponent(
        key_prefix=["agents"], data_root=str(tmp_path), include=["datasets"], start_date="2026-11-20"
    )
    defs = _user_defs(component)
    result = dg.materialize(
        [asset for asset in defs.assets or [] if asset is not response],
        partition_key=DAY,
        resources=defs.resources,
        instance=dg.DagsterInstance.ephemeral(),
    )
    assert result.success
    report = result.output_for_node("response_report")
    lines = (tmp_path / "datasets" / DAY / TASK_FILE_NAMES["response"]).read_text().splitlines()
    assert report == {"rows": len(lines), "columns": ["messages"], "stored": report["stored"]}
    assert report["rows"] > 0 and report["stored"] > report["rows"] / 10
    first = json.loads(lines[0])["messages"]
    assert [m["role"] for m in first] == ["system", "user", "model"]


def test_importing_the_component_changes_nothing_in_the_process() -> None:
    code = (
        "import gc, os; before = dict(os.environ); "
        "import training_pipeline.component; "
        "print(gc.get_freeze_count(), dict(os.environ) == before)"
    )
    assert fresh_python(code).split() == ["0", "True"]


def test_a_day_never_materialised_is_a_clear_error_for_the_asset_that_loads_it(tmp_path: Path) -> None:
    from resources.layers_io import LayersIOManager
    from resources.storage import DataStore

    manager = LayersIOManager(store=DataStore(root=str(tmp_path)))
    context = dg.build_input_context(
        asset_key=dg.AssetKey(["agents", "response"]),
        partition_key=DAY,
        asset_partitions_def=dg.DailyPartitionsDefinition(start_date="2026-11-20"),
    )
    with pytest.raises(
        ValueError, match=rf"^agents/response is not materialised for a day asked for .*{DAY}"
    ):
        manager.load_input(context)
