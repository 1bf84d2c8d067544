"""A run's planned events stored together, in one transaction per database.

When a run is made (by the webserver or the daemon launching it, or `execute_in_process`), Dagster
reports one `ASSET_MATERIALIZATION_PLANNED` event per asset it will materialise and one
`ASSET_CHECK_EVALUATION_PLANNED` per check: 24 for a day's `datasets_job`. One by one, each costs two or
three statements and as many commits (on SQLite 72, the index's each synced to disk; on PostgreSQL as
many round trips): 40-50 ms of a small day's run. Dagster hands them to the storage as one batch when
`DAGSTER_EVENT_BATCH_SIZE` is set, and its own storages then store them one by one anyway; these write
the same rows (the run's events, their copies in the SQLite index, the assets' and checks' index rows)
with a statement or two per table. Anything else in a batch (a ranged run's materialisations) is
stored as Dagster's storage stores it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from dagster._core.events import DagsterEventType
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus
from dagster._core.storage.event_log.schema import AssetCheckExecutionsTable
from sqlalchemy.engine import Connection

from training_pipeline.environment import default_dagster_variable

PLANNED = frozenset(
    {DagsterEventType.ASSET_MATERIALIZATION_PLANNED, DagsterEventType.ASSET_CHECK_EVALUATION_PLANNED}
)
#: events Dagster buffers before handing them over (a run's planned events come as one batch up to this)
BATCH_SIZE = "1000"


def hand_planned_events_over_together() -> None:
    """Have the instance hand batches over (Dagster reads the variable at each event); a value the
    deployment sets stays, `0` included, which stores every event on its own again."""
    default_dagster_variable("DAGSTER_EVENT_BATCH_SIZE", BATCH_SIZE)


def all_planned(events: Sequence[EventLogEntry]) -> bool:
    """Whether `events` are planned events of one run (what a run's creation hands over)."""
    return (
        bool(events)
        and len({event.run_id for event in events}) == 1
        and all(event.is_dagster_event and event.dagster_event_type in PLANNED for event in events)
    )


def index_planned(
    index_assets: Callable[[Connection, Sequence[tuple[EventLogEntry, int]]], None],
    connection: Connection,
    events: Sequence[EventLogEntry],
    rows: Sequence[dict[str, Any]],
    event_ids: Sequence[int],
) -> None:
    """What Dagster's `store_event` writes to the index for each planned event, given its event-log row
    (`_event_to_row`, serialised once) and its id there, on `connection` in its transaction: an asset's
    tags and latest-event row (by `index_assets`, the storage's own), a check's execution row (one per
    partition)."""
    assets: list[tuple[EventLogEntry, int]] = []
    checks: list[dict[str, Any]] = []
    for event, row, event_id in zip(events, rows, event_ids, strict=True):
        dagster_event = event.get_dagster_event()
        if dagster_event.event_type == DagsterEventType.ASSET_CHECK_EVALUATION_PLANNED:
            planned = dagster_event.asset_check_planned_data
            subset = planned.partitions_subset
            checks.extend(
                {
                    "asset_key": planned.asset_key.to_string(),
                    "check_name": planned.check_name,
                    "partition": partition,
                    "run_id": event.run_id,
                    "execution_status": AssetCheckExecutionRecordStatus.PLANNED.value,
                    "evaluation_event": row["event"],
                    "evaluation_event_timestamp": row["timestamp"],
                    "evaluation_event_storage_id": event_id,
                }
                for partition in (subset.get_partition_keys() if subset else [None])
            )
        elif dagster_event.asset_key:
            assets.append((event, event_id))
    if assets:
        index_assets(connection, assets)
    if checks:
        connection.execute(AssetCheckExecutionsTable.insert(), checks)
