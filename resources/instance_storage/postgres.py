"""The production instance's storage (`deploy/dagster.yaml`): Dagster's PostgreSQL storage, same
tables, configured exactly as `storage: postgres:` is.

Outside the webserver, Dagster's PostgreSQL storages open a connection (TCP, authentication) for every
statement, so that processes making many instances hold no connections. Here a process keeps one
connection per kind of storage (runs, events, schedules) open, shared by every instance it makes (a
Celery worker makes one per step and never disposes of it), recycled hourly and checked before use
when it may have gone (below). A process forked with open connections (a Celery worker's children)
opens its own instead of sharing its parent's socket. The webserver still replaces these engines with
its own pooled ones, as it does Dagster's.
"""

from __future__ import annotations

import functools
import os
import select
import threading
import time
from collections.abc import Sequence
from typing import Any

from dagster._core.events import ASSET_CHECK_EVENTS, ASSET_EVENTS
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log import SqlEventLogStorageTable
from dagster._core.storage.event_log.migration import ASSET_KEY_INDEX_COLS
from dagster._core.storage.event_log.schema import AssetEventTagsTable, AssetKeyTable
from dagster._serdes import ConfigurableClassData
from dagster_postgres import DagsterPostgresStorage
from dagster_postgres.event_log.event_log import CHANNEL_NAME, PostgresEventLogStorage
from dagster_postgres.run_storage import PostgresRunStorage
from dagster_postgres.schedule_storage import PostgresScheduleStorage
from dagster_postgres.utils import create_pg_engine, get_token_provider_from_config, pg_url_from_config
from sqlalchemy import event, exc
from sqlalchemy.engine import Connection, Engine

from resources.instance_storage.asset_index import indexed_tag_rows
from resources.instance_storage.check_results import (
    after_update,
    is_check_result,
    result_parameters,
    update_sql,
)
from resources.instance_storage.latest import LatestMaterialization
from resources.instance_storage.planned import all_planned, hand_planned_events_over_together, index_planned
from resources.instance_storage.tables import RunColumnsRemembered, TablesRemembered

#: connections a storage opens beyond its kept one while threads use it at once, closed when returned
OVERFLOW = 10
RECYCLE_SECONDS = 3600
#: a connection unused this long is pinged before its next use (a firewall may have dropped it unseen)
IDLE_SECONDS = 30


