"""The instances' storage (`dagster.yaml`, `deploy/dagster.yaml`; resources/instance_storage/): what it
writes is Dagster's, read back by Dagster's own classes; it opens few connections; the UI still follows a
live run; it never writes through a handle on a deleted file, nor one inherited over fork."""

from __future__ import annotations

import contextlib
import os
import select
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg2
import pytest
import sqlalchemy as sa
from dagster import (
    AssetCheckKey,
    AssetCheckSeverity,
    AssetKey,
    AssetMaterialization,
    DagsterInstance,
    Definitions,
    define_asset_job,
    materialize,
)
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluation,
    AssetCheckEvaluationPlanned,
    AssetCheckEvaluationTargetMaterializationData,
)
from dagster._core.event_api import AssetRecordsFilter, EventLogRecord, EventRecordsResult
from dagster._core.events import (
    AssetMaterializationPlannedData,
    DagsterEvent,
    DagsterEventType,
    EngineEventData,
    StepMaterializationData,
    StepSuccessData,
)
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus
from dagster._core.storage.event_log import SqlEventLogStorage
from dagster._core.storage.event_log.sqlite import sqlite_event_log
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    INDEX_SHARD_NAME,
    SqliteEventLogStorage,
)
from dagster._core.storage.runs import SqlRunStorage
from dagster._serdes import deserialize_value
from dagster_postgres.event_log.event_log import PostgresEventLogStorage

from resources.defaults import default_resources
from resources.instance_storage.planned import PLANNED
from resources.instance_storage.sqlite import OPEN_FILES, KeptOpenEventLogStorage, KeptOpenSqliteStorage
from tests.dagster_storage import DAGSTER_STORAGE
from tests.helpers import ASSET_CHECKS, DATASET_ASSETS, REPO
from tests.postgres_server import PostgresServer
from training_pipeline.settings import load_settings


def engine_event(instance: DagsterInstance, run_id: str, message: str) -> None:
    instance.report_engine_event(message, job_name="job", run_id=run_id)


def connections_opened(monkeypatch: pytest.MonkeyPatch, driver: Any) -> list[object]:
    """The connections the database driver opens from now on (one entry each)."""
    opened: list[object] = []
    connect = driver.connect

    def counting(*args: Any, **kwargs: Any) -> Any:
        opened.append(args)
        return connect(*args, **kwargs)

    monkeypatch.setattr(driver, "connect", counting)
    return opened


@contextlib.contextmanager
def statements_sent(engine: sa.Engine) -> Iterator[list[str]]:
    """The statements `engine` sends while the block runs."""
    statements: list[str] = []

    def sent(connection: Any, cursor: Any, statement: str, *rest: Any) -> None:
        statements.append(statement)

    sa.event.listen(engine, "before_cursor_execute", sent)
    try:
        yield statements
    finally:
        sa.event.remove(engine, "before_cursor_execute", sent)


def home_of(kind: str, request: pytest.FixtureRequest) -> Path:
    """The `DAGSTER_HOME` of the instance a `dagster.yaml` names: `sqlite` the README's, `postgres`
    the production one (`deploy/dagster.yaml`)."""
    return Path(request.getfixturevalue("home" if kind == "sqlite" else "production_home"))


def dagsters_instance(kind: str, folder: Path) -> DagsterInstance:
    """An instance on the same databases through Dagster's own storage, to read back what ours wrote."""
    home = folder / "reader"
    home.mkdir()
    (home / "dagster.yaml").write_text(DAGSTER_STORAGE[kind])
    return DagsterInstance.from_config(str(home))


