"""The embedded instance's storage (`dagster.yaml`): Dagster's SQLite storage, same files and tables.

Closing the last connection to a WAL database checkpoints it, so with a connection per statement each of
a run's events cost ~17 ms on this machine (2.4 ms in memory). Here a process opens one connection per
database file and reuses it. What the per-statement connections gave for free is kept: a database file
deleted and remade (runs wiped by another process) is reopened, not written
through a stale handle; a forked child never uses its parent's connections; and a transaction that
wrote to a run's file sets the file's modification time, because the UI follows a live run by watching
that file change, and a write that stays in the WAL does not change it (its log view would otherwise
wait for the run's end). A checkpoint after each write would too, at two `fsync`s each.

A run's file commits without an `fsync` each (`synchronous=NORMAL`, SQLite's advice for WAL: a commit
survives the process crashing, and the file stays consistent whatever happens), and its WAL is synced
to disk when a step or the run ends: a power cut loses at most the events written since then (those
of the steps in flight, which died with the machine), where an `fsync` per event cost a
2,000-trajectory day's run about 0.1 s. The index (asset events, check results), the runs and the
schedules keep Dagster's `FULL`: each commit is on disk when it returns.
"""

from __future__ import annotations

import functools
import os
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime
from typing import Any

import sqlalchemy as db
from dagster._core.events import ASSET_CHECK_EVENTS, ASSET_EVENTS, DagsterEventType
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log import SqlEventLogStorageTable
from dagster._core.storage.event_log.schema import AssetEventTagsTable, AssetKeyTable
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    EVENT_TYPE_TO_PIPELINE_RUN_STATUS,
    INDEX_SHARD_NAME,
    SqliteEventLogStorage,
)
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
from dagster._core.storage.schedules.sqlite.sqlite_schedule_storage import SqliteScheduleStorage
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from dagster._core.storage.sqlite_storage import (
    DagsterSqliteStorage,
    _event_logs_directory,
    _runs_directory,
    _schedule_directory,
)
from dagster._serdes import ConfigurableClassData
from dagster.version import __version__ as DAGSTER_VERSION
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import NullPool

from resources.instance_storage.asset_index import indexed_tag_rows
from resources.instance_storage.check_results import (
    after_update,
    is_check_result,
    result_parameters,
    update_sql,
)
from resources.instance_storage.latest import LatestMaterialization
from resources.instance_storage.planned import (
    all_planned,
    hand_planned_events_over_together,
    index_planned,
)
from resources.instance_storage.tables import RunColumnsRemembered, TablesRemembered
from training_pipeline.atomic import kernel_copy

#: database files a process keeps open at once: the index and the few runs it is writing or showing
OPEN_FILES = 8
#: events after which a run's file is synced to disk: a step's end, the run's end
SYNCED_AFTER = frozenset(
    {
        DagsterEventType.STEP_SUCCESS,
        DagsterEventType.STEP_FAILURE,
        DagsterEventType.STEP_SKIPPED,
        DagsterEventType.STEP_UP_FOR_RETRY,
        DagsterEventType.RUN_SUCCESS,
        DagsterEventType.RUN_FAILURE,
        DagsterEventType.RUN_CANCELED,
    }
)


class OpenDatabases:
    """One engine per SQLite file, each pooling a connection, for the process that made them."""

    def __init__(self, limit: int = OPEN_FILES) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._pid = os.getpid()
        # path -> (engine, the file's (device, inode) when it was opened, or None before)
        self._open: OrderedDict[str, tuple[Engine, tuple[int, int] | None]] = OrderedDict()

    @contextmanager
    def connect(self, path: str, url: str, durable: bool = True) -> Iterator[Connection]:
        engine = self.engine(path, url, durable)
        with engine.connect() as connection:
            with self._lock:
                entry = self._open.get(path)
                if entry is not None and entry[0] is engine and entry[1] is None:
                    self._open[path] = (engine, _identity(path))
            yield connection

    def close(self) -> None:
        """Close every connection: before the files are deleted, or at the end."""
        with self._lock:
            for engine, _ in self._open.values():
                engine.dispose()
            self._open.clear()

    def engine(self, path: str, url: str, durable: bool = True) -> Engine:
        """The engine of `path` (also for Dagster code that takes an engine: its schema set-up); not
        `durable`: its commits are not synced to disk one by one (`synchronous=NORMAL`)."""
        with self._lock:
            if os.getpid() != self._pid:
                # a forked child: the parent's connections are the parent's; drop them unclosed
                for engine, _ in self._open.values():
                    engine.dispose(close=False)
                self._open.clear()
                self._pid = os.getpid()
            entry = self._open.pop(path, None)
            if entry is not None and entry[1] is not None and entry[1] != _identity(path):
                entry[0].dispose()
                entry = None
            if entry is None:
                entry = (_new_engine(url, durable), None)
            self._open[path] = entry
            while len(self._open) > self._limit:
                self._open.popitem(last=False)[1][0].dispose()
            return entry[0]