class KeptOpenEventLogStorage(LatestMaterialization, TablesRemembered, PostgresEventLogStorage):
    """Dagster's event log on PostgreSQL, an event stored in one statement: Dagster's sends its insert,
    then a `NOTIFY` of it (kept for the webservers of older releases, which listen for it), a second
    round trip for each of a day's ~94 events; a check's result then updates the check's execution row
    (planned when the run was made), a third, here in the same statement. The statements are
    PostgreSQL's text with the row of Dagster's `_event_to_row`, not SQLAlchemy constructs built and
    keyed for its cache at every event: 0.27 ms an event where the construct took 0.71."""

    def store_event(self, event: EventLogEntry) -> None:
        row = self._event_to_row(event)
        check_result = is_check_result(event)
        parameters = {**row, **result_parameters(event)} if check_result else row
        with self._connect() as connection:
            stored = connection.exec_driver_sql(_stored(tuple(row), check_result), parameters).one()
        event_id = int(stored[0])
        if check_result:
            after_update(self, event, event_id, stored[2])
            return
        # the rest as Dagster's
        if (
            event.is_dagster_event
            and event.dagster_event_type in ASSET_EVENTS
            and event.dagster_event.asset_key  # type: ignore[union-attr]
        ):
            with self._connect() as connection:
                self._index_asset_events(connection, [(event, event_id)])
        if event.is_dagster_event and event.dagster_event_type in ASSET_CHECK_EVENTS:
            self.store_asset_check_event(event, event_id)

    def _index_asset_events(
        self, connection: Connection, assets: Sequence[tuple[EventLogEntry, int]]
    ) -> None:
        """What Dagster's `_store_asset_event_tags` and (PostgreSQL's) `_store_asset_event` write for
        these events and their ids, the asset's indexed tags and its row's upsert, in one statement of
        text (Dagster's: a construct each, in a transaction of begin, tags, row, commit)."""
        keys = [event.get_dagster_event().asset_key.to_string() for event, _ in assets]  # type: ignore[union-attr]
        if len(set(keys)) < len(keys):  # a statement may not upsert a row twice: Dagster's, in turn
            self._store_asset_event_tags(connection, [e for e, _ in assets], [i for _, i in assets])
            for event, event_id in assets:
                self._store_asset_event(connection, event, event_id)
            return
        parameters: dict[str, Any] = {}

        def listed(prefix: str, values: Sequence[Any]) -> str:
            names = [f"{prefix}_{number}" for number in range(len(values))]
            parameters.update(zip(names, values, strict=True))
            return "(" + ", ".join(f"%({name})s" for name in names) + ")"

        writes = []
        if tags := indexed_tag_rows(self, assets):
            listing = ", ".join(listed(f"t{n}", tuple(row.values())) for n, row in enumerate(tags))
            writes.append(f"INSERT INTO {AssetEventTagsTable.name} ({', '.join(tags[0])}) VALUES {listing}")
        indexed = self.has_secondary_index(ASSET_KEY_INDEX_COLS)
        rows: dict[tuple[str, ...], list[str]] = {}  # by the columns written
        for n, ((event, event_id), key) in enumerate(zip(assets, keys, strict=True)):
            values = self._get_asset_entry_values(event, event_id, indexed)
            rows.setdefault(tuple(values), []).append(listed(f"a{n}", (key, *values.values())))
        for columns, listing in rows.items():
            updated = ", ".join(f"{column} = EXCLUDED.{column}" for column in columns)
            writes.append(
                f"INSERT INTO {AssetKeyTable.name} ({', '.join(('asset_key', *columns))})"
                f" VALUES {', '.join(listing)} ON CONFLICT (asset_key)"
                + (f" DO UPDATE SET {updated}" if columns else " DO NOTHING")
            )
        *first, last = writes
        parts = ", ".join(f"write_{number} AS ({write})" for number, write in enumerate(first))
        connection.exec_driver_sql(f"WITH {parts} {last}" if first else last, parameters)

    def store_event_batch(self, events: Sequence[EventLogEntry]) -> None:
        """A run's planned events (`planned.py`): their rows and index rows in one transaction."""
        if not all_planned(events):
            super().store_event_batch(events)
            return
        rows = [self._event_to_row(event) for event in events]
        columns = tuple(rows[0])
        parameters = {f"{column}_{n}": row[column] for n, row in enumerate(rows) for column in columns}
        with self.index_transaction() as connection:
            stored = connection.exec_driver_sql(_stored(columns, False, suffixed=len(rows)), parameters)
            # a statement's rows take their ids in the order of its values
            ids = sorted(int(event_id) for event_id, _ in stored)
            index_planned(self._index_asset_events, connection, events, rows, ids)


@functools.cache
def _stored(columns: tuple[str, ...], check_result: bool, suffixed: int = 0) -> str:
    """The statement that stores an event row of `columns` (parameters named by column), or `suffixed`
    rows (parameters suffixed `_0`, `_1`...), and notifies each, selecting their ids; with
    `check_result`, also the update of the check's execution row that Dagster's
    `_update_asset_check_evaluation` makes (`check_results.py`), and how many rows it updated."""

    def values(suffix: str) -> str:
        return "(" + ", ".join(f"%({column}{suffix})s" for column in columns) + ")"

    listed = ", ".join(values(f"_{n}") for n in range(suffixed)) if suffixed else values("")
    statement = (
        f"WITH inserted AS (INSERT INTO {SqlEventLogStorageTable.name} ({', '.join(columns)})"
        f" VALUES {listed} RETURNING run_id, id)"
    )
    if check_result:
        update = update_sql(lambda name: f"%({name})s", "IS NOT DISTINCT FROM", "(SELECT id FROM inserted)")
        statement += f", updated AS ({update} RETURNING id)"
    notified = f"pg_notify('{CHANNEL_NAME}', run_id || '_' || id::text)"
    counted = ", (SELECT count(*) FROM updated)" if check_result else ""
    return f"{statement} SELECT id, {notified}{counted} FROM inserted"


class KeptOpenRunStorage(RunColumnsRemembered, PostgresRunStorage):
    """Dagster's run storage on PostgreSQL."""


