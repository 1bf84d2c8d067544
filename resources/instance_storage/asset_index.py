"""An asset event's indexed tags: the rows Dagster's `_store_asset_event_tags` inserts, for the storages
that write them as their database's text (`sqlite.py`, `postgres.py`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log import SqlEventLogStorage
from dagster._core.storage.event_log.schema import AssetEventTagsTable


def indexed_tag_rows(
    storage: SqlEventLogStorage, assets: Sequence[tuple[EventLogEntry, int]]
) -> list[dict[str, Any]]:
    """The tag rows of asset events (with their ids), columns in the table's order; none where the
    database has no tags table yet (Dagster's check: a migration adds it)."""
    rows = [
        {
            "event_id": event_id,
            "asset_key": event.get_dagster_event().asset_key.to_string(),  # type: ignore[union-attr]
            "key": tag,
            "value": value,
            "event_timestamp": storage._event_insert_timestamp(event),
        }
        for event, event_id in assets
        for tag, value in storage._tags_for_asset_event(event).items()
    ]
    return rows if rows and storage.has_table(AssetEventTagsTable.name) else []