def _identity(path: str) -> tuple[int, int] | None:
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return None
    return (status.st_dev, status.st_ino)


def _new_engine(url: str, durable: bool) -> Engine:
    # one connection kept; more only while one is in use (Dagster's schema set-up opens a second)
    engine = db.create_engine(
        url, pool_size=1, max_overflow=8, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS}
    )

    @event.listens_for(engine, "connect")
    def _write_ahead(dbapi_connection: Any, record: Any) -> None:
        # Dagster turns a new file to WAL after making its tables, each table's DDL then committed
        # through a rollback journal (~30 ms a run); on a file already in WAL this changes nothing
        dbapi_connection.execute("PRAGMA journal_mode=WAL")
        if not durable:
            dbapi_connection.execute("PRAGMA synchronous=NORMAL")

    return engine


_CHECK_RESULT_UPDATE = update_sql(lambda name: f":{name}", "IS", ":event_id")


@functools.cache
def _inserted(columns: tuple[str, ...]) -> str:
    """The insert of an event row of `columns` into a run's file or the index (same table)."""
    named = ", ".join(f":{column}" for column in columns)
    return f"INSERT INTO {SqlEventLogStorageTable.name} ({', '.join(columns)}) VALUES ({named})"


_INSERT_TAGS = (
    f"INSERT INTO {AssetEventTagsTable.name} (event_id, asset_key, key, value, event_timestamp)"
    " VALUES (:event_id, :asset_key, :key, :value, :event_timestamp)"
)


@functools.cache
def _upserted(columns: tuple[str, ...]) -> str:
    """The insert of an asset's row with `columns`, or their update where the asset has one."""
    named = ", ".join(f":{column}" for column in columns)
    updated = ", ".join(f"{column} = excluded.{column}" for column in columns)
    return (
        f"INSERT INTO {AssetKeyTable.name} (asset_key, {', '.join(columns)}) VALUES (:asset_key, {named})"
        f" ON CONFLICT (asset_key) DO UPDATE SET {updated}"
    )


def _text(value: Any) -> Any:
    """A value as SQLAlchemy writes it to SQLite: a `DateTime` as text, always with microseconds (the
    columns are compared as text), its wall time whatever its zone."""
    return value.strftime("%Y-%m-%d %H:%M:%S.%f") if isinstance(value, datetime) else value


def _sqlite_row(row: dict[str, Any]) -> dict[str, Any]:
    """`row` with its timestamp as SQLAlchemy writes it (`_text`)."""
    return {**row, "timestamp": _text(row["timestamp"])}


