"""What the storages remember about their database's schema: a table or column, once there, stays.

Dagster asks the database's catalogue before many writes and reads: whether a table exists before
storing each check result and each asset event's tags (about 40 times a day's run), whether the runs
table has its newer columns when a run is added and at each of its status changes, whether the assets
table has its index columns when assets are read and (on SQLite) at every asset event. A column
question goes through SQLAlchemy's reflection, which on PostgreSQL builds and sends a query joining six
catalogues (1 ms each time, 12 in a day's run; the first ones in a process 5-10 ms, the query
compiled); here it is one small query of the table's column names, and only until the answer is yes.
Migrations add tables and columns and wiping empties tables, so what is present is remembered and what
is missing is asked again.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

import sqlalchemy as db
from dagster._core.storage.event_log.schema import AssetKeyTable
from dagster._core.storage.runs.schema import BulkActionsTable, RunsTable
from sqlalchemy.engine import Connection

_COLUMNS = {
    "postgresql": db.text(
        "SELECT attname FROM pg_attribute"
        " WHERE attrelid = to_regclass(:table) AND attnum > 0 AND NOT attisdropped"
    ),
    "sqlite": db.text("SELECT name FROM pragma_table_info(:table)"),
}


def _present(storage: object, what: str, ask: Callable[[], bool]) -> bool:
    remembered: set[str] = storage.__dict__.setdefault("_schema_present", set())
    if what in remembered:
        return True
    if not ask():
        return False
    remembered.add(what)
    return True


def _has_columns(
    storage: object,
    connect: Callable[[], AbstractContextManager[Connection]],
    table: str,
    *columns: str,
) -> bool:
    def ask() -> bool:
        with connect() as connection:
            names = connection.execute(_COLUMNS[connection.dialect.name], {"table": table}).scalars()
            return set(columns) <= set(names)

    return _present(storage, f"{table}.{'.'.join(columns)}", ask)


class TablesRemembered:
    """An event log's questions about its tables and the assets table's columns."""

    def has_table(self, table_name: str) -> bool:
        return _present(self, f"table {table_name}", lambda: self._table_in_database(table_name))

    def _table_in_database(self, table_name: str) -> bool:
        return bool(super().has_table(table_name))  # type: ignore[misc]

    def has_asset_key_col(self, column_name: str) -> bool:
        return _has_columns(self, self.index_connection, AssetKeyTable.name, column_name)  # type: ignore[attr-defined]

    def _has_asset_key_col_on_connection(self, connection: Connection, column_name: str) -> bool:
        # asked on a connection in a transaction: SQLite stores each asset event's row after asking
        return _has_columns(self, lambda: nullcontext(connection), AssetKeyTable.name, column_name)


class RunColumnsRemembered:
    """A run storage's questions about the runs and backfills tables' newer columns."""

    def has_run_stats_index_cols(self) -> bool:
        return _has_columns(self, self.connect, RunsTable.name, "start_time", "end_time")  # type: ignore[attr-defined]

    def has_backfill_id_column(self) -> bool:
        return _has_columns(self, self.connect, RunsTable.name, "backfill_id")  # type: ignore[attr-defined]

    def has_bulk_actions_selector_cols(self) -> bool:
        return _has_columns(self, self.connect, BulkActionsTable.name, "selector_id")  # type: ignore[attr-defined]

    def has_bulk_action_job_name_column(self) -> bool:
        return _has_columns(self, self.connect, BulkActionsTable.name, "job_name")  # type: ignore[attr-defined]
