"""The real UI: `dagster-webserver` and `dagster-daemon` as processes on 127.0.0.1 over a temporary
instance with the project's `dagster.yaml`, driven by Debian's headless Chromium through Playwright.

Known secrets are planted in one day's trajectories and in the servers' environment. A user opens the
asset graph, sees the trajectory → filtered → dataset assets with their checks,
materialises one day from the UI, opens the run and its metadata, turns the threshold sensor on and sees
it fire a training run; then everything Dagster and the pipeline stored is scanned for the planted
secrets. Screenshots go to `$TRAINING_PIPELINE_SCREENSHOTS` (default `var/e2e/`); the
README's come from this test (`make screenshots`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from tests.dagster_servers import DagsterServers, pipeline_free_env
from tests.helpers import REPO
from tests.planted_secrets import IN_ENVIRONMENT, IN_TRAJECTORY, PERSONAL, stored_text, write_planted_day
from training_pipeline import SAMPLE_ENTITIES, SAMPLE_TRAJECTORIES

CHROMIUM = Path("/usr/bin/chromium")
DAY = "2026-11-24"
#: Chromium as root on a closed network: no sandbox, nothing phoning home.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
MAILBOX_TASK = [
    {"id": "email", "type": "deploy_env", "env_type": "email", "env_name": "email"},
    {"id": "look", "type": "snapshot_env", "env_name": "email"},
    {"id": "settle", "type": "wait", "seconds": 0.1, "depends_on": []},
    {"id": "done", "type": "teardown"},
]
RUNS = """query Runs($job: String!) {
  runsOrError(filter: {pipelineName: $job}) { ... on Runs { results { runId status tags { key value } } } }
}"""


@pytest.fixture
def screenshots() -> Path:
    folder = Path(os.environ.get("TRAINING_PIPELINE_SCREENSHOTS", REPO / "var" / "e2e"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[DagsterServers]:
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    source = tmp_path / "in"  # the sample days, plus known secrets planted in one of them
    shutil.copytree(SAMPLE_TRAJECTORIES, source)
    write_planted_day(source, f"{DAY}-planted.jsonl")
    tasks = tmp_path / "tasks"  # a task of the user's own, loaded from TRAINING_PIPELINE_TASKS_DIR
    tasks.mkdir()
    (tasks / "mailbox-check.json").write_text(json.dumps(MAILBOX_TASK))
    trainer = tmp_path / "train.py"
    trainer.write_text("import sys\nprint('trained on', sys.argv[1])\n")
    env = pipeline_free_env("OPENAI_", "VERTEX_", "TINKER_")
    env.update(
        {
            "DAGSTER_DISABLE_TELEMETRY": "1",
            "TRAINING_PIPELINE_DATA": str(tmp_path / "data"),
            "TRAJECTORY_DIR": str(source),
            "TRAINING_PIPELINE_ENTITIES": str(SAMPLE_ENTITIES),
            "PLANTED_SERVICE_TOKEN": IN_ENVIRONMENT,
            "TRAINING_PIPELINE_TASKS_DIR": str(tasks),
            "TRAINING_PIPELINE_TRIGGER_THRESHOLD": "1",
            "TRAINING_PIPELINE_BACKENDS": "atropos",
            "ATROPOS_DATA_DIR": str(tmp_path / "atropos"),
            "ATROPOS_COMMAND": f"{sys.executable} {trainer} {{dataset}}",
        }
    )
    with DagsterServers(home, env, tmp_path / "logs") as running:
        processes = list(running.processes)
        yield running
    assert all(process.poll() is not None for process in processes)  # stopped, children included


LAUNCH = """mutation($params: ExecutionParams!) { launchRun(executionParams: $params) {
  __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } } }"""
CHECK_EXECUTIONS = """query($key: AssetKeyInput!, $check: String!, $partition: String) {
  assetCheckExecutions(assetKey: $key, checkName: $check, partition: $partition, limit: 1) {
    runId status evaluation { success severity partition } } }"""


def _launch_skipped_training(servers: DagsterServers, task: str) -> str:
    """A training run the UI's launchpad would send, for a backend with no key: it is skipped."""
    launched = servers.graphql(
        LAUNCH,
        {
            "params": {
                "selector": {
                    "repositoryLocationName": "training_pipeline",
                    "repositoryName": "__repository__",
                    "jobName": "training_job",
                },
                "runConfigData": {"ops": {"training_run": {"config": {"backend": "openai"}}}},
                "executionMetadata": {"tags": [{"key": "dagster/partition", "value": task}]},
            }
        },
    )["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    return launched["run"]["runId"]


def _wait_for_run(servers: DagsterServers, job: str, timeout: float, run_id: str | None = None) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = servers.graphql(RUNS, {"job": job})["runsOrError"]["results"]
        done = [
            r
            for r in runs
            if r["status"] in ("SUCCESS", "FAILURE", "CANCELED") and run_id in (None, r["runId"])
        ]
        if done:
            return done[0]
        time.sleep(1)
    raise AssertionError(f"no finished {job} run within {timeout:.0f}s; logs in {servers.logs}")


def _open(page: Page, servers: DagsterServers, path: str) -> None:
    page.goto(servers.url + path)


def test_the_ui_end_to_end(servers: DagsterServers, screenshots: Path) -> None:
    if not CHROMIUM.exists():
        pytest.fail("Debian's chromium is needed (`apt-get install chromium`; .ci/run installs it)")
    expect.set_options(timeout=30_000)  # a cold machine renders slowly
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.set_default_timeout(30_000)

        # the asset graph as a user first sees it (the Lineage page): one group, opened, every asset
        # visible, trajectories → filtered_trajectories → the five datasets → training
        _open(page, servers, "/")
        # "/" redirects to the overview once the app has loaded; a click before that redirect is
        # undone by it, so wait for the overview first
        expect(page).to_have_url(re.compile(r"/overview"))
        # the navigation's "Lineage", not the "Jobs" link whose icon is named column_lineage (once the
        # overview is drawn, a name holding "Lineage" finds that one first)
        page.get_by_role("navigation").get_by_role("link", name=re.compile(r"Lineage$")).click()
        expect(page).to_have_url(re.compile(r"/asset-groups"))
        for name in ("filtered_trajectories", "should_respond", "action_planner", "response", "training_run"):
            expect(page.get_by_text(name, exact=True).first).to_be_visible()
        page.wait_for_timeout(1000)
        page.screenshot(path=screenshots / "asset_graph.png")

        # a dataset's checks, the blocking credential re-scan among them
        _open(page, servers, "/assets/should_respond?view=checks")
        for check in ("no_credentials", "no_personal_data", "valid_jsonl", "counts_add_up"):
            expect(page.get_by_text(check).first).to_be_visible()

        # materialise one day from the job's page
        _open(page, servers, "/locations/training_pipeline/jobs/datasets_job")
        page.get_by_role("button", name="Materialize all…").click()
        dialog = page.get_by_role("dialog")
        partitions = dialog.get_by_placeholder("No matching partitions")
        partitions.fill(DAY)
        partitions.press("Enter")
        dialog.get_by_role("button", name="Launch 1 run").click()
        run = _wait_for_run(servers, "datasets_job", timeout=180)
        assert run["status"] == "SUCCESS", f"datasets run {run['runId']}: {run['status']}"
        assert {"key": "dagster/partition", "value": DAY} in run["tags"]

        # the run's page, then one dataset's materialisation from it: counts and a preview
        _open(page, servers, f"/runs/{run['runId']}")
        expect(page.get_by_text("RUN_SUCCESS").first).to_be_visible()
        page.screenshot(path=screenshots / "datasets_run.png")
        events = page.get_by_placeholder("Filter")  # the log is long; find the dataset's events
        events.fill("should_respond")
        events.press("Enter")
        page.get_by_text("should_respond", exact=True).first.click()
        expect(page.get_by_text(f"Partition {DAY} materialized in run")).to_be_visible()
        for key in ("examples", "source_trajectories", "llm_calls", "preview"):
            expect(page.get_by_text(key, exact=True).first).to_be_visible()
        page.screenshot(path=screenshots / "dataset_metadata.png")

        # turn the threshold sensor on: it fires a training run for the busiest task
        _open(page, servers, "/locations/training_pipeline/sensors/training_threshold_sensor")
        toggle = page.get_by_role("checkbox").first
        expect(toggle).not_to_be_checked()
        page.locator("label", has=toggle).click()  # the switch drawn over the hidden input
        expect(toggle).to_be_checked()
        training = _wait_for_run(servers, "training_job", timeout=180)
        assert training["status"] == "SUCCESS", f"training run {training['runId']}: {training['status']}"
        tags = {t["key"]: t["value"] for t in training["tags"]}
        assert tags["training_pipeline/source"] == "threshold"
        task = tags["dagster/partition"]

        # a task file of the user's is a job: its graph, launched from the launchpad
        _open(page, servers, "/locations/training_pipeline/jobs/task_mailbox_check")
        for step in ("email", "look", "settle", "done"):
            expect(page.get_by_text(step, exact=True).first).to_be_visible()
        page.wait_for_timeout(500)
        page.screenshot(path=screenshots / "task_graph.png")
        _open(page, servers, "/locations/training_pipeline/jobs/task_mailbox_check/playground")
        page.get_by_role("button", name="Launch Run").click()
        task_run = _wait_for_run(servers, "task_mailbox_check", timeout=120)
        assert task_run["status"] == "SUCCESS", f"task run {task_run['runId']}: {task_run['status']}"

        # the training run's record, as the asset's metadata
        _open(page, servers, f"/assets/training_run?view=events&partition={task}")
        expect(page.get_by_text("atropos").first).to_be_visible()
        expect(page.get_by_text("succeeded").first).to_be_visible()
        page.wait_for_timeout(500)
        page.screenshot(path=screenshots / "training_run.png")

        # a training run that trains nothing (no OpenAI key) is a warning on the asset, not a plain green
        skipped_task = next(t for t in ("media_description", "context_routing") if t != task)
        skipped = _wait_for_run(
            servers, "training_job", timeout=120, run_id=_launch_skipped_training(servers, skipped_task)
        )
        assert skipped["status"] == "SUCCESS"
        [execution] = servers.graphql(
            CHECK_EXECUTIONS,
            {"key": {"path": ["training_run"]}, "check": "not_skipped", "partition": skipped_task},
        )["assetCheckExecutions"]
        assert (execution["runId"], execution["status"]) == (skipped["runId"], "FAILED")
        assert execution["evaluation"]["severity"] == "WARN" and not execution["evaluation"]["success"]
        _open(page, servers, "/assets/training_run?view=checks")
        expect(page.get_by_text("not_skipped").first).to_be_visible()
        page.wait_for_timeout(500)
        page.screenshot(path=screenshots / "training_run_skipped.png")
        browser.close()

    # nothing planted came out (credentials, nor the customer's name, email, phone and card): not in
    # Dagster's storage (runs, config, tags, event log, metadata,
    # compute logs), the raw store, quarantine, datasets, reports and run records, nor what the training
    # backend was given
    data = Path(servers.env["TRAINING_PIPELINE_DATA"])
    atropos = Path(servers.env["ATROPOS_DATA_DIR"])
    stored = stored_text(servers.home, set()) | stored_text(data, set()) | stored_text(atropos, set())
    assert any(p.suffix == ".db" for p in stored) and any(
        p.parent.name == "compute_logs" or "compute_logs" in str(p) for p in stored
    )
    for secret in [*IN_TRAJECTORY, IN_ENVIRONMENT, *PERSONAL.values()]:
        leaks = [str(path) for path, text in stored.items() if secret in text]
        assert leaks == [], f"{secret[:12]}… found in {leaks}"
