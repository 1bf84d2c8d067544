"""The code location's surface, as the UI, schedules, sensors and saved launches name it: an accidental
rename of an asset, check, job, sensor or schedule fails here first. Loaded in a fresh process with
the default environment (no shared storage, no extra task folder)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from dagster import AssetKey

SNAPSHOT = {
    "assets": [
        "action_planner",
        "context_routing",
        "filtered_trajectories",
        "media_description",
        "optimized_prompt",
        "prompt_evaluation",
        "response",
        "should_respond",
        "trace_datasets",
        "training_run",
        "trajectories",
        "tuned_model",
    ],
    "checks": [
        *(
            f"{task}:{check}"
            for task in ("action_planner", "context_routing")
            for check in ("counts_add_up", "no_credentials", "no_personal_data", "valid_jsonl")
        ),
        "filtered_trajectories:counts_add_up",
        "optimized_prompt:promotion_gate",
        *(
            f"{task}:{check}"
            for task in ("media_description", "response", "should_respond")
            for check in ("counts_add_up", "no_credentials", "no_personal_data", "valid_jsonl")
        ),
        *(f"trace_datasets:{check}" for check in ("no_credentials", "no_personal_data", "valid_jsonl")),
        "training_run:not_skipped",
        "trajectories:counts_add_up",
    ],
    "jobs": [
        "__ASSET_JOB",
        "datasets_job",
        "evaluation_job",
        "task_fix_the_tests",
        "task_inbox_triage",
        "task_reply_to_dana",
        "training_job",
    ],
    "sensors": ["evaluation_sensor", "nightly_datasets_automation", "training_threshold_sensor"],
    "schedules": [],
}

_READ = """
import json
from training_pipeline.definitions import defs
repo = defs.get_repository_def()
print(json.dumps({
    "assets": sorted(k.to_user_string() for k in repo.asset_graph.get_all_asset_keys()),
    "checks": sorted(f"{c.asset_key.to_user_string()}:{c.name}" for c in repo.asset_graph.asset_check_keys),
    "jobs": sorted(j.name for j in repo.get_all_jobs()),
    "sensors": sorted(s.name for s in repo.sensor_defs),
    "schedules": sorted(s.name for s in repo.schedule_defs),
}))
"""


def test_the_code_location_defines_what_it_always_has(tmp_path) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TRAINING_PIPELINE_SHARED_URL", "TRAINING_PIPELINE_TASKS_DIR")
    }
    env["TRAINING_PIPELINE_DATA"] = str(tmp_path)
    loaded = subprocess.run(
        [sys.executable, "-c", _READ], env=env, capture_output=True, text=True, check=True
    )
    assert json.loads(loaded.stdout.strip().splitlines()[-1]) == {k: sorted(v) for k, v in SNAPSHOT.items()}


def test_settings_reach_every_domain(tmp_path) -> None:
    """One settings object shapes the whole code location: partitions, schedule, sensor, executors,
    the extra task folder and the resources all follow it."""
    from assets.definitions import build_definitions
    from training_pipeline.settings import load_settings

    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "mine.json").write_text(
        json.dumps([{"id": "pause", "type": "wait", "seconds": 0}]),
        encoding="utf-8",
    )
    defs = build_definitions(
        load_settings(
            {
                "TRAINING_PIPELINE_START_DATE": "2023-06-01",
                "TRAINING_PIPELINE_NIGHTLY_CRON": "30 3 * * *",
                "TRAINING_PIPELINE_SENSOR_INTERVAL_SECONDS": "300",
                "TRAINING_PIPELINE_EXECUTOR": "multiprocess",
                "TRAINING_PIPELINE_TASK_EXECUTOR": "in_process",
                "TRAINING_PIPELINE_TASKS_DIR": str(tasks),
                "TRAINING_PIPELINE_DATA": str(tmp_path / "data"),
                "TRAINING_PIPELINE_SHARED_URL": f"file://{tmp_path / 'shared'}",
                "TRAINING_PIPELINE_TRIGGER_THRESHOLD": "7",
            }
        ),
        own_executor=True,
    )
    daily = defs.resolve_assets_def("trajectories").partitions_def
    assert daily.get_first_partition_key() == "2023-06-01"
    nightly = defs.resolve_assets_def("trajectories").automation_conditions_by_key[AssetKey("trajectories")]
    assert nightly.get_label() == "on_cron(30 3 * * *, UTC)"
    assert defs.resolve_sensor_def("training_threshold_sensor").minimum_interval_seconds == 300
    assert defs.resolve_job_def("datasets_job").executor_def.name == "multiprocess"
    assert defs.resolve_job_def("task_mine").executor_def.name == "in_process"
    assert "shared_datasets" in {k.to_user_string() for k in defs.resolve_all_asset_keys()}
    resources = defs.resources or {}
    assert resources["training_pipeline_store"].root == str(tmp_path / "data")
    assert resources["training_pipeline_policy"].trigger_threshold == 7
