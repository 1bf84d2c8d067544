"""Trajectories in: export files and elizaOS databases (SQLite and a real PostgreSQL), bad input."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import date
from itertools import pairwise
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.helpers import fresh_python
from training_pipeline.intake.ingest import ingest_records
from training_pipeline.trajectories.database import SourceUnavailable, read_table
from training_pipeline.trajectories.files import line_spans, read_files
from training_pipeline.trajectories.parquet import iter_trajectories

DAY = date(2026, 11, 24)
T = 1_795_478_400_000  # 2026-11-24T00:00:00Z


def _traj(tid: str, start: int = T + 1000, **extra) -> dict:
    return {
        "trajectoryId": tid,
        "agentId": "a",
        "startTime": start,
        "steps": [{"llmCalls": [{"systemPrompt": "s", "userPrompt": "u", "response": "r"}]}],
        **extra,
    }


def test_jsonl_and_json_arrays_keep_unknown_fields_and_filter_by_day(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(
        json.dumps(_traj("t1", customField={"kept": True}))
        + "\n\n   \n"
        + json.dumps(_traj("other-day", T - 1))
        + "\n"
        + json.dumps(_traj("t2", T + 86_399_999))
        + "\n"
    )
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.json").write_text(json.dumps([_traj("t3"), _traj("t4", T + 86_400_000)]))
    parsed = list(read_files(tmp_path, DAY))
    assert [p.trajectory["trajectoryId"] for p in parsed] == ["t1", "t2", "t3"]
    assert parsed[0].trajectory["customField"] == {"kept": True}
    assert parsed[0].origin.endswith("a.jsonl:1") and parsed[2].origin.endswith("b.json:[0]")


def test_shares_of_a_file_tile_it_and_number_its_lines(tmp_path: Path) -> None:
    """The build's shares: whole lines, together the whole file, each knowing its first line's number
    (what quarantine origins say), for long lines, thousands of short ones and a last line with no
    newline."""
    lines = [b"x" * n for n in (5000, 0, 3, 7000)] + [b"y" * (i % 7) for i in range(5000)] + [b"z" * 9000]
    file = tmp_path / "day.jsonl"
    file.write_bytes(b"\n".join(lines))
    spans = list(line_spans(file, 4096, 1 << 20))
    assert spans[0].start == 0 and spans[-1].end == file.stat().st_size
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    for span, after in pairwise(spans):
        assert span.end == after.start
    for span in spans:
        assert span.start in starts and span.first_line == starts.index(span.start) + 1
    records = [record for span in spans for record in span.records()]
    assert [record.data for record in records] == [line + b"\n" for line in lines[:-1] if line] + lines[-1:]
    # a share longer than the cap is read line by line, bounded: the same records, a long line measured
    whole = replace(spans[0], end=spans[-1].end, max_bytes=8000)
    assert [(r.origin, r.data) for r in whole.records() if r.problem is None] == [
        (r.origin, r.data) for r in records if len(r.data) <= 8000
    ]
    assert [r.size for r in whole.records() if r.problem] == [9000]
    empty = tmp_path / "empty.jsonl"
    empty.touch()
    assert list(line_spans(empty, 4096)) == []


def test_bad_records_are_quarantined_with_reason_and_origin(tmp_path: Path) -> None:
    lines = [
        json.dumps(_traj("good")).encode(),
        b'{"trajectoryId": "broken", "startTime": ' + str(T).encode() + b', "steps": [',
        json.dumps({"agentId": "a", "startTime": T}).encode(),
        json.dumps(_traj("", T)).encode(),
        json.dumps(_traj("wrongtype", steps=[{"llmCalls": [{"systemPrompt": 42}]}])).encode(),
        json.dumps(_traj("badtime", "yesterday")).encode(),
        b'{"trajectoryId": "bytes", "startTime": 1, "x": "\xff\xfe"}',
        b"[1, 2, 3]",
    ]
    export = tmp_path / "2026-11-24.jsonl"
    export.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "out"
    manifest = ingest_records(read_files(export, DAY), out / "t.parquet", out / "q.jsonl", "test")
    assert (manifest.records_in, manifest.kept, manifest.quarantined) == (8, 1, 7)
    quarantine = [json.loads(line) for line in (out / "q.jsonl").read_text().splitlines()]
    reasons = {q["origin"].rsplit(":", 1)[1]: q["reason"] for q in quarantine}
    assert reasons["2"].startswith("invalid JSON")
    assert reasons["3"].startswith("invalid field trajectoryId: Field required")
    assert reasons["4"].startswith("invalid field trajectoryId")
    assert reasons["5"].startswith("invalid field steps.0.llmCalls.0.systemPrompt")
    assert reasons["6"].startswith("invalid field startTime")
    assert reasons["7"] == "invalid UTF-8 at byte 48"
    assert reasons["8"] == "not a JSON object (got list)"
    by_origin = {q["origin"].rsplit(":", 1)[1]: q for q in quarantine}
    assert "recordBase64" in by_origin["7"] and "record" in by_origin["2"]  # nothing is lost
    assert [t["trajectoryId"] for _, t in iter_trajectories(out / "t.parquet")] == ["good"]


def test_undatable_bad_records_land_in_the_day_named_by_the_file(tmp_path: Path) -> None:
    (tmp_path / "2026-11-24.jsonl").write_text("not json\n")
    assert len(list(read_files(tmp_path, DAY))) == 1
    assert list(read_files(tmp_path, date(2026, 11, 25))) == []


ELIZA_SCHEMA = """CREATE TABLE trajectories (
    id TEXT PRIMARY KEY, trajectory_id TEXT, agent_id TEXT NOT NULL, source TEXT NOT NULL DEFAULT 'runtime',
    status TEXT NOT NULL DEFAULT 'completed', start_time BIGINT NOT NULL, end_time BIGINT,
    duration_ms BIGINT, step_count INTEGER NOT NULL DEFAULT 0, llm_call_count INTEGER NOT NULL DEFAULT 0,
    scenario_id TEXT, batch_id TEXT, steps_json TEXT NOT NULL DEFAULT '[]',
    metadata TEXT NOT NULL DEFAULT '{}', created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    archetype TEXT)"""


def _fill(engine: sa.Engine) -> None:
    steps = json.dumps(_traj("x")["steps"])
    rows = [
        {"id": "t1", "start": T + 5, "steps": steps, "meta": '{"room": "r1"}'},
        {"id": "t0", "start": T + 1, "steps": json.dumps({"steps": json.loads(steps)}), "meta": "{}"},
        {"id": "bad", "start": T + 9, "steps": "[not json", "meta": "{}"},
        {"id": "yesterday", "start": T - 1, "steps": steps, "meta": "{}"},
    ]
    with engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE IF EXISTS trajectories"))
        conn.execute(sa.text(ELIZA_SCHEMA))
        for row in rows:
            conn.execute(
                sa.text(
                    "INSERT INTO trajectories (id, agent_id, start_time, end_time, steps_json, metadata,"
                    " created_at, updated_at, archetype)"
                    " VALUES (:id, 'agent', :start, :start, :steps, :meta, 'c', 'u', 'helper')"
                ),
                row,
            )


def _check_day(engine: sa.Engine) -> None:
    parsed = list(read_table(engine, "trajectories", DAY))
    assert [p.origin for p in parsed] == ["trajectories:t0", "trajectories:t1", "trajectories:bad"]
    first = parsed[0].trajectory
    assert first["trajectoryId"] == "t0" and first["agentId"] == "agent" and first["startTime"] == T + 1
    assert first["steps"][0]["llmCalls"][0]["response"] == "r"  # {"steps": [...]} unwrapped as elizaOS does
    assert first["archetype"] == "helper"  # unknown columns are kept
    assert parsed[1].trajectory["metadata"] == {"room": "r1"}
    assert parsed[2].trajectory is None and parsed[2].reason.startswith("steps_json: invalid JSON")


def test_sqlite_source_reads_only_its_day(tmp_path: Path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'eliza.db'}")
    _fill(engine)
    _check_day(engine)


def test_postgresql_source_reads_only_its_day(postgres) -> None:
    engine = sa.create_engine(postgres.url)
    _fill(engine)
    _check_day(engine)
    engine.dispose()


def test_unreachable_database_is_a_clear_error() -> None:
    engine = sa.create_engine("postgresql+psycopg://u:hunter2secret@127.0.0.1:1/db")
    with pytest.raises(SourceUnavailable) as err:
        list(read_table(engine, "trajectories", DAY))
    assert "unavailable" in str(err.value) and "hunter2secret" not in str(err.value)


def test_a_crash_mid_write_leaves_no_partial_file_and_keeps_the_old_one(tmp_path: Path) -> None:
    export = tmp_path / "in.jsonl"
    export.write_text("".join(json.dumps(_traj(f"t{i}")) + "\n" for i in range(3000)))
    out = tmp_path / "out"
    ingest_records(read_files(export, DAY), out / "t.parquet", out / "q.jsonl", "test")
    before = (out / "t.parquet").read_bytes()

    def exploding():
        for n, record in enumerate(read_files(export, DAY)):
            if n == 2500:
                raise RuntimeError("disk on fire")
            yield record

    with pytest.raises(RuntimeError):
        ingest_records(exploding(), out / "t.parquet", out / "q.jsonl", "test")
    assert (out / "t.parquet").read_bytes() == before
    assert sorted(p.name for p in out.iterdir()) == ["q.jsonl", "t.manifest.json", "t.parquet"]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_task_runs_write_trajectories_the_database_source_reads_back(
    backend, tmp_path: Path, request
) -> None:
    from resources.sources import DatabaseTrajectorySource

    url = (
        f"sqlite:///{tmp_path / 'eliza.db'}"
        if backend == "sqlite"
        else request.getfixturevalue("postgres").url
    )
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE IF EXISTS trajectories"))
        conn.execute(sa.text(ELIZA_SCHEMA))
    engine.dispose()
    source = DatabaseTrajectorySource(url=url)
    trajectory = {**_traj("task-run-1"), "startTime": T + 7, "source": "task:reply-to-dana"}
    source.write(trajectory)
    source.write(trajectory)  # written again (a retried step): replaced, not duplicated
    [parsed] = list(source.read_day(DAY))
    assert parsed.reason is None
    assert (
        parsed.trajectory["trajectoryId"] == "task-run-1"
        and parsed.trajectory["steps"] == trajectory["steps"]
    )
    assert parsed.trajectory["source"] == "task:reply-to-dana"


def test_stored_rows_keep_what_each_trajectory_says() -> None:
    """The stored day's typed columns come from the trajectory (an agent that is not a string is
    missing, LLM calls counted over the steps) and `raw` is its JSON as it came, line end removed."""
    from training_pipeline.trajectories.rows import SCHEMA, StoreRows

    rows = StoreRows()
    rows.add(
        {"trajectoryId": "t-é", "agentId": "a", "startTime": 1.5e12, "steps": []}, "f:1", '{"x":"é🤖"}\n'
    )
    rows.add({"trajectoryId": "t2", "agentId": 7, "startTime": 2, "steps": [{"llmCalls": [{}, {}]}]}, "f:2")
    for index in range(3, 20):
        agent = None if index % 3 else f"a{index}"
        rows.add({"trajectoryId": f"t{index}", "agentId": agent, "startTime": index}, f"f:{index}", b"{}\n")
    batch = rows.take()
    batch.validate(full=True)
    assert batch.schema == SCHEMA and batch.num_rows == 19
    assert batch.column("agent_id").to_pylist()[:4] == ["a", None, "a3", None]
    assert batch.column("llm_call_count").to_pylist()[:3] == [0, 2, 0]
    assert batch.column("raw")[0].as_py() == '{"x":"é🤖"}' and batch.column("raw")[2].as_py() == "{}"
    assert json.loads(batch.column("raw")[1].as_py())["agentId"] == 7
    assert rows.take().num_rows == 0 and len(rows) == 0


def test_a_stored_days_profile_counts_agents_calls_and_times(tmp_path: Path) -> None:
    from training_pipeline.trajectories.parquet import _BATCH_ROWS, TrajectoryParquetWriter

    store = tmp_path / "day.parquet"
    with TrajectoryParquetWriter(store) as writer:
        assert writer.profile.summary()["calls_per_trajectory"] is None  # nothing written yet
        for index, agent in enumerate(["b", None, "a", "b", None, "b"]):
            calls = [{"llmCalls": [{}] * index}]
            writer.add(
                {"trajectoryId": f"t{index}", "agentId": agent, "startTime": 1.7e12 + index, "steps": calls},
                "o",
            )
            if index == 2:  # a profile over several batches
                writer._flush()
    assert writer.profile.llm_calls == 15 and writer.count == 6 < _BATCH_ROWS
    assert writer.profile.summary() == {
        "agents": {"b": 3, "(none)": 2, "a": 1},  # most first, then by name
        "calls_per_trajectory": {"mean": 2.5, "max": 5},
        "first_start": "2023-11-14T22:13:20+00:00",
        "last_start": "2023-11-14T22:13:20.005000+00:00",
    }


def test_the_days_pass_and_its_profile_do_not_load_pandas(tmp_path: Path) -> None:
    """Every worker of the pool builds batches, and every day's run passes and profiles its day:
    where pandas is installed, importing it (as Arrow's conversions of lists do) would cost each half a
    second and 40 MB. Nor `pyarrow.compute` (75 ms): the profile is gathered as the batches are
    written."""
    code = f"""
import sys
from datetime import date
from pathlib import Path
from training_pipeline.datasets.daily import DayFiles, build_day
from training_pipeline.intake.filtered import FilteredDay
from training_pipeline.privacy.filter import PrivacyFilter
from training_pipeline.samples import write_long_sample
from training_pipeline.trajectories.files import unparsed_files
out = Path({str(tmp_path)!r})
write_long_sample(out / "2026-11-01.jsonl", 30, target_bytes=2000)
records = lambda: unparsed_files(out / "2026-11-01.jsonl", date(2026, 11, 1))
filtered = FilteredDay(out / "f.parquet", out / "r.json")
files = DayFiles(out / "t.parquet", out / "q.jsonl", filtered, out / "ds")
built = build_day(files, lambda: PrivacyFilter("strict"), records=records, scanner_secrets=())
manifest = built.manifest
assert manifest.profile["calls_per_trajectory"]
print('pandas' in sys.modules, 'pyarrow.compute' in sys.modules)
"""
    assert fresh_python(code).strip() == "False False"


def test_a_days_pass_opens_only_the_files_that_can_hold_it_and_keeps_every_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The day index skips a file only when none of its records can be the day's: every way a file's
    bytes could say a start time the parser reads differently makes it read for every day."""
    import os

    from training_pipeline.trajectories import files as files_module
    from training_pipeline.trajectories.models import start_day

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "exports"
    folder.mkdir()
    day_ms = 86_400_000

    def lines(*records: str) -> str:
        return "".join(record + "\n" for record in records)

    for offset in range(5):  # a daily export per day, one record of the day before among them
        records = [json.dumps(_traj(f"d{offset}-{n}", T + offset * day_ms + n)) for n in range(3)]
        records.append(json.dumps(_traj(f"late-{offset}", T + offset * day_ms - 5)))
        (folder / f"export-{offset}.jsonl").write_text(lines(*records))
    hostile = {
        # a start time the parser reads but the byte scan would misread: read for every day
        "exponent.jsonl": '{"trajectoryId": "e", "agentId": "a", "startTime": 1.7956512e12, "steps": []}',
        "escaped-key.jsonl": '{"trajectoryId": "k", "agentId": "a", "start\\u0054ime": '
        + f'{T + 3 * day_ms}, "steps": []}}',
        # a fraction that rounds into the next day
        "fraction.jsonl": '{"trajectoryId": "f", "agentId": "a", "startTime": '
        + f'{T + 2 * day_ms - 1}.9999996, "steps": []}}',
        # no start time: the file's fallback day (its mtime's, here)
        "undated.jsonl": '{"trajectoryId": "u", "agentId": "a", "steps": []}',
        "string.jsonl": '{"trajectoryId": "s", "agentId": "a", "startTime": "2026-11-26", "steps": []}',
        "array.json": json.dumps([_traj("a1", T + 4 * day_ms), _traj("a2", T + day_ms)]),
    }
    for name, text in hostile.items():
        (folder / name).write_text(text + ("\n" if name.endswith(".jsonl") else ""))
    yesterday = (T + 2 * day_ms) / 1000
    for name in ("undated.jsonl", "string.jsonl"):
        os.utime(folder / name, (yesterday, yesterday))

    def every_day_read_in_full(day: date) -> list[str]:
        found = []
        for record in read_files(folder):
            fallback = files_module.fallback_day(Path(record.origin.split(":")[0]))
            if (record.day or fallback) == day:
                found.append(record.origin)
        return sorted(found)

    days = [start_day(T + offset * day_ms) for offset in range(-1, 7)]
    opened: list[str] = []
    real_spans = files_module.line_spans
    monkeypatch.setattr(
        files_module,
        "line_spans",
        lambda file, *a, **k: opened.append(file.name) or real_spans(file, *a, **k),
    )
    with monkeypatch.context() as unindexed:
        unindexed.setattr(files_module.DayIndex, "may_hold", lambda *_: True)
        expected = {day: every_day_read_in_full(day) for day in days}
    for _ in range(2):  # scanned, then remembered
        for day in days:
            assert sorted(r.origin for r in read_files(folder, day)) == expected[day], day
    assert sum(len(origins) for origins in expected.values()) == 5 * 4 + 7  # every record, once
    # the third day opened its own export, the next day's (its late record), and what the scan
    # cannot tell; not the other days' exports
    opened.clear()
    list(read_files(folder, start_day(T + 2 * day_ms)))
    assert {"export-2.jsonl", "export-3.jsonl", "exponent.jsonl", "escaped-key.jsonl"} <= set(opened)
    assert not {"export-0.jsonl", "export-4.jsonl"} & set(opened)
    # a file that changes is scanned again
    with (folder / "export-0.jsonl").open("a") as handle:
        handle.write(json.dumps(_traj("appended", T + 4 * day_ms + 7)) + "\n")
    assert "export-0.jsonl" in {
        r.origin.split(":")[0].rsplit("/", 1)[-1] for r in read_files(folder, days[5])
    }
