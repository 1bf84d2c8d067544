"""Faults, each one real: a process killed mid-write, a daemon restarted between sensor ticks, two
training launches at once, a trajectory database that goes down and comes back."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

import sqlalchemy as sa
from dagster import AssetKey, DagsterInstance, RunsFilter, materialize

from resources.privacy import PrivacySettings
from resources.sources import DatabaseTrajectorySource
from resources.storage import DataStore
from tests.dagster_servers import WORKSPACE, DagsterServers, instance_at, pipeline_free_env
from tests.helpers import DATASET_ASSETS, REPO, layer_resources
from training_pipeline.samples import day_of_trajectories

BIN = Path(sys.executable).parent


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists():
        shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    env = pipeline_free_env()
    return {
        **env,
        "DAGSTER_HOME": str(home),
        "DAGSTER_DISABLE_TELEMETRY": "1",
        "TRAINING_PIPELINE_DATA": str(tmp_path / "data"),
        **extra,
    }


def _cli(env: dict[str, str], *args: str, **popen) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(BIN / "training-pipeline"), *args],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        **popen,
    )


def _visible(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*")) if not p.name.startswith(".")}


def test_kill_9_mid_write_leaves_nothing_partial_and_a_rerun_matches(tmp_path: Path) -> None:
    day = "2026-11-02"
    source = tmp_path / "in"
    source.mkdir()
    with (source / f"{day}.jsonl").open("w") as handle:
        for trajectory in day_of_trajectories(date.fromisoformat(day), 4000, seed=3):
            handle.write(json.dumps(trajectory) + "\n")
    clean = _env(tmp_path / "clean", TRAJECTORY_DIR=str(source))
    assert _cli(clean, "materialize", "--start", day).wait(timeout=300) == 0

    env = _env(tmp_path, TRAJECTORY_DIR=str(source))
    process = _cli(env, "materialize", "--start", day)
    datasets = tmp_path / "data" / "datasets" / day
    deadline = time.monotonic() + 240
    while not list(datasets.glob(".*.tmp")):  # the dataset files are being written
        assert process.poll() is None, "finished before it could be interrupted"
        assert time.monotonic() < deadline
        time.sleep(0.005)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()

    # nothing half-written under a real name, and Dagster does not hold the day as materialised
    assert not datasets.exists() or not [n for n in _visible(datasets) if n.endswith(".jsonl")]
    home = Path(env["DAGSTER_HOME"])
    with instance_at(home) as instance:
        assert day not in instance.get_materialized_partitions(AssetKey("should_respond"))
        assert day not in instance.get_materialized_partitions(AssetKey("trajectories"))

    # a re-run writes exactly what an uninterrupted run wrote
    assert _cli(env, "materialize", "--start", day).wait(timeout=300) == 0
    expected = _visible(tmp_path / "clean" / "data" / "datasets" / day)
    rerun = _visible(datasets)
    summaries = [json.loads(files.pop("trajectory_dataset_summary.json")) for files in (rerun, expected)]
    for summary in summaries:
        del summary["generatedAt"]  # the only thing that differs between two runs: when
    assert rerun == expected and summaries[0] == summaries[1]
    assert not list(datasets.glob(".*.tmp"))  # the killed run's temp files went with the re-run
    with instance_at(home) as instance:
        assert day in instance.get_materialized_partitions(AssetKey("should_respond"))


def _sensor_cursor(home: Path) -> dict | None:
    from dagster._core.scheduler.instigation import InstigatorType

    with instance_at(home) as instance:
        for state in instance.all_instigator_state(instigator_type=InstigatorType.SENSOR):
            if (
                state.name == "training_threshold_sensor"
                and state.instigator_data
                and state.instigator_data.cursor
            ):
                return json.loads(state.instigator_data.cursor)
    return None


def _training_runs(home: Path) -> list:
    with instance_at(home) as instance:
        return instance.get_runs(RunsFilter(job_name="training_job"))


def _wait(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_daemon_restart_between_ticks_neither_loses_nor_double_counts(tmp_path: Path) -> None:
    trainer = tmp_path / "train.py"
    trainer.write_text("print('trained')\n")
    env = _env(
        tmp_path,
        TRAINING_PIPELINE_SENSOR_INTERVAL_SECONDS="1",
        TRAINING_PIPELINE_TRIGGER_THRESHOLD="150",
        TRAINING_PIPELINE_BACKENDS="atropos",
        ATROPOS_DATA_DIR=str(tmp_path / "atropos"),
        ATROPOS_COMMAND=f"{sys.executable} {trainer}",
    )
    home = Path(env["DAGSTER_HOME"])
    # threshold 150: should_respond has 106 examples on the first sample day, so it takes two days to
    # fire; action_planner (54 + 49) never does
    assert _cli(env, "materialize", "--start", "2026-11-23").wait(timeout=120) == 0
    start = subprocess.run(
        [str(BIN / "dagster"), "sensor", "start", "training_threshold_sensor", "-w", str(WORKSPACE)],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
    )
    assert start.returncode == 0, start.stdout + start.stderr
    with DagsterServers(home, env, tmp_path / "logs", webserver=False) as servers:
        first = _wait(lambda: _sensor_cursor(home), 90, "the first tick")
        assert first["tasks"]["should_respond"]["days"] == {"2026-11-23": 106}
        servers.restart_daemon()
        assert _cli(env, "materialize", "--start", "2026-11-24").wait(timeout=120) == 0
        [run] = _wait(lambda: [r for r in _training_runs(home) if r.is_finished], 120, "the training run")
        assert run.tags["dagster/partition"] == "should_respond" and run.is_success
        servers.restart_daemon()  # again, after firing: the fired run is not forgotten
        _wait(lambda: _sensor_cursor(home)["tasks"]["should_respond"]["days"] == {}, 60, "the counter reset")
        time.sleep(5)  # several more ticks
        cursor = _sensor_cursor(home)
    assert len(_training_runs(home)) == 1
    counter = cursor["tasks"]["should_respond"]
    assert counter["fired"] == 1 and counter["fired_run_key"] is None
    assert cursor["tasks"]["action_planner"]["days"] == {"2026-11-23": 54, "2026-11-24": 49}  # 103 < 150


def test_two_training_launches_at_once_dispatch_one_at_a_time(tmp_path: Path) -> None:
    log = tmp_path / "dispatches.log"
    trainer = tmp_path / "train.py"
    trainer.write_text(
        "import sys, time\n"
        f"log = open({str(log)!r}, 'a')\n"
        "start = time.time(); time.sleep(2)\n"
        "log.write(f'{start} {time.time()}\\n')\n"
    )
    env = _env(
        tmp_path,
        TRAINING_PIPELINE_BACKENDS="atropos",
        ATROPOS_DATA_DIR=str(tmp_path / "atropos"),
        ATROPOS_COMMAND=f"{sys.executable} {trainer}",
    )
    assert _cli(env, "materialize", "--start", "2026-11-24").wait(timeout=120) == 0
    launches = [_cli(env, "train", "--task", "response") for _ in range(2)]
    outputs = [p.communicate(timeout=180)[0] for p in launches]
    assert [p.returncode for p in launches] == [0, 0], outputs
    records = [json.loads(out[out.index("{") :]) for out in outputs]
    assert len({r["runId"] for r in records}) == 2  # each launch reports its own record
    statuses = sorted(r["status"] for r in records)
    spans = [tuple(map(float, line.split())) for line in log.read_text().splitlines()]
    if statuses == ["skipped", "succeeded"]:  # the second found the task's lock held
        [skipped] = [r for r in records if r["status"] == "skipped"]
        assert skipped["reason"] == "another training run for response is dispatching; not started twice"
        assert len(spans) == 1
    else:  # or it came after the first had finished: then the two never overlapped
        assert statuses == ["succeeded", "succeeded"]
        (_, first_end), (second_start, _) = sorted(spans)
        assert first_end <= second_start


def test_a_trajectory_database_that_goes_down_fails_the_day_then_succeeds_once_back(
    postgres, tmp_path: Path
) -> None:
    engine = sa.create_engine(postgres.url)
    [trajectory] = list(day_of_trajectories(date(2026, 11, 24), 1, seed=1))
    with engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE IF EXISTS trajectories"))
        conn.execute(
            sa.text(
                "CREATE TABLE trajectories (id TEXT PRIMARY KEY, agent_id TEXT, "
                "start_time BIGINT, steps_json TEXT, metadata TEXT)"
            )
        )
        conn.execute(
            sa.text("INSERT INTO trajectories VALUES (:id, 'a', :start, :steps, '{}')"),
            {
                "id": trajectory["trajectoryId"],
                "start": trajectory["startTime"],
                "steps": json.dumps(trajectory["steps"]),
            },
        )
    engine.dispose()
    resources = layer_resources(
        DatabaseTrajectorySource(url=postgres.url, retries=0),
        PrivacySettings(),
        DataStore(root=str(tmp_path / "data")),
    )
    instance = DagsterInstance.ephemeral()

    def run():
        return materialize(
            DATASET_ASSETS,
            partition_key="2026-11-24",
            resources=resources,
            instance=instance,
            raise_on_error=False,
        )

    postgres.stop()
    try:
        down = run()
    finally:
        postgres.start()
    assert not down.success
    [failure] = [e for e in down.all_events if e.event_type_value == "STEP_FAILURE"]
    assert failure.step_key == "daily_layers"
    assert "is unavailable" in failure.event_specific_data.error.to_string()
    assert not (tmp_path / "data" / "datasets" / "2026-11-24").exists()
    back = run()
    assert back.success
    assert instance.get_materialized_partitions(AssetKey("trajectories")) == {"2026-11-24"}
