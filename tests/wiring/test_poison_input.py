"""Input that cannot hurt: any single record, however large, deep or malformed, and anything odd in
the input folder, is quarantined alone with its reason; the good records still go through and the
counts add up. Files (core and CLI) and both database sources (through the Dagster asset on
PostgreSQL); plus the temp files an interrupted write leaves, removed by the next write, and a disk
error while large outputs are written, which fails their publication."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest
import sqlalchemy as sa
from dagster import AssetKey, materialize

from resources.privacy import PrivacySettings
from resources.sources import DatabaseTrajectorySource
from resources.storage import DataStore
from tests.helpers import DATASET_ASSETS, layer_resources
from tests.planted_secrets import IN_TRAJECTORY
from training_pipeline import atomic
from training_pipeline.atomic import StagedFiles, TempFile, atomic_write_text
from training_pipeline.intake.ingest import ingest_records
from training_pipeline.trajectories.database import read_table
from training_pipeline.trajectories.files import read_files

DAY = date(2026, 11, 24)
T = 1_795_478_500_000  # 2026-11-24
CAP = 256 * 1024


def _good(trajectory_id: str, start: int = T) -> dict:
    call = {"purpose": "response", "systemPrompt": "s", "userPrompt": "u", "response": "r"}
    return {"trajectoryId": trajectory_id, "startTime": start, "steps": [{"llmCalls": [call]}]}


def _deep(levels: int) -> str:
    nested = "[" * levels + "]" * levels
    return f'{{"trajectoryId":"deep","startTime":{T},"steps":[],"metadata":{{"x":{nested}}}}}'


@pytest.fixture
def poisoned(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    lines = [
        json.dumps(_good("ok-1")),
        _deep(100_000),
        '{"trajectoryId":"nan","startTime":NaN,"steps":[]}',
        '{"trajectoryId":"inf","startTime":Infinity,"steps":[]}',
        '{"trajectoryId":"big-number","startTime":1e400,"steps":[]}',
        json.dumps({**_good("huge"), "metadata": {"blob": "a" * (3 * CAP)}}),
        json.dumps({"trajectoryId": "cut", "note": IN_TRAJECTORY[1]})[:-5],
        json.dumps(_good("ok-2", T + 1)),
    ]
    (folder / "2026-11-24.jsonl").write_text("\n".join(lines) + "\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.jsonl").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (folder / "2026-11-24-passwd.jsonl").symlink_to(outside / "secret.jsonl")
    (folder / "2026-11-24-elsewhere").symlink_to(outside)
    (folder / "2026-11-24-sub").mkdir()
    (folder / "2026-11-24-sub" / "2026-11-24-up").symlink_to(folder)  # a loop
    (folder / "2026-11-24-sub" / "again.jsonl").symlink_to(folder / "2026-11-24.jsonl")  # inside: read
    return folder


def test_each_bad_record_is_quarantined_alone_and_the_counts_add_up(poisoned: Path, tmp_path: Path) -> None:
    parsed = list(read_files(poisoned, DAY, max_bytes=CAP))
    manifest = ingest_records(parsed, tmp_path / "t.parquet", tmp_path / "q.jsonl", "test")
    assert manifest.records_in == manifest.kept + manifest.quarantined
    # the day's file, then the same file again through a link inside the folder: its trajectories are
    # duplicates of the first reading, quarantined naming where each was first read (kept once)
    assert manifest.kept == 2
    quarantine = [json.loads(line) for line in (tmp_path / "q.jsonl").read_text().splitlines()]
    duplicates = [entry for entry in quarantine if entry["reason"].startswith("duplicate trajectory id")]
    # (the link in the subfolder sorts first, so the day's own file is the second reading)
    assert sorted(entry["origin"].rsplit("/", 1)[-1] for entry in duplicates) == [
        "2026-11-24.jsonl:1",
        "2026-11-24.jsonl:8",
    ]
    assert all("again.jsonl:" in entry["reason"] and "record" in entry for entry in duplicates)
    by_origin = {entry["origin"].rsplit("/", 1)[-1]: entry for entry in quarantine}
    assert "nested too deeply" in by_origin["2026-11-24.jsonl:2"]["reason"]
    assert "NaN is not JSON" in by_origin["2026-11-24.jsonl:3"]["reason"]
    assert "Infinity is not JSON" in by_origin["2026-11-24.jsonl:4"]["reason"]
    assert by_origin["2026-11-24.jsonl:5"]["reason"].startswith("invalid field startTime")
    huge = by_origin["2026-11-24.jsonl:6"]
    assert huge["reason"].startswith("record too large") and huge["bytes"] > 3 * CAP and "record" not in huge
    cut = by_origin["2026-11-24.jsonl:7"]
    assert cut["reason"].startswith("invalid JSON") and IN_TRAJECTORY[1] not in cut["record"]
    assert "<REDACTED:github-token>" in cut["record"]  # the payload is redacted, the position kept
    assert "outside the input folder" in by_origin["2026-11-24-passwd.jsonl"]["reason"]
    assert "outside the input folder" in by_origin["2026-11-24-elsewhere"]["reason"]
    assert "loop" in by_origin["2026-11-24-up"]["reason"]
    assert "root:x:0:0" not in (tmp_path / "q.jsonl").read_text()


def test_the_cli_reports_them_and_goes_on(poisoned: Path, tmp_path: Path) -> None:
    cli = Path(sys.executable).parent / "training-pipeline"
    env = {**os.environ, "TRAINING_PIPELINE_MAX_RECORD_BYTES": str(CAP)}
    done = subprocess.run(
        [str(cli), "build-datasets", str(poisoned), str(tmp_path / "out")],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["recordsIn"] == summary["quarantined"] + summary["trajectories"]
    assert summary["kept"] == 4 and summary["counts"]["response"] == 4


def _poison_table(engine: sa.Engine, table: str, json_type: str) -> None:
    rows = [
        ("ok-1", T, json.dumps(_good("ok-1")["steps"]), "{}"),
        ("deep", T + 1, "[" * 5000 + "]" * 5000, "{}"),
        ("huge", T + 2, json.dumps([{"llmCalls": [{"response": "a" * (3 * CAP)}]}]), "{}"),
        ("bad-meta", T + 3, "[]", '{"cut": '),
        ("ok-2", T + 4, json.dumps(_good("ok-2")["steps"]), "{}"),
    ]
    with engine.begin() as conn:
        conn.execute(sa.text(f"DROP TABLE IF EXISTS {table}"))
        conn.execute(
            sa.text(
                f"CREATE TABLE {table} (id TEXT PRIMARY KEY, agent_id TEXT, start_time BIGINT, "
                f"steps_json {json_type}, metadata TEXT)"
            )
        )
        for row in rows:
            conn.execute(
                sa.text(f"INSERT INTO {table} VALUES (:id, 'a', :start, :steps, :meta)"),
                dict(zip(("id", "start", "steps", "meta"), row, strict=True)),
            )


def _check_rows(parsed: list) -> None:
    reasons = {p.origin.split(":")[-1]: p.reason for p in parsed}
    assert reasons["ok-1"] is None and reasons["ok-2"] is None
    assert "nested too deeply" in reasons["deep"]
    assert reasons["huge"].startswith("record too large")
    assert reasons["bad-meta"].startswith("metadata: invalid JSON")


def test_sqlite_rows_that_cannot_be_read_are_quarantined_alone(tmp_path: Path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'eliza.db'}")
    _poison_table(engine, "poison", "TEXT")
    _check_rows(list(read_table(engine, "poison", DAY, max_bytes=CAP)))


def test_a_postgresql_day_with_poison_rows_still_materialises(
    postgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = sa.create_engine(postgres.url)
    _poison_table(engine, "poison", "JSONB")  # the driver would parse JSONB itself: it must not
    engine.dispose()
    monkeypatch.setenv("TRAINING_PIPELINE_MAX_RECORD_BYTES", str(CAP))
    from training_pipeline.settings import settings

    settings.cache_clear()
    try:
        result = materialize(
            DATASET_ASSETS,
            selection=[AssetKey("trajectories"), AssetKey("filtered_trajectories")],
            partition_key=DAY.isoformat(),
            resources=layer_resources(
                DatabaseTrajectorySource(url=postgres.url, table="poison"),
                PrivacySettings(env_secrets="NONE"),
                DataStore(root=str(tmp_path / "data")),
            ),
        )
    finally:
        settings.cache_clear()
    assert result.success
    [metadata] = [
        e.materialization.metadata
        for e in result.get_asset_materialization_events()
        if e.asset_key == AssetKey("trajectories")
    ]
    assert (metadata["records_in"].value, metadata["kept"].value, metadata["quarantined"].value) == (5, 2, 3)


def test_an_interrupted_writes_temp_file_is_removed_by_the_next_write(tmp_path: Path) -> None:
    target = tmp_path / "out" / "summary.json"
    atomic_write_text(target, "first")
    # a writer killed mid-write: its temp file stays, no longer locked by anyone
    crashed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys; from pathlib import Path; from training_pipeline.atomic import TempFile;"
            f"t = TempFile(Path({str(target)!r})); os.write(t.fd, b'half'); print(t.path); os._exit(9)",
        ],
        capture_output=True,
        text=True,
    )
    stale = Path(crashed.stdout.strip())
    assert crashed.returncode == 9 and stale.exists()
    live = TempFile(target)  # a writer still at work: its file is kept
    atomic_write_text(target, "second")
    assert not stale.exists() and live.path.exists() and target.read_text() == "second"
    live.release()
    os.close(live.fd)


def _write_in_chunks(staged: StagedFiles, name: str, chunks: int) -> bytes:
    handle = staged.open(name, "wb")
    written = b"".join(bytes([65 + index % 26]) * 4096 for index in range(chunks))
    handle.write(written)
    handle.close()
    return written


def test_a_disk_error_while_writing_fails_the_publication_and_publishes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []

    def failing(fd: int) -> None:  # the second file's sync fails
        synced.append(fd)
        if len(synced) == 2:
            raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(atomic, "_datasync", failing)
    staged = StagedFiles(tmp_path / "out")
    _write_in_chunks(staged, "big.jsonl", 3)
    _write_in_chunks(staged, "other.jsonl", 2)
    with pytest.raises(OSError, match="Input/output error"):
        staged.publish()
    staged.discard()
    assert not (tmp_path / "out").exists()  # nothing published, and the folder it made is gone
