"""The daily partitions start where the data does: the setting when given, else the source's first day
(the bundled sample's for the demo), found cheaply and remembered; clock errors do not open decades."""

from __future__ import annotations

import json
import os
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from assets.partitions import daily_partitions
from tests.unit.test_trajectory_sources import ELIZA_SCHEMA
from training_pipeline.settings import load_settings
from training_pipeline.trajectories import earliest
from training_pipeline.trajectories.database import write_trajectory
from training_pipeline.trajectories.earliest import (
    DEFAULT_FIRST_DAY,
    earliest_day_in_files,
    earliest_day_in_table,
    first_day,
)


def _ms(day: str, hour: int = 12) -> int:
    return int(datetime.fromisoformat(day).replace(hour=hour, tzinfo=UTC).timestamp() * 1000)


def _write(path: Path, *starts: int | None, filler: int = 0) -> None:
    lines = []
    for n, start in enumerate(starts):
        record = {"trajectoryId": f"t{n}", "pad": "x" * filler}
        if start is not None:
            record["startTime"] = start
        lines.append(json.dumps(record))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_the_demo_starts_on_the_samples_first_day_and_the_setting_wins(tmp_path: Path) -> None:
    data = {"TRAINING_PIPELINE_DATA": str(tmp_path)}
    assert daily_partitions(load_settings(data)).get_first_partition_key() == "2026-11-23"
    explicit = load_settings({**data, "TRAINING_PIPELINE_START_DATE": "2024-03-01"})
    assert daily_partitions(explicit).get_first_partition_key() == "2024-03-01"


def test_a_folder_starts_on_its_earliest_record_and_task_runs_count_too(tmp_path: Path) -> None:
    source = tmp_path / "exports"
    _write(source / "a.jsonl", _ms("2026-10-05"), _ms("2026-09-30", hour=23))
    _write(source / "deep" / "b.json", _ms("2026-10-01"))
    settings = load_settings(
        {"TRAJECTORY_DIR": str(source), "TRAINING_PIPELINE_DATA": str(tmp_path / "data")}
    )
    assert first_day(settings) == date(2026, 9, 30)  # the UTC day of the earliest start
    (tmp_path / "data" / "agent_trajectories" / "2026-08-14").mkdir(parents=True)
    assert first_day(settings) == date(2026, 8, 14)


def test_clock_errors_and_unreadable_records_do_not_open_decades(tmp_path: Path) -> None:
    source = tmp_path / "2026-10-07.jsonl"
    _write(source, 0, 86_400_000, None, _ms("2026-10-09"))  # 1970 twice, a record with no start
    assert earliest_day_in_files(source) == date(2026, 10, 9)
    # a file with no start time at all counts as the day its records are quarantined under
    _write(tmp_path / "only-bad" / "2026-10-02.jsonl", None)
    assert earliest_day_in_files(tmp_path / "only-bad") == date(2026, 10, 2)


def test_a_start_time_cut_by_a_read_is_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(earliest, "_CHUNK", 97)  # reads end inside records, numbers among them
    source = tmp_path / "x.jsonl"
    _write(source, *(_ms(f"2026-10-{day:02d}") for day in range(28, 9, -1)), filler=13)
    assert earliest_day_in_files(source) == date(2026, 10, 10)


def test_a_file_is_read_once_until_it_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "exports" / "a.jsonl"
    _write(source, _ms("2026-10-05"))
    cache = tmp_path / "cache" / "first-days.json"
    assert earliest_day_in_files(source.parent, cache) == date(2026, 10, 5)
    reads = []
    monkeypatch.setattr(earliest, "_smallest_start_ms", lambda path: reads.append(path) or None)
    assert earliest_day_in_files(source.parent, cache) == date(2026, 10, 5)
    assert reads == []
    monkeypatch.undo()
    _write(source, _ms("2026-10-01"))
    os.utime(source, ns=(0, source.stat().st_mtime_ns + 1_000_000))
    assert earliest_day_in_files(source.parent, cache) == date(2026, 10, 1)


def test_an_empty_source_starts_on_the_default_day(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    settings = load_settings(
        {"TRAJECTORY_DIR": str(tmp_path / "empty"), "TRAINING_PIPELINE_DATA": str(tmp_path)}
    )
    assert first_day(settings) == DEFAULT_FIRST_DAY


def test_a_database_starts_on_its_earliest_row_and_one_that_does_not_answer_on_the_default(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'eliza.db'}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text(ELIZA_SCHEMA))
    for n, day in enumerate(["2026-10-12", "2026-10-03", "1970-01-02"]):
        trajectory = {"trajectoryId": f"t{n}", "agentId": "a", "startTime": _ms(day), "steps": []}
        write_trajectory(engine, "trajectories", trajectory)
    engine.dispose()
    assert earliest_day_in_table(url, "trajectories") == date(2026, 10, 3)
    settings = load_settings({"TRAJECTORY_DB_URL": url, "TRAINING_PIPELINE_DATA": str(tmp_path)})
    assert first_day(settings) == date(2026, 10, 3)
    missing = load_settings({"TRAJECTORY_DB_URL": url, "TRAJECTORY_DB_TABLE": "nope"})
    assert first_day(missing) == DEFAULT_FIRST_DAY
