"""What both event logs remember about their database's tables."""

from __future__ import annotations


class TablesRemembered:
    """`has_table` asked of the database once per table that exists: Dagster asks before storing each
    check result and each asset event's tags (about 40 times a day's run, each a query of the
    catalogue), and a table, once there, stays (migrations add tables; wiping empties them)."""

    def has_table(self, table_name: str) -> bool:
        present: set[str] = self.__dict__.setdefault("_tables_present", set())
        if table_name in present:
            return True
        if not self._table_in_database(table_name):
            return False
        present.add(table_name)
        return True

    def _table_in_database(self, table_name: str) -> bool:
        return bool(super().has_table(table_name))  # type: ignore[misc]
