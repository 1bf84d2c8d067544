"""A backfill launched the way the UI launches one (the webserver's GraphQL `launchPartitionBackfill`,
picked up by a real `dagster-daemon`) over three days of the daily assets is one run: the assets'
single-run backfill policy, on this repository's `dagster.yaml`."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from tests.dagster_servers import DagsterServers, pipeline_free_env
from tests.helpers import REPO
from training_pipeline.datasets.training_tasks import TASKS

DAYS = ["2026-11-23", "2026-11-24", "2026-11-25"]
LAYERS = ["trajectories", "filtered_trajectories", *TASKS]

LAUNCH = """
mutation($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
    ... on InvalidSubsetError { message }
  }
}"""
STATUS = """
query($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    ... on PartitionBackfill { status runs(limit: 10) { runId status tags { key value } } }
  }
}"""
MATERIALIZED = """
query($key: AssetKeyInput!) {
  assetNodeOrError(assetKey: $key) { ... on AssetNode { assetPartitionStatuses {
    ... on TimePartitionStatuses { ranges { startKey endKey status } } } } }
}"""


def test_a_ui_backfill_of_three_days_is_one_run(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    env = {
        **pipeline_free_env(),
        "DAGSTER_DISABLE_TELEMETRY": "1",
        "TRAINING_PIPELINE_DATA": str(tmp_path / "data"),
    }
    (tmp_path / "logs").mkdir()
    with DagsterServers(home, env, tmp_path / "logs") as servers:
        launched = servers.graphql(
            LAUNCH,
            {
                "params": {
                    "partitionNames": DAYS,
                    "assetSelection": [{"path": [layer]} for layer in LAYERS],
                    "fromFailure": False,
                }
            },
        )["launchPartitionBackfill"]
        assert launched["__typename"] == "LaunchBackfillSuccess", launched
        deadline = time.monotonic() + 240
        while True:
            backfill = servers.graphql(STATUS, {"id": launched["backfillId"]})["partitionBackfillOrError"]
            if backfill["status"] in ("COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED"):
                break
            assert time.monotonic() < deadline, backfill
            time.sleep(1)
        assert backfill["status"] in ("COMPLETED", "COMPLETED_SUCCESS"), backfill
        [run] = backfill["runs"]  # the three days in one run
        tags = {tag["key"]: tag["value"] for tag in run["tags"]}
        assert run["status"] == "SUCCESS"
        assert (tags["dagster/asset_partition_range_start"], tags["dagster/asset_partition_range_end"]) == (
            DAYS[0],
            DAYS[-1],
        )
        for layer in LAYERS:
            ranges = servers.graphql(MATERIALIZED, {"key": {"path": [layer]}})["assetNodeOrError"][
                "assetPartitionStatuses"
            ]["ranges"]
            assert [(r["startKey"], r["endKey"], r["status"]) for r in ranges] == [
                (DAYS[0], DAYS[-1], "MATERIALIZED")
            ], layer
