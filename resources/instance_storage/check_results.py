"""A check's result in its planned execution row: the update Dagster's `_update_asset_check_evaluation`
makes, as one statement of text to go beside the result's event insert (in one statement on PostgreSQL,
one transaction on SQLite) rather than a SQLAlchemy construct built, and the event serialised again, at
every result: 17 a day's run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dagster._core.errors import DagsterInvariantViolationError
from dagster._core.events import DagsterEventType
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus
from dagster._core.storage.event_log import SqlEventLogStorage
from dagster._core.storage.event_log.schema import AssetCheckExecutionsTable


def is_check_result(event: EventLogEntry) -> bool:
    """A run's check result (one outside a run has no planned row: Dagster inserts it)."""
    return event.dagster_event_type == DagsterEventType.ASSET_CHECK_EVALUATION and bool(event.run_id)


def update_sql(parameter: Callable[[str], str], null_safe_equals: str, event_id: str) -> str:
    """The update in a database's dialect: how it names a parameter, compares allowing NULL, and
    gives the result event's id. Parameters: the event row's (`event`, `timestamp`, `run_id`) and
    `result_parameters`'."""
    return (
        f"UPDATE {AssetCheckExecutionsTable.name} SET"
        f" execution_status = {parameter('check_status')}, evaluation_event = {parameter('event')},"
        f" evaluation_event_timestamp = {parameter('timestamp')},"
        f" evaluation_event_storage_id = {event_id},"
        f" materialization_event_storage_id = {parameter('check_target')},"
        f" partition = {parameter('check_partition')}"
        f" WHERE asset_key = {parameter('check_asset_key')} AND check_name = {parameter('check_name')}"
        f" AND run_id = {parameter('run_id')}"
        f" AND partition {null_safe_equals} {parameter('check_partition')}"
    )


def result_parameters(event: EventLogEntry) -> dict[str, Any]:
    evaluation = event.get_dagster_event().asset_check_evaluation_data
    target = evaluation.target_materialization_data
    passed = evaluation.passed
    status = AssetCheckExecutionRecordStatus.SUCCEEDED if passed else AssetCheckExecutionRecordStatus.FAILED
    return {
        "check_status": status.value,
        "check_target": target.storage_id if target else None,
        "check_partition": evaluation.partition,
        "check_asset_key": evaluation.asset_key.to_string(),
        "check_name": evaluation.check_name,
    }


def after_update(storage: SqlEventLogStorage, event: EventLogEntry, event_id: int, rows_updated: int) -> None:
    """What Dagster does after its update: a row never planned (a step launched outside the run's
    plan) is inserted as Dagster inserts it; two planned rows are an error."""
    if rows_updated == 0:
        storage._update_asset_check_evaluation(event, event_id)
    elif rows_updated > 1:
        key = event.get_dagster_event().asset_check_evaluation_data.asset_check_key
        raise DagsterInvariantViolationError(
            f"Updated {rows_updated} rows for asset check evaluation {key} "
            "as a result of duplicate AssetCheckPlanned events."
        )
