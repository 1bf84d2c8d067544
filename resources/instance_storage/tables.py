"""What the storages remember about their database's schema: a table or column, once there, stays.

Dagster asks the database's catalogue before many writes and reads: whether a table exists before
storing each check result and each asset event's tags (about 40 times a day's run), whether the runs
table has its newer columns when a run is added and at each of its status changes, whether the assets
table has its index columns when assets are read. On PostgreSQL each column question is a query of
`pg_catalog` (1 ms; 12 in a day's run). Migrations add tables and columns and wiping empties tables,
so what is present is remembered and what is missing is asked again.
"""

from __future__ import annotations

from collections.abc import Callable


def _present(storage: object, what: str, ask: Callable[[], bool]) -> bool:
    remembered: set[str] = storage.__dict__.setdefault("_schema_present", set())
    if what in remembered:
        return True
    if not ask():
        return False
    remembered.add(what)
    return True


class TablesRemembered:
    """An event log's questions about its tables and the assets table's columns, each asked of the
    database until the answer is yes."""

    def has_table(self, table_name: str) -> bool:
        return _present(self, f"table {table_name}", lambda: self._table_in_database(table_name))

    def _table_in_database(self, table_name: str) -> bool:
        return bool(super().has_table(table_name))  # type: ignore[misc]

    def has_asset_key_col(self, column_name: str) -> bool:
        return _present(
            self,
            f"asset_keys.{column_name}",
            lambda: bool(super(TablesRemembered, self).has_asset_key_col(column_name)),  # type: ignore[misc]
        )


class RunColumnsRemembered:
    """A run storage's questions about the runs and backfills tables' newer columns, each asked of the
    database until the answer is yes."""

    def has_run_stats_index_cols(self) -> bool:
        return _present(self, "runs.start_time", super().has_run_stats_index_cols)  # type: ignore[misc]

    def has_backfill_id_column(self) -> bool:
        return _present(self, "runs.backfill_id", super().has_backfill_id_column)  # type: ignore[misc]

    def has_bulk_actions_selector_cols(self) -> bool:
        return _present(self, "bulk_actions.selector_id", super().has_bulk_actions_selector_cols)  # type: ignore[misc]

    def has_bulk_action_job_name_column(self) -> bool:
        return _present(self, "bulk_actions.job_name", super().has_bulk_action_job_name_column)  # type: ignore[misc]