class KeptOpenEventLogStorage(LatestMaterialization, TablesRemembered, SqliteEventLogStorage):
    """Dagster's per-run event databases and their index, with the connections kept open."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._databases = OpenDatabases()
        super().__init__(base_dir, inst_data)
        hand_planned_events_over_together()

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        with self._db_lock:
            path = self.path_for_shard(shard)
            url = self.conn_string_for_shard(shard)
            durable = shard == INDEX_SHARD_NAME  # a run's file is synced when a step ends (`store_event`)
            if shard not in self._initialized_dbs:
                if not durable and not os.path.exists(path):
                    self._copy_template(path)
                self._initdb(self._databases.engine(path, url, durable))
                self._initialized_dbs.add(shard)
            with self._databases.connect(path, url, durable) as connection:
                changes = connection.connection.dbapi_connection.total_changes  # type: ignore[union-attr]
                with connection.begin():
                    yield connection
                if shard != INDEX_SHARD_NAME and (
                    connection.connection.dbapi_connection.total_changes != changes  # type: ignore[union-attr]
                ):
                    # the UI follows a live run by watching its file change, and a write that stays
                    # in the WAL does not change it: its modification time is set instead
                    os.utime(path)

    def store_event(self, event: EventLogEntry) -> None:
        """Dagster's `store_event` for SQLite (the event in its run's file; asset and check events, and
        the run's status changes, copied into the index, with their index rows), the rows inserted as
        SQLite's text with the row of Dagster's `_event_to_row` rather than a SQLAlchemy construct built
        and keyed for its cache at every statement (0.14 ms an insert where the construct took 0.25)."""
        row = _sqlite_row(self._event_to_row(event))
        insert = _inserted(tuple(row))
        with self.run_connection(event.run_id) as connection:
            connection.exec_driver_sql(insert, row)
        kind = event.dagster_event_type if event.is_dagster_event else None
        if kind in ASSET_EVENTS:
            with self.index_transaction() as connection:
                event_id = connection.exec_driver_sql(insert, row).lastrowid
                self._index_asset_events(connection, [(event, event_id)])
        if is_check_result(event):  # and its planned row's update, in one transaction
            parameters = {**row, **result_parameters(event)}
            with self.index_transaction() as connection:
                parameters["event_id"] = event_id = connection.exec_driver_sql(insert, row).lastrowid
                updated = connection.exec_driver_sql(_CHECK_RESULT_UPDATE, parameters).rowcount
            after_update(self, event, event_id, updated)
        elif kind in ASSET_CHECK_EVENTS:
            with self.index_connection() as connection:
                event_id = connection.exec_driver_sql(insert, row).lastrowid
            self.store_asset_check_event(event, event_id)
        if kind in EVENT_TYPE_TO_PIPELINE_RUN_STATUS:
            with self.index_connection() as connection:
                connection.exec_driver_sql(insert, row)
        if kind in SYNCED_AFTER:
            self._sync_run_file(event.run_id)

    def store_event_batch(self, events: Sequence[EventLogEntry]) -> None:
        """A run's planned events (`planned.py`): in its file in one transaction, then their copies and
        index rows in the index in another."""
        if not all_planned(events):
            super().store_event_batch(events)
            return
        rows = [self._event_to_row(event) for event in events]
        stored = [_sqlite_row(row) for row in rows]
        insert = _inserted(tuple(stored[0]))
        with self.run_connection(events[0].run_id) as connection:
            connection.exec_driver_sql(insert, stored)
        with self.index_transaction() as connection:
            ids = [connection.exec_driver_sql(insert, row).lastrowid for row in stored]
            index_planned(self._index_asset_events, connection, events, rows, ids)

    def _index_asset_events(
        self, connection: Connection, assets: Sequence[tuple[EventLogEntry, int]]
    ) -> None:
        """What Dagster's `_store_asset_event_tags` and `_store_asset_event` write to the index for
        these events and their ids, as SQLite text: the asset's indexed tags, and its row inserted or
        updated (an upsert, where Dagster's tries the insert and, for an asset already there, catches the
        error and updates)."""
        if tags := indexed_tag_rows(self, assets):
            stored = [{**row, "event_timestamp": _text(row["event_timestamp"])} for row in tags]
            connection.exec_driver_sql(_INSERT_TAGS, stored)
        indexed = self._has_asset_key_index_cols_on_connection(connection)
        for entry, event_id in assets:
            values = self._get_asset_entry_values(entry, event_id, indexed)
            if values:  # as Dagster's: nothing to write, no row
                key = entry.get_dagster_event().asset_key.to_string()  # type: ignore[union-attr]
                parameters = {"asset_key": key, **{column: _text(value) for column, value in values.items()}}
                connection.exec_driver_sql(_upserted(tuple(values)), parameters)

    def _sync_run_file(self, run_id: str) -> None:
        """What the run's commits since its last sync wrote, on disk: they are in its WAL (a checkpoint,
        which moves them into the file, syncs both)."""
        try:
            descriptor = os.open(f"{self.path_for_shard(run_id)}-wal", os.O_RDONLY)
        except FileNotFoundError:  # checkpointed and closed: synced then
            return
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)

    def _initdb(self, engine: Engine, for_index_shard: bool = False) -> None:
        # Dagster's makes a database that has no alembic revision yet, after loading alembic's 60-odd
        # migration scripts to learn the head revision (~25 ms each time: the index in every process, a
        # run's file in each process after the one that made it, as the daemon makes a queued run's and
        # the run's process writes it); a database that has a revision needs nothing from it
        with engine.connect() as connection:
            if (
                engine.dialect.has_table(connection, "alembic_version")
                and connection.exec_driver_sql("SELECT version_num FROM alembic_version").first()
            ):
                return
        super()._initdb(engine, for_index_shard)

    def _copy_template(self, path: str) -> None:
        """A new run's database made as a copy of an empty one that Dagster's own set-up made (its
        tables, indexes and alembic revision), once per Dagster release in this folder: Dagster's
        set-up loads alembic's 60-odd migration scripts twice and commits each table's DDL, ~90 ms a
        run on this machine, the copy ~1 ms. Written aside and linked into place, so a run's file is
        never seen half-made and one another process made meanwhile is kept."""
        template = os.path.join(self._base_dir, f".run-template-{DAGSTER_VERSION}.sqlite")
        if not os.path.exists(template):
            self._make_template(template)
        aside = self._aside()
        try:
            with open(template, "rb") as source, open(aside, "xb") as target:
                kernel_copy(source, target)
                target.flush()
                os.fsync(target.fileno())
            with suppress(FileExistsError):  # made meanwhile by another process: theirs stays
                os.link(aside, path)
        finally:
            os.unlink(aside)

    def _aside(self) -> str:
        # a dotfile: Dagster's listings of the folder's runs (`*.db`) never see it
        return os.path.join(self._base_dir, f".{uuid.uuid4().hex}.new")

    def _make_template(self, template: str) -> None:
        aside = self._aside()
        engine = db.create_engine(f"sqlite:///{aside}", poolclass=NullPool)
        try:
            super()._initdb(engine)
            with engine.connect() as connection:
                # one self-contained file (Dagster's set-up turns it to WAL; a copy turns WAL again
                # when this storage first connects to it)
                connection.exec_driver_sql("PRAGMA journal_mode=DELETE")
            engine.dispose()
            os.replace(aside, template)
        finally:
            engine.dispose()
            for leftover in (aside, f"{aside}-wal", f"{aside}-shm"):
                if os.path.exists(leftover):
                    os.unlink(leftover)

    def _table_in_database(self, table_name: str) -> bool:
        # the index asked over its kept connection
        path = self.path_for_shard(INDEX_SHARD_NAME)
        engine = self._databases.engine(path, self.conn_string_for_shard(INDEX_SHARD_NAME))
        with engine.connect() as connection:
            return bool(engine.dialect.has_table(connection, table_name))

    def wipe(self) -> None:
        self._databases.close()
        super().wipe()

    def dispose(self) -> None:
        super().dispose()
        self._databases.close()


class _ConnectionKeptOpen:
    """For Dagster's one-file SQLite storages, whose every statement goes through `connect()`."""

    _conn_string: str

    def __init__(self, conn_string: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._databases = OpenDatabases(limit=1)
        self._path = db.engine.make_url(conn_string).database or ""
        super().__init__(conn_string, inst_data)  # type: ignore[call-arg]

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        with self._databases.connect(self._path, self._conn_string) as connection, connection.begin():
            yield connection

    def dispose(self) -> None:
        super().dispose()  # type: ignore[misc]
        self._databases.close()


class KeptOpenRunStorage(RunColumnsRemembered, _ConnectionKeptOpen, SqliteRunStorage):
    """Dagster's run database."""


class KeptOpenScheduleStorage(_ConnectionKeptOpen, SqliteScheduleStorage):
    """Dagster's schedule and sensor database (the daemon's ticks)."""


class KeptOpenSqliteStorage(DagsterSqliteStorage):
    """What `storage: sqlite: base_dir:` makes, with its three storages keeping connections open."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self.base_dir = base_dir
        self._inst_data = inst_data
        self._run_storage = KeptOpenRunStorage.from_local(_runs_directory(base_dir))
        self._event_log_storage = KeptOpenEventLogStorage(_event_logs_directory(base_dir))
        self._schedule_storage = KeptOpenScheduleStorage.from_local(_schedule_directory(base_dir))
        # DagsterStorage's set-up, not DagsterSqliteStorage's: that one opens its own three storages
        super(DagsterSqliteStorage, self).__init__()

    @classmethod
    def from_config_value(  # type: ignore[override]
        cls, inst_data: ConfigurableClassData | None, config_value: Any
    ) -> KeptOpenSqliteStorage:
        return cls.from_local(inst_data=inst_data, **config_value)
