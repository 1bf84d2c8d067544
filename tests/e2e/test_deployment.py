"""The production deployment (`deploy/dagster.yaml`), for real on loopback: Dagster's storage in a
PostgreSQL server, a Redis broker and a `dagster-celery` worker as processes, S3 for shared storage (moto's
server, on loopback), one day of the dataset graph and a task job run through it, the runs and events read
back from PostgreSQL and the day's datasets from S3."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.dagster_servers import free_port, pipeline_free_env
from tests.helpers import REPO, cli
from tests.s3_server import S3Server, s3_client

BIN = Path(sys.executable).parent
DAY = "2026-11-24"
BUCKET = "training-data"


@pytest.fixture
def deployment(postgres, tmp_path: Path) -> Iterator[dict[str, str]]:
    admin = sa.create_engine(postgres.url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text("DROP DATABASE IF EXISTS dagster_deploy"))
        conn.execute(sa.text("CREATE DATABASE dagster_deploy"))
    admin.dispose()
    home, shared = tmp_path / "home", tmp_path / "shared"
    home.mkdir()
    shared.mkdir()
    shutil.copy(REPO / "deploy" / "dagster.yaml", home / "dagster.yaml")
    broker = f"redis://127.0.0.1:{free_port()}/0"
    (tmp_path / "celery.yaml").write_text(
        f"execution:\n  config:\n    broker: {broker}\n    backend: {broker}\n"
    )
    env = pipeline_free_env()
    env.update(
        {
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",  # dagster-celery runs `celery`
            "DAGSTER_HOME": str(home),
            "DAGSTER_DISABLE_TELEMETRY": "1",
            "DAGSTER_PG_HOST": "127.0.0.1",
            "DAGSTER_PG_PORT": str(postgres.port),
            "DAGSTER_PG_DB": "dagster_deploy",
            "DAGSTER_PG_USER": "postgres",
            "DAGSTER_PG_PASSWORD": "",
            "DAGSTER_SHARED_DIR": str(shared),
            "TRAINING_PIPELINE_DATA": str(shared / "data"),
            "TRAINING_PIPELINE_EXECUTOR": "celery",
            "CELERY_BROKER_URL": broker,
        }
    )
    s3 = S3Server(tmp_path / "moto.log")  # the shared storage: S3's protocol, served by moto on loopback
    env.update({"TRAINING_PIPELINE_SHARED_URL": f"s3://{BUCKET}/pipeline", **s3.env})
    redis_port = broker.rsplit(":", 1)[1].split("/")[0]
    commands = [
        ["redis-server", "--bind", "127.0.0.1", "--port", redis_port, "--save", "", "--appendonly", "no"],
        [
            str(BIN / "dagster-celery"),
            "worker",
            "start",
            "-A",
            "dagster_celery.app",
            "-y",
            str(tmp_path / "celery.yaml"),
            "--",
            "--concurrency",
            "2",
        ],
    ]
    s3.__enter__()
    logs = (tmp_path / "services.log").open("ab")
    services = [
        subprocess.Popen(
            command, env=env, cwd=home, stdout=logs, stderr=subprocess.STDOUT, start_new_session=True
        )
        for command in commands
    ]
    logs.close()
    try:
        _wait_for_worker(env["CELERY_BROKER_URL"], services, tmp_path / "services.log")
        s3.bucket(BUCKET)
        env["WORKER_GROUP"] = str(services[-1].pid)
        yield env
    finally:
        for process in reversed(services):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        s3.__exit__(None, None, None)


def _wait_for_worker(broker: str, services: list[subprocess.Popen], log: Path, timeout: float = 90) -> None:
    from celery import Celery

    app = Celery(broker=broker, backend=broker)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert all(p.poll() is None for p in services), log.read_text()[-3000:]
        try:
            if app.control.ping(timeout=1):
                return
        except Exception:
            pass
        time.sleep(0.5)
    raise AssertionError(f"no Celery worker answered within {timeout:.0f}s: {log.read_text()[-3000:]}")


def test_a_day_and_a_task_run_through_postgres_and_celery(
    deployment: dict[str, str], postgres, tmp_path: Path
) -> None:
    day = cli(deployment, "materialize", "--start", DAY, timeout=600)
    assert day.returncode == 0, day.stdout[-2000:] + day.stderr[-3000:]
    task = tmp_path / "fan-out.json"
    task.write_text(
        json.dumps(
            [{"id": "email", "type": "deploy_env", "env_type": "email", "env_name": "email"}]
            + [
                {
                    "id": f"look_{i}",
                    "type": "snapshot_env",
                    "env_name": "email",
                    "depends_on": [{"task_step_id": "email"}],
                }
                for i in range(3)
            ]
        )
    )
    run = cli(deployment, "task", "run", str(task), "--executor", "celery", timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]

    engine = sa.create_engine(postgres.url.rsplit("/", 1)[0] + "/dagster_deploy")
    with engine.connect() as conn:
        runs = dict(conn.execute(sa.text("SELECT pipeline_name, status FROM runs")).fetchall())
        materialized = {
            row[0]
            for row in conn.execute(
                sa.text("SELECT asset_key FROM event_logs WHERE dagster_event_type = 'ASSET_MATERIALIZATION'")
            )
        }
        step_events = [
            json.loads(row[0])
            for row in conn.execute(
                sa.text("SELECT event FROM event_logs WHERE dagster_event_type = 'STEP_START'")
            )
        ]
    engine.dispose()
    assert runs == {"datasets_job": "SUCCESS", "task_fan_out": "SUCCESS"}
    assert {json.dumps(["should_respond"]), json.dumps(["filtered_trajectories"])} <= materialized
    # every step ran in a Celery worker process, not in the process that launched the run
    step_pids = {event["dagster_event"]["pid"] for event in step_events}
    assert len(step_events) >= 4 + 2  # the task's four steps, the day's layers (checks in it), its copy
    assert {os.getpgid(pid) for pid in step_pids} == {int(deployment["WORKER_GROUP"])}
    datasets = Path(deployment["TRAINING_PIPELINE_DATA"]) / "datasets" / DAY
    assert (datasets / "should_respond_trajectories.jsonl").stat().st_size > 0
    # the day's datasets reached the shared storage (S3) byte for byte, after their checks passed
    s3 = s3_client(deployment)
    copied = {
        path.rsplit("/", 1)[1]: s3.cat_file(path) for path in s3.ls(f"{BUCKET}/pipeline/datasets/{DAY}")
    }
    assert copied == {p.name: p.read_bytes() for p in datasets.iterdir()}
    assert "shared_datasets" in {json.loads(key)[0] for key in materialized}