class KeptOpenPostgresStorage(DagsterPostgresStorage):
    """What `storage: postgres:` makes, its three storages on the process's kept-open connections."""

    def __init__(
        self,
        postgres_url: str,
        should_autocreate_tables: bool = True,
        inst_data: ConfigurableClassData | None = None,
        token_provider: Any = None,
    ) -> None:
        self.postgres_url = postgres_url
        self.should_autocreate_tables = should_autocreate_tables
        self._inst_data = inst_data
        self._run_storage = KeptOpenRunStorage(
            postgres_url, should_autocreate_tables, token_provider=token_provider
        )
        self._event_log_storage = KeptOpenEventLogStorage(
            postgres_url, should_autocreate_tables, token_provider=token_provider
        )
        self._schedule_storage = PostgresScheduleStorage(
            postgres_url, should_autocreate_tables, token_provider=token_provider
        )
        # DagsterStorage's set-up, not DagsterPostgresStorage's: that one makes Dagster's event log
        super(DagsterPostgresStorage, self).__init__()
        hand_planned_events_over_together()
        for storage in (self._run_storage, self._event_log_storage, self._schedule_storage):
            stock = storage._engine
            storage._engine = _process_engine(type(storage).__name__, stock, postgres_url, token_provider)
            stock.dispose()

    @classmethod
    def from_config_value(  # type: ignore[override]
        cls, inst_data: ConfigurableClassData | None, config_value: Any
    ) -> KeptOpenPostgresStorage:
        return cls(
            pg_url_from_config(config_value),
            config_value.get("should_autocreate_tables", True),
            inst_data,
            get_token_provider_from_config(config_value),
        )


_engines: dict[tuple[str, str], Engine] = {}
_engines_lock = threading.Lock()


def _process_engine(kind: str, stock: Engine, url: str, token_provider: Any) -> Engine:
    """The process's engine for storages of `kind` on `url`: like Dagster's `stock` one (autocommit,
    the URL's `options`), pooling a connection."""
    with _engines_lock:
        engine = _engines.get((kind, url))
        if engine is None:
            engine = _engines[(kind, url)] = _new_engine(stock, url, token_provider)
        return engine


def _new_engine(stock: Engine, url: str, token_provider: Any) -> Engine:
    arguments: dict[str, Any] = {
        "isolation_level": "AUTOCOMMIT",
        "pool_size": 1,
        "max_overflow": OVERFLOW,
        "pool_recycle": RECYCLE_SECONDS,
    }
    options = stock.url.query.get("options")
    if options:
        arguments["connect_args"] = {"options": options}
    engine = create_pg_engine(url, token_provider, **arguments)
    _open_own_connections_after_fork(engine)
    _replace_gone_connections(engine)
    return engine


def _open_own_connections_after_fork(engine: Engine) -> None:
    # SQLAlchemy's recipe for pools crossing os.fork(): a connection made in another process is
    # discarded (not closed: the socket is the parent's) and the pool connects anew
    @event.listens_for(engine, "connect")
    def _made(dbapi_connection: Any, record: Any) -> None:
        record.info["pid"] = os.getpid()

    @event.listens_for(engine, "checkout")
    def _taken(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        if record.info["pid"] != os.getpid():
            record.dbapi_connection = proxy.dbapi_connection = None
            raise exc.DisconnectionError("a connection of the parent process, before fork")


def _replace_gone_connections(engine: Engine) -> None:
    """A server restart or an idle timeout costs a reconnect, not a failed step. SQLAlchemy's
    `pool_pre_ping` pays a round trip for that at every checkout (about 300 in a day's run, 60-100 ms);
    here a connection is pinged only when the server has said something unasked (a server closing it
    sends its reason, then end of file: the socket turns readable) or it has been idle a while."""

    @event.listens_for(engine, "checkin")
    def _returned(dbapi_connection: Any, record: Any) -> None:
        record.info["returned"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _taken(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        if dbapi_connection.closed:
            raise exc.DisconnectionError("this connection was closed")
        idle = time.monotonic() - record.info.get("returned", time.monotonic())
        if idle < IDLE_SECONDS and not select.select([dbapi_connection], [], [], 0)[0]:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except engine.dialect.loaded_dbapi.Error as err:
            raise exc.DisconnectionError("the server closed this connection") from err
