"""Trajectories and traces on an fsspec URL (here `s3://`, moto's S3 on loopback, read with the real
s3fs client): `build-datasets` and the daily assets read the URL as they read a folder, through a mirror
that fetches only what changed; mistakes are one line; no credential is shown or stored."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from dagster import materialize

from assets.datasets.definitions import daily_graph
from resources.privacy import PrivacySettings
from resources.sources import FileTrajectorySource
from resources.storage import DataStore
from tests.dagster_servers import pipeline_free_env
from tests.helpers import cli, layer_resources
from tests.otlp_store import moved_to_day
from tests.s3_server import S3Server
from training_pipeline import SAMPLE_TRAJECTORIES
from training_pipeline.settings import load_settings
from training_pipeline.trajectories.remote import mirror, mirror_folder

DAY = date(2026, 11, 24)
BUCKET = "agent-traces"


@pytest.fixture(scope="module")
def bucket(traced_runs: dict, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[S3Server, Path]]:
    """An S3 bucket holding a day's elizaOS export and a traced agent's OTLP requests under `input/`
    (and the same files in a local folder, returned beside the server)."""
    base = tmp_path_factory.mktemp("remote")
    local = base / "input"
    (local / "otlp").mkdir(parents=True)
    shutil.copy(SAMPLE_TRAJECTORIES / f"{DAY}.jsonl", local / f"{DAY}.jsonl")
    start = int(datetime(DAY.year, DAY.month, DAY.day, tzinfo=UTC).timestamp()) * 10**9
    for request in sorted(traced_runs["openinference"][0].glob("*.pb")):
        (local / "otlp" / request.name).write_bytes(moved_to_day(request.read_bytes(), start))
    with S3Server(base / "moto.log") as s3, pytest.MonkeyPatch.context() as patch:
        for name, value in s3.env.items():
            patch.setenv(name, value)  # what s3fs reads in this process (the Dagster test)
        s3.bucket(BUCKET)
        s3.fs().put(str(local) + "/", f"{BUCKET}/input/", recursive=True)
        yield s3, local
        shutil.rmtree(mirror_folder(f"s3://{BUCKET}/input"), ignore_errors=True)


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_build_datasets_reads_an_s3_url_as_it_reads_the_folder(bucket, tmp_path: Path) -> None:
    s3, local = bucket
    env = {**pipeline_free_env(), **s3.env}
    remote = cli(env, "build-datasets", f"s3://{BUCKET}/input", str(tmp_path / "remote"), "--no-progress")
    assert remote.returncode == 0, remote.stderr
    here = cli(env, "build-datasets", str(local), str(tmp_path / "local"), "--no-progress")
    assert here.returncode == 0, here.stderr
    made = _files(tmp_path / "remote")
    assert {"response_trajectories.jsonl", "chat.jsonl", "tool_use.jsonl"} <= set(made)
    # the same datasets; what differs is only where the records came from (the mirror's path)
    assert {k: v for k, v in made.items() if "quarantine" not in k and "summary" not in k} == {
        k: v for k, v in _files(tmp_path / "local").items() if "quarantine" not in k and "summary" not in k
    }
    shown = remote.stdout + remote.stderr + "".join(v.decode(errors="replace") for v in made.values())
    assert s3.env["AWS_SECRET_ACCESS_KEY"] not in shown


def test_the_mirror_fetches_only_what_changed(bucket, tmp_path: Path) -> None:
    s3, _ = bucket
    fs = s3.fs()
    fs.put(str(SAMPLE_TRAJECTORIES) + "/", f"{BUCKET}/days/", recursive=True)
    url = f"s3://{BUCKET}/days"
    folder = mirror(url, root=tmp_path)
    assert sorted(p.name for p in folder.glob("*.jsonl")) == [
        "2026-11-23.jsonl",
        "2026-11-24.jsonl",
        "2026-11-25.jsonl",
    ]
    assert (folder / "2026-11-23.jsonl").read_bytes() == (
        SAMPLE_TRAJECTORIES / "2026-11-23.jsonl"
    ).read_bytes()
    inodes = {p.name: p.stat().st_ino for p in folder.glob("*.jsonl")}

    assert mirror(url, root=tmp_path) == folder  # nothing changed: nothing fetched again
    assert {p.name: p.stat().st_ino for p in folder.glob("*.jsonl")} == inodes

    fs.pipe(f"{BUCKET}/days/2026-11-24.jsonl", b"{}\n")  # changed
    fs.rm(f"{BUCKET}/days/2026-11-25.jsonl")  # gone
    fs.pipe(f"{BUCKET}/days/notes.txt", b"not an export")  # neither export nor trace: not mirrored
    mirror(url, root=tmp_path)
    now = {p.name: p.stat().st_ino for p in folder.glob("*.jsonl")}
    assert sorted(now) == ["2026-11-23.jsonl", "2026-11-24.jsonl"]
    assert now["2026-11-23.jsonl"] == inodes["2026-11-23.jsonl"]
    assert (folder / "2026-11-24.jsonl").read_bytes() == b"{}\n"
    assert not (folder / "notes.txt").exists()

    one = mirror(f"s3://{BUCKET}/days/2026-11-23.jsonl", root=tmp_path)  # a URL naming one file
    assert one.name == "2026-11-23.jsonl" and one.is_file()


def test_the_daily_assets_read_an_s3_source(bucket, tmp_path: Path) -> None:
    store = DataStore(root=str(tmp_path / "data"))
    source = FileTrajectorySource(path=f"s3://{BUCKET}/input")
    result = materialize(
        daily_graph(load_settings({})),
        selection=["trajectories", "filtered_trajectories", "response", "trace_datasets"],
        partition_key=DAY.isoformat(),
        resources=layer_resources(source, PrivacySettings(env_secrets="NONE"), store),
    )
    assert result.success
    assert (store.datasets(DAY.isoformat()) / "response_trajectories.jsonl").stat().st_size > 0
    traced = sorted(p.name for p in store.trace_datasets(DAY.isoformat()).glob("*.jsonl"))
    assert traced == ["chat.jsonl", "tool_use.jsonl"]
    assert source.describe() == f"files:s3://{BUCKET}/input"


def test_a_missing_url_or_an_unknown_protocol_is_one_line(bucket, tmp_path: Path) -> None:
    s3, _ = bucket
    env = {**pipeline_free_env(), **s3.env}
    missing = cli(env, "build-datasets", f"s3://{BUCKET}/nothing-here", str(tmp_path / "out"))
    assert missing.returncode != 0
    assert missing.stderr.strip() == (
        f"training-pipeline: error: trajectory export path does not exist: s3://{BUCKET}/nothing-here"
    )
    unknown = cli(env, "build-datasets", "nosuch://user:hunter2@host/traces", str(tmp_path / "out"))
    assert unknown.returncode != 0 and len(unknown.stderr.strip().splitlines()) == 1
    assert "cannot read nosuch://host/traces" in unknown.stderr and "hunter2" not in unknown.stderr
    assert not (tmp_path / "out").exists()