def messages(storage: SqliteEventLogStorage, run_id: str) -> list[str]:
    return [entry.message for entry in storage.get_logs_for_run(run_id)]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_the_instances_keep_connections_open_and_dagster_reads_what_they_wrote(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = home_of(kind, request)
    instance = DagsterInstance.from_config(str(folder))
    resources = default_resources(load_settings({"TRAINING_PIPELINE_DATA": str(tmp_path / "data")}))
    graph = DATASET_ASSETS + ASSET_CHECKS
    assert materialize(graph, partition_key="2026-11-22", resources=resources, instance=instance).success
    with monkeypatch.context() as patch:
        opened = connections_opened(patch, sqlite3 if kind == "sqlite" else psycopg2)
        result = materialize(graph, partition_key="2026-11-23", resources=resources, instance=instance)
    assert result.success
    events = instance.all_logs(result.run_id)
    # Dagster's storages open a connection per statement: several per event
    assert len(events) > 60 and len(opened) < 15, (len(events), len(opened))

    reader = dagsters_instance(kind, tmp_path)
    assert type(reader.event_log_storage).__name__ in {"SqliteEventLogStorage", "PostgresEventLogStorage"}
    assert [e.dagster_event_type for e in reader.all_logs(result.run_id)] == [
        e.dagster_event_type for e in events
    ]
    assert reader.get_run_by_id(result.run_id).is_success
    assert reader.get_materialized_partitions(AssetKey("response")) == {"2026-11-22", "2026-11-23"}
    checks = reader.event_log_storage.get_asset_check_execution_history(
        next(iter(ASSET_CHECKS[0].check_keys)), limit=10
    )
    assert len(checks) == 2
    reader.dispose()
    instance.dispose()


def test_instances_a_process_makes_one_after_another_share_its_postgresql_connections(
    production_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Celery worker makes an instance per step and never disposes of it."""
    first = DagsterInstance.from_config(str(production_home))
    engine_event(first, "8d4e4d0e-0000-4000-8000-000000000004", "first")  # the process's connections
    assert first.get_run_records() == []
    opened = connections_opened(monkeypatch, psycopg2)
    for step in range(5):
        instance = DagsterInstance.from_config(str(production_home))
        made = len(opened)  # Dagster's storages check their tables over connections of their own
        engine_event(instance, "8d4e4d0e-0000-4000-8000-000000000004", f"step {step}")
        assert instance.get_run_records() == []
        assert len(opened) == made  # the statements go over the process's open connections
    storage = instance.event_log_storage
    assert [entry.message for entry in storage.get_logs_for_run("8d4e4d0e-0000-4000-8000-000000000004")] == [
        "first",
        *(f"step {step}" for step in range(5)),
    ]


def test_a_forked_child_talks_to_postgresql_over_its_own_connection(production_home: Path) -> None:
    instance = DagsterInstance.from_config(str(production_home))
    engine = instance.event_log_storage._engine  # type: ignore[attr-defined]

    def backend() -> int:
        with engine.connect() as connection:
            return int(connection.exec_driver_sql("SELECT pg_backend_pid()").scalar_one())

    parents = backend()
    assert backend() == parents  # kept open
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        try:
            os.write(write, str(backend()).encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    childs = int(os.read(read, 32))
    assert childs != parents
    assert backend() == parents  # the parent's connection was left alone
    instance.dispose()


def test_a_postgresql_event_is_one_round_trip_with_its_notification_and_tables_are_asked_once(
    production_home: Path,
) -> None:
    instance = DagsterInstance.from_config(str(production_home))
    storage = instance.event_log_storage
    engine = storage._engine  # type: ignore[attr-defined]
    run_id = "8d4e4d0e-0000-4000-8000-000000000006"
    listening = psycopg2.connect(
        engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    )
    listening.autocommit = True
    listening.cursor().execute("LISTEN run_events")  # as the webservers of older releases do
    with statements_sent(engine) as statements:
        engine_event(instance, run_id, "one")
    assert len(statements) == 1  # Dagster's storage sends two: the insert, then its NOTIFY
    with statements_sent(engine) as statements:
        assert all(storage.has_table("asset_check_executions") for _ in range(3))
    assert len(statements) <= 1
    with statements_sent(engine) as statements:
        assert not any(storage.has_table("no_such_table") for _ in range(2))
    assert len(statements) == 2  # a missing table is asked about again: a migration may add it

    select.select([listening], [], [], 10)
    listening.poll()
    stored = storage.get_records_for_run(run_id).records
    assert [entry.event_log_entry.message for entry in stored] == ["one"]
    assert [notice.payload for notice in listening.notifies] == [f"{run_id}_{stored[0].storage_id}"]
    listening.close()
    instance.dispose()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_check_result_updates_its_planned_row_as_dagster_does_or_adds_one(
    kind: str, request: pytest.FixtureRequest
) -> None:
    """On PostgreSQL in one statement with the result's event, on SQLite in the index's transaction
    that copies the event; a result whose row was never planned gets one, as Dagster inserts it."""
    folder = home_of(kind, request)
    instance = DagsterInstance.from_config(str(folder))
    storage = instance.event_log_storage
    key = AssetCheckKey(AssetKey("a"), "sound")
    planned_run, unplanned_run = (f"8d4e4d0e-0000-4000-8000-00000000003{n}" for n in (1, 2))
    planned = AssetCheckEvaluationPlanned(asset_key=key.asset_key, check_name=key.name)
    storage.store_event(
        _entry(planned_run, "planned", DagsterEventType.ASSET_CHECK_EVALUATION_PLANNED, planned)
    )
    target = AssetCheckEvaluationTargetMaterializationData(storage_id=7, run_id=planned_run, timestamp=1.0)
    results = {planned_run: True, unplanned_run: False}
    for run_id, passed in results.items():
        evaluation = AssetCheckEvaluation(
            asset_key=key.asset_key,
            check_name=key.name,
            passed=passed,
            metadata={},
            target_materialization_data=target,
            severity=AssetCheckSeverity.ERROR,
        )
        result = _entry(run_id, "done", DagsterEventType.ASSET_CHECK_EVALUATION, evaluation)
        if kind == "sqlite":
            storage.store_event(result)
            continue
        with statements_sent(storage._engine) as statements:  # type: ignore[attr-defined]
            storage.store_event(result)
        assert len(statements) == (1 if run_id == planned_run else 3)  # no row to update: Dagster's insert

    reader = dagsters_instance(kind, folder.parent).event_log_storage
    history = reader.get_asset_check_execution_history(key, limit=5)
    assert [(record.run_id, record.status) for record in history] == [
        (unplanned_run, AssetCheckExecutionRecordStatus.FAILED),
        (planned_run, AssetCheckExecutionRecordStatus.SUCCEEDED),
    ]
    logged = [reader.get_records_for_run(run_id).records[-1].event_log_entry for run_id in results]
    assert [record.event for record in history] == logged[::-1]
    assert reader.get_latest_asset_check_execution_by_key([key])[key].run_id == unplanned_run
    # each row points at its result's event where the asset events are (on SQLite the index's copy)
    results_ids = "SELECT run_id, id FROM event_logs WHERE dagster_event_type = 'ASSET_CHECK_EVALUATION'"
    pointers = (
        "SELECT run_id, evaluation_event_storage_id, materialization_event_storage_id"
        " FROM asset_check_executions ORDER BY id"
    )
    if kind == "sqlite":
        index = storage.path_for_shard(INDEX_SHARD_NAME)  # type: ignore[attr-defined]
        with contextlib.closing(sqlite3.connect(index)) as connection:
            ids, rows = (connection.execute(query).fetchall() for query in (results_ids, pointers))
    else:
        with storage._engine.connect() as connection:  # type: ignore[attr-defined]
            ids, rows = (connection.execute(sa.text(query)).all() for query in (results_ids, pointers))
    assert [tuple(row) for row in rows] == [(run_id, dict(ids)[run_id], 7) for run_id in results]
    reader.dispose()
    instance.dispose()


def test_a_postgresql_asset_event_writes_the_index_rows_dagster_writes(production_home: Path) -> None:
    """The asset's row and its indexed tags, written as one statement of text: what Dagster's storage
    writes for the same events (stored here under another asset's name)."""
    instance = DagsterInstance.from_config(str(production_home))
    storage = instance.event_log_storage
    run_id = "8d4e4d0e-0000-4000-8000-000000000051"
    tags = {"dagster/data_version": "v1", "dagster/partition/day": "p1", "not-indexed": "x"}
    stored: dict[str, list[int]] = {}
    for name, store in (
        ("ours", type(storage).store_event),
        ("dagster's", PostgresEventLogStorage.store_event),
    ):
        key = AssetKey(name)
        planned = AssetMaterializationPlannedData(asset_key=key, partition="p1")
        done = StepMaterializationData(AssetMaterialization(key, partition="p1", tags=tags))
        for number, (kind, data) in enumerate(
            (
                (DagsterEventType.ASSET_MATERIALIZATION_PLANNED, planned),
                (DagsterEventType.ASSET_MATERIALIZATION, done),
            )
        ):
            store(storage, _entry(run_id, name, kind, data)._replace(timestamp=1_700_000_000.5 + number))
        stored[name] = [record.storage_id for record in storage.get_records_for_run(run_id).records[-2:]]

    with storage._engine.connect() as connection:  # type: ignore[attr-defined]
        assets = {
            AssetKey.from_db_string(row[0]).path[0]: row[1:]
            for row in connection.execute(
                sa.text(
                    "SELECT asset_key, last_materialization, last_run_id, asset_details,"
                    " wipe_timestamp, last_materialization_timestamp, tags, cached_status_data"
                    " FROM asset_keys"
                )
            )
        }
        indexed = connection.execute(
            sa.text(
                "SELECT event_id, asset_key, key, value, event_timestamp FROM asset_event_tags ORDER BY id"
            )
        ).all()
    ours, theirs = assets["ours"], assets["dagster's"]
    assert ours[1:] == theirs[1:] and ours[1] == run_id
    latest = {name: deserialize_value(assets[name][0], EventLogRecord) for name in stored}
    assert [latest[name].storage_id for name in stored] == [ids[1] for ids in stored.values()]
    assert latest["ours"].event_log_entry.user_message == "ours"
    indexed_tags = [("dagster/data_version", "v1"), ("dagster/partition/day", "p1")]
    assert [row[2:4] for row in indexed] == indexed_tags * 2 and len({row[4] for row in indexed}) == 1
    assert [(row[0], AssetKey.from_db_string(row[1]).path[0]) for row in indexed] == [
        (ids[1], name) for name, ids in stored.items() for _ in indexed_tags
    ]
    instance.dispose()


def test_a_postgresql_connection_the_server_closed_is_replaced_and_a_live_one_used_without_a_ping(
    production_home: Path, postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    instance = DagsterInstance.from_config(str(production_home))
    run_id = "8d4e4d0e-0000-4000-8000-000000000005"
    engine = instance.event_log_storage._engine  # type: ignore[attr-defined]
    pings: list[object] = []
    ping = engine.dialect.do_ping
    monkeypatch.setattr(
        engine.dialect, "do_ping", lambda connection: pings.append(connection) or ping(connection)
    )
    for number in range(5):
        engine_event(instance, run_id, f"event {number}")
    assert pings == []  # a round trip before every statement is what this storage saves

    with engine.connect() as connection:  # the server ends it, as a restart or an idle timeout does
        backend = connection.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
    admin = sa.create_engine(postgres.url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": backend})
        while connection.execute(
            sa.text("SELECT count(*) FROM pg_stat_activity WHERE pid = :pid"), {"pid": backend}
        ).scalar_one():
            time.sleep(0.01)
    admin.dispose()
    engine_event(instance, run_id, "after the server closed it")
    assert pings  # looked at before use, found gone and replaced
    assert messages(instance.event_log_storage, run_id) == [  # type: ignore[arg-type]
        *(f"event {number}" for number in range(5)),
        "after the server closed it",
    ]
    instance.dispose()


def test_the_ui_sees_a_live_run_s_events_while_its_process_keeps_writing(home: Path) -> None:
    """The UI follows a run by watching its event file change, a write to it marks it changed (not
    only the run's process ending, when its WAL is checkpointed), and reading it does not (the UI
    would read it again and again)."""
    instance = DagsterInstance.from_config(str(home))
    run_id = "8d4e4d0e-0000-4000-8000-000000000001"
    engine_event(instance, run_id, "created")
    seen: list[str] = []
    arrived = threading.Event()

    def watched(entry: object, cursor: str) -> None:
        seen.append(entry.message)  # type: ignore[attr-defined]
        if entry.message == "third":  # type: ignore[attr-defined]
            arrived.set()

    instance.watch_event_logs(run_id, None, watched)
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from dagster import DagsterInstance\n"
            "instance = DagsterInstance.from_config(sys.argv[1])\n"
            "for message in ('first', 'second', 'third'):\n"
            "    instance.report_engine_event(message, job_name='job', run_id=sys.argv[2])\n"
            "print('written', flush=True)\n"
            "sys.stdin.read()\n",  # alive, connections open, until the test is done
            str(home),
            run_id,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "written\n"
        assert arrived.wait(10), seen
        assert seen[-3:] == ["first", "second", "third"]
        run_file = home / "history" / "runs" / f"{run_id}.db"
        changed = run_file.stat().st_mtime_ns
        assert len(instance.all_logs(run_id)) == 4
        assert run_file.stat().st_mtime_ns == changed
    finally:
        writer.communicate("", timeout=30)
        instance.dispose()


def test_a_run_file_deleted_and_remade_elsewhere_is_reopened_not_written_through_the_old_handle(
    tmp_path: Path,
) -> None:
    folder = str(tmp_path / "runs")
    run_id = "8d4e4d0e-0000-4000-8000-000000000002"
    ours = DagsterInstance.ephemeral()  # registers the storages below with an instance
    this_process, another = KeptOpenEventLogStorage(folder), KeptOpenEventLogStorage(folder)
    for storage in (this_process, another):
        storage.register_instance(ours)
    this_process.store_event(_entry(run_id, "before"))
    another.wipe()  # deletes the run's file; its next event makes a new one
    another.store_event(_entry(run_id, "remade"))
    this_process.store_event(_entry(run_id, "after"))
    assert messages(SqliteEventLogStorage(folder), run_id) == ["remade", "after"]


def test_a_new_run_file_is_a_copy_of_the_one_dagster_makes_not_set_up_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ours_folder, dagsters_folder = str(tmp_path / "ours"), str(tmp_path / "dagster's")
    instance = DagsterInstance.ephemeral()
    ours, dagsters = KeptOpenEventLogStorage(ours_folder), SqliteEventLogStorage(dagsters_folder)
    for storage in (ours, dagsters):
        storage.register_instance(instance)
    run_ids = [f"8d4e4d0e-0000-4000-8000-00000000001{number}" for number in range(3)]
    stamped: list[object] = []
    stamp = sqlite_event_log.stamp_alembic_rev
    monkeypatch.setattr(
        sqlite_event_log, "stamp_alembic_rev", lambda *a, **k: stamped.append(a) or stamp(*a, **k)
    )
    for run_id in run_ids:
        ours.store_event(_entry(run_id, run_id))
    assert len(stamped) == 1  # Dagster's set-up ran once, for the folder's template
    dagsters.store_event(_entry(run_ids[0], "dagster's"))
    made_by_dagster = _schema(dagsters.path_for_shard(run_ids[0]))
    assert made_by_dagster[2] == "wal"
    for run_id in run_ids:
        assert _schema(ours.path_for_shard(run_id)) == made_by_dagster
    reader = SqliteEventLogStorage(ours_folder)
    assert sorted(reader.get_all_run_ids()) == run_ids  # the template is no run
    assert [messages(reader, run_id) for run_id in run_ids] == [[run_id] for run_id in run_ids]
    assert not [name for name in os.listdir(ours_folder) if name.endswith(".new")]


def test_a_run_file_is_synced_to_disk_when_a_step_or_the_run_ends_not_at_each_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's file commits without syncing (SQLite's own `fsync`s follow `synchronous`), and its WAL
    goes to disk when a step or the run ends; the index keeps every commit synced."""
    storage = KeptOpenEventLogStorage(str(tmp_path / "runs"))
    storage.register_instance(DagsterInstance.ephemeral())
    run_id = "8d4e4d0e-0000-4000-8000-000000000021"
    synced: list[str] = []  # the write-ahead logs synced (a new run's file is synced once it is made)
    fsync = os.fsync

    def syncing(descriptor: int) -> None:
        if (path := os.readlink(f"/proc/self/fd/{descriptor}")).endswith("-wal"):
            synced.append(path)
        fsync(descriptor)

    monkeypatch.setattr(os, "fsync", syncing)
    for message in ("started", "output", "materialised"):
        storage.store_event(_entry(run_id, message))
    assert synced == []
    storage.store_event(_entry(run_id, "step done", DagsterEventType.STEP_SUCCESS, StepSuccessData(1.0)))
    assert synced == [storage.path_for_shard(run_id) + "-wal"]
    storage.store_event(_entry(run_id, "run done", DagsterEventType.RUN_SUCCESS, None))
    assert len(synced) == 2
    for shard, setting in ((run_id, 1), (INDEX_SHARD_NAME, 2)):  # NORMAL, FULL
        path, url = storage.path_for_shard(shard), storage.conn_string_for_shard(shard)
        with storage._databases.engine(path, url).connect() as connection:
            assert connection.exec_driver_sql("PRAGMA synchronous").scalar() == setting
    assert messages(SqliteEventLogStorage(str(tmp_path / "runs")), run_id)[-2:] == ["step done", "run done"]


def test_a_sqlite_event_is_written_as_dagster_s_storage_writes_it(tmp_path: Path) -> None:
    """Rows written as SQLite text, not SQLAlchemy constructs: the same rows (timestamps as SQLAlchemy
    formats them) in the run's file and the index, the asset's row (inserted, then updated) and its
    indexed tags."""
    instance = DagsterInstance.ephemeral()
    ours, dagsters = (KeptOpenEventLogStorage(str(tmp_path / name)) for name in ("ours", "dagster's"))
    for storage in (ours, dagsters):
        storage.register_instance(instance)
    run_id = "8d4e4d0e-0000-4000-8000-000000000041"
    key = AssetKey("a")
    materialised = StepMaterializationData(
        AssetMaterialization(
            key,
            partition="p1",
            tags={"dagster/data_version": "v1", "dagster/partition/day": "p1", "not-indexed": "x"},
        )
    )
    entries = [
        _entry(run_id, "engine"),
        _entry(
            run_id,
            "planned",
            DagsterEventType.ASSET_MATERIALIZATION_PLANNED,
            AssetMaterializationPlannedData(asset_key=key, partition="p1"),
        ),
        _entry(run_id, "materialised", DagsterEventType.ASSET_MATERIALIZATION, materialised),
        _entry(run_id, "again", DagsterEventType.ASSET_MATERIALIZATION, materialised),
        _entry(run_id, "done", DagsterEventType.RUN_SUCCESS, None),
    ]
    for number, entry in enumerate(entries):
        stamped = entry._replace(timestamp=1_700_000_000.0 + number * 0.25)  # .0: no microseconds to drop
        ours.store_event(stamped)
        SqliteEventLogStorage.store_event(dagsters, stamped)

    def rows(storage: KeptOpenEventLogStorage, shard: str, query: str) -> list[tuple[Any, ...]]:
        with contextlib.closing(sqlite3.connect(storage.path_for_shard(shard))) as connection:
            return connection.execute(query).fetchall()

    events = (
        "SELECT run_id, event, dagster_event_type, timestamp, step_key, asset_key, partition"
        " FROM event_logs ORDER BY id"
    )
    assets = (
        "SELECT asset_key, last_materialization, last_run_id, asset_details, wipe_timestamp,"
        " last_materialization_timestamp, tags, cached_status_data FROM asset_keys"
    )
    tags = "SELECT event_id, asset_key, key, value, event_timestamp FROM asset_event_tags ORDER BY id"
    for shard, query, count in (
        (run_id, events, 5),
        (INDEX_SHARD_NAME, events, 4),
        (INDEX_SHARD_NAME, assets, 1),
        (INDEX_SHARD_NAME, tags, 4),
    ):
        written = rows(ours, shard, query)
        assert len(written) == count and written == rows(dagsters, shard, query), query
    assert rows(ours, run_id, events)[0][3] == "2023-11-14 22:13:20.000000"
    assert rows(ours, INDEX_SHARD_NAME, assets)[0][5] == "2023-11-14 22:13:20.750000"  # the second


def test_the_sqlite_index_is_asked_once_about_a_table_it_has(tmp_path: Path) -> None:
    storage = KeptOpenEventLogStorage(str(tmp_path / "runs"))
    storage.register_instance(DagsterInstance.ephemeral())
    index = storage._databases.engine(
        storage.path_for_shard(INDEX_SHARD_NAME), storage.conn_string_for_shard(INDEX_SHARD_NAME)
    )
    with statements_sent(index) as statements:
        assert all(storage.has_table("asset_check_executions") for _ in range(3))
    assert len(statements) <= 1
    with statements_sent(index) as statements:
        assert not any(storage.has_table("no_such_table") for _ in range(2))
    assert len(statements) >= 2  # a missing table is asked about again: a migration may add it


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_run_s_planned_events_are_stored_together_with_the_rows_dagster_stores_one_by_one(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = home_of(kind, request)
    instance = DagsterInstance.from_config(str(folder))
    resources = default_resources(load_settings({"TRAINING_PIPELINE_DATA": str(tmp_path / "data")}))
    job = Definitions(
        assets=DATASET_ASSETS, asset_checks=ASSET_CHECKS, jobs=[define_asset_job("day")], resources=resources
    ).resolve_job_def("day")
    storage = type(instance.event_log_storage)
    batches: list[int] = []
    store_batch = storage.store_event_batch
    monkeypatch.setattr(
        storage,
        "store_event_batch",
        lambda self, events: batches.append(len(events)) or store_batch(self, events),
    )
    day = "2026-11-23"
    monkeypatch.setenv("DAGSTER_EVENT_BATCH_SIZE", "0")  # one by one: what Dagster's storages do
    runs = [instance.create_run_for_job(job, tags={"dagster/partition": day}).run_id]
    instance.dispose()
    monkeypatch.delenv("DAGSTER_EVENT_BATCH_SIZE")
    instance = DagsterInstance.from_config(str(folder))  # its storage sets what the deployment has not
    runs.append(instance.create_run_for_job(job, tags={"dagster/partition": day}).run_id)
    assets, checks = job.asset_layer.selected_asset_keys, job.asset_layer.asset_graph.asset_check_keys
    assert batches == [len(assets) + len(checks)] == [24]

    reader = dagsters_instance(kind, tmp_path).event_log_storage

    def planned(run_id: str) -> list[tuple[str, str, str]]:
        return sorted(
            (
                entry.dagster_event_type,
                entry.dagster_event.message,
                repr(entry.dagster_event.event_specific_data),
            )
            for entry in reader.get_logs_for_run(run_id)
            if entry.dagster_event_type in PLANNED
        )

    assert len(planned(runs[1])) == 24 and planned(runs[1]) == planned(runs[0])
    for check_key in checks:
        history = reader.get_asset_check_execution_history(check_key, limit=5)
        assert [(record.run_id, record.status, record.partition) for record in history] == [
            (run_id, AssetCheckExecutionRecordStatus.PLANNED, day) for run_id in reversed(runs)
        ]
    for asset_key in assets:
        latest = reader.get_latest_planned_materialization_info(asset_key, day)
        assert latest is not None and latest.run_id == runs[1]
        assert reader.get_asset_records([asset_key])[0].asset_entry.last_run_id == runs[1]
    reader.dispose()
    instance.dispose()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_the_latest_materialisation_of_a_partition_is_dagster_s_answer_in_one_query(
    kind: str, request: pytest.FixtureRequest
) -> None:
    folder = home_of(kind, request)
    instance = DagsterInstance.from_config(str(folder))
    storage = instance.event_log_storage

    def both(key: str, partition: str) -> EventRecordsResult:
        question = AssetRecordsFilter(AssetKey(key), [partition])
        dagsters = SqlEventLogStorage.fetch_materializations(storage, question, limit=1)
        assert storage.fetch_materializations(question, limit=1) == dagsters
        return dagsters

    for metadata in ("first", "second"):
        instance.report_runless_asset_event(
            AssetMaterialization("a", partition="p1", metadata={"which": metadata})
        )
    newest = both("a", "p1")
    assert [record.asset_materialization.metadata["which"].value for record in newest.records] == ["second"]
    assert both("a", "p2").records == [] and both("b", "p1").records == []
    if kind == "postgres":
        with statements_sent(storage._engine) as statements:  # type: ignore[attr-defined]
            storage.fetch_materializations(AssetRecordsFilter(AssetKey("a"), ["p1"]), limit=1)
        assert len(statements) == 1  # Dagster's storage sends two: the asset's details, its events
    instance.wipe_assets([AssetKey("a")])
    assert both("a", "p1").records == []  # from before the wipe: no answer
    instance.report_runless_asset_event(
        AssetMaterialization("a", partition="p1", metadata={"which": "third"})
    )
    assert [r.asset_materialization.metadata["which"].value for r in both("a", "p1").records] == ["third"]
    instance.dispose()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_the_storages_answer_dagster_s_column_questions_as_dagster_does_asking_until_yes(
    kind: str, request: pytest.FixtureRequest
) -> None:
    folder = home_of(kind, request)
    instance = DagsterInstance.from_config(str(folder))
    runs, events = instance.run_storage, instance.event_log_storage
    questions = [
        (runs, "has_run_stats_index_cols", ()),
        (runs, "has_backfill_id_column", ()),
        (runs, "has_bulk_actions_selector_cols", ()),
        (runs, "has_bulk_action_job_name_column", ()),
        (events, "has_asset_key_index_cols", ()),
        (events, "can_read_asset_status_cache", ()),
        (events, "has_asset_key_col", ("no_such_column",)),
    ]
    dagsters = {SqlRunStorage: runs, SqlEventLogStorage: events}
    for storage, question, arguments in questions:
        base = next(kind for kind, of in dagsters.items() if of is storage)
        answer = getattr(storage, question)(*arguments)
        assert answer == getattr(base, question)(storage, *arguments) == (question != "has_asset_key_col")
    with events.index_connection() as connection:  # asked inside SQLite's store of an asset event
        for column in ("last_materialization_timestamp", "no_such_column"):
            ours = events._has_asset_key_col_on_connection(connection, column)  # type: ignore[attr-defined]
            theirs = SqlEventLogStorage._has_asset_key_col_on_connection(events, connection, column)
            assert ours == theirs == (column != "no_such_column")
    if kind == "postgres":
        engines = (runs._engine, events._engine)  # type: ignore[attr-defined]
        with statements_sent(engines[0]) as of_runs, statements_sent(engines[1]) as of_events:
            for storage, question, arguments in questions:
                getattr(storage, question)(*arguments)
        assert of_runs == [] and len(of_events) == 1  # only the missing column is asked about again
    instance.dispose()


def _schema(path: str) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]], str]:
    """A SQLite file's tables and indexes, its alembic revision and its journal mode."""
    with contextlib.closing(sqlite3.connect(path)) as connection:
        return (
            sorted(connection.execute("SELECT type, name, tbl_name, sql FROM sqlite_master")),
            connection.execute("SELECT version_num FROM alembic_version").fetchall(),
            connection.execute("PRAGMA journal_mode").fetchone()[0],
        )


def test_a_forked_child_opens_its_own_connections(tmp_path: Path) -> None:
    folder = str(tmp_path / "runs")
    run_id = "8d4e4d0e-0000-4000-8000-000000000003"
    storage = KeptOpenEventLogStorage(folder)
    storage.register_instance(DagsterInstance.ephemeral())
    storage.store_event(_entry(run_id, "parent"))
    path = storage.path_for_shard(run_id)
    parents = storage._databases.engine(path, storage.conn_string_for_shard(run_id))
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        try:
            storage.store_event(_entry(run_id, "child"))
            mine = storage._databases.engine(path, storage.conn_string_for_shard(run_id))
            os.write(write, b"own" if mine is not parents else b"parent's")
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    assert os.read(read, 16) == b"own"
    storage.store_event(_entry(run_id, "parent again"))
    assert messages(SqliteEventLogStorage(folder), run_id) == ["parent", "child", "parent again"]


def test_a_process_showing_many_runs_keeps_a_bounded_number_of_files_open(home: Path) -> None:
    instance = DagsterInstance.from_config(str(home))
    storage = instance.get_ref().storage_data
    assert storage is not None and storage.class_name == KeptOpenSqliteStorage.__name__
    for number in range(3 * OPEN_FILES):
        engine_event(instance, f"8d4e4d0e-0000-4000-8000-{number:012d}", "event")
    history = home / "history" / "runs"
    run_files = {name for name in _open_paths() if Path(name).parent == history and name.endswith(".db")}
    assert 2 <= len(run_files) <= OPEN_FILES  # the index and the most recent runs
    instance.dispose()


def _open_paths() -> set[str]:
    """What this process's file descriptors point at."""
    paths = set()
    for descriptor in os.listdir("/proc/self/fd"):
        try:
            paths.add(os.readlink(f"/proc/self/fd/{descriptor}"))
        except OSError:  # closed since the listing (the listing's own)
            continue
    return paths


def _entry(
    run_id: str,
    message: str,
    kind: DagsterEventType = DagsterEventType.ENGINE_EVENT,
    data: Any = EngineEventData(),  # noqa: B008 - a NamedTuple, immutable
) -> EventLogEntry:
    event = DagsterEvent(kind.value, "job", message=message, event_specific_data=data)
    return EventLogEntry(
        error_info=None,
        level=20,
        user_message=message,
        run_id=run_id,
        timestamp=0.0,
        dagster_event=event,
        job_name="job",
    )
