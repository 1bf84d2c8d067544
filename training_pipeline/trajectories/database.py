"""elizaOS's `trajectories` table (SQLite or PostgreSQL) as a trajectory source.

A day is read with a range predicate on `start_time` (BIGINT milliseconds), so a partition only touches
its own rows, and rows are streamed with a server-side cursor.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from pydantic.alias_generators import to_camel

from training_pipeline import jscompat
from training_pipeline.settings import settings
from training_pipeline.trajectories.models import start_day, validation_reason
from training_pipeline.trajectories.parsing import ParsedRecord, oversized, parse_record

#: elizaOS column → trajectory field; JSON text columns are parsed.
_COLUMNS = {
    "id": "trajectoryId",
    "agent_id": "agentId",
    "source": "source",
    "status": "status",
    "start_time": "startTime",
    "end_time": "endTime",
    "duration_ms": "durationMs",
    "scenario_id": "scenarioId",
    "batch_id": "batchId",
    "created_at": "createdAt",
    "updated_at": "updatedAt",
}
_JSON_COLUMNS = {"steps_json": "steps", "metadata": "metadata"}
_BATCH_ROWS = 500


class SourceUnavailable(RuntimeError):
    """The database could not be reached or queried; retrying later may succeed."""


def day_bounds_ms(day: date) -> tuple[int, int]:
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    return int(start.timestamp() * 1000), int((start + timedelta(days=1)).timestamp() * 1000)


def read_table(
    engine: sa.Engine, table: str = "trajectories", day: date | None = None, max_bytes: int | None = None
) -> Iterator[ParsedRecord]:
    """Rows of `table` as parsed records, ordered by start time then id; with `day`, only that day.
    A row whose JSON columns together exceed `max_bytes` (default: the settings' record cap) comes
    back without them, measured by the database, and is quarantined by id and size."""
    limit = max_bytes or settings().max_record_bytes
    if engine.dialect.name == "postgresql" and not sa.event.contains(engine, "connect", _json_as_text):
        sa.event.listen(engine, "connect", _json_as_text)
    query = f"SELECT {_select_list(engine, table)} FROM {_quote(engine, table)}"
    params: dict[str, int] = {"cap": limit}
    if day is not None:
        query += " WHERE start_time >= :lo AND start_time < :hi"
        params["lo"], params["hi"] = day_bounds_ms(day)
    query += " ORDER BY start_time, id"
    try:
        with engine.connect() as conn:
            result = conn.execution_options(stream_results=True, yield_per=_BATCH_ROWS).execute(
                sa.text(query), params
            )
            for row in result.mappings():
                yield _row_record(table, dict(row), limit)
    except sa.exc.OperationalError as err:
        raise SourceUnavailable(
            f"trajectory database {engine.url.render_as_string(hide_password=True)} "
            f"is unavailable: {err.orig}"
        ) from err


def first_start_ms(engine: sa.Engine, table: str, at_least: int = 0) -> int | None:
    """The smallest `start_time` of `table` from `at_least` on (None: no such row)."""
    query = f"SELECT MIN(start_time) FROM {_quote(engine, table)} WHERE start_time >= :at_least"
    with engine.connect() as conn:
        smallest = conn.execute(sa.text(query), {"at_least": at_least}).scalar()
    return None if smallest is None else int(smallest)


def _quote(engine: sa.Engine, table: str) -> str:
    return ".".join(engine.dialect.identifier_preparer.quote(part) for part in table.split("."))


def _json_as_text(connection: Any, _record: Any) -> None:
    """psycopg hands `json`/`jsonb` columns over as text: this module parses them, with its own limits
    on depth, instead of the driver failing the whole query on one row."""
    from psycopg.types.json import set_json_loads

    set_json_loads(lambda data: data.decode() if isinstance(data, bytes) else data, connection)


def _select_list(engine: sa.Engine, table: str) -> str:
    """Every column, with the JSON ones left out of rows over the cap (the database measures them, so
    an oversized row never reaches this process) and their total size as `_RECORD_BYTES`."""
    schema, _, name = table.rpartition(".")
    try:
        columns = [c["name"] for c in sa.inspect(engine).get_columns(name, schema=schema or None)]
    except sa.exc.OperationalError as err:
        raise SourceUnavailable(
            f"trajectory database {engine.url.render_as_string(hide_password=True)} "
            f"is unavailable: {err.orig}"
        ) from err
    quote = engine.dialect.identifier_preparer.quote
    as_bytes = (
        "octet_length(CAST({} AS TEXT))"
        if engine.dialect.name == "postgresql"
        else "length(CAST({} AS BLOB))"
    )
    sizes = [f"COALESCE({as_bytes.format(quote(c))}, 0)" for c in columns if c in _JSON_COLUMNS]
    total = " + ".join(sizes) or "0"
    select = [
        f"CASE WHEN {total} > :cap THEN NULL ELSE {quote(c)} END AS {quote(c)}"
        if c in _JSON_COLUMNS
        else quote(c)
        for c in columns
    ]
    return ", ".join([*select, f"{total} AS {_RECORD_BYTES}"])


_RECORD_BYTES = "record_bytes_"


def _row_record(table: str, row: dict[str, Any], limit: int) -> ParsedRecord:
    origin = f"{table}:{row.get('id')}"
    size = int(row.pop(_RECORD_BYTES, 0) or 0)
    if size > limit:
        return parse_record(oversized(origin, size, limit))
    record: dict[str, Any] = {}
    for column, value in row.items():
        if column in _COLUMNS:
            record[_COLUMNS[column]] = value
        elif column in _JSON_COLUMNS:
            field = _JSON_COLUMNS[column]
            try:
                parsed = jscompat.loads(value) if isinstance(value, str | bytes) else value
            except ValueError as err:
                return ParsedRecord(origin, None, None, f"{column}: invalid JSON: {err}", None)
            if field == "steps" and isinstance(parsed, dict):
                parsed = parsed.get("steps")  # elizaOS also stores {"steps": [...]}
            record[field] = parsed
        elif value is not None:
            key = to_camel(column)
            record[key if key not in record and key not in _COLUMNS.values() else column] = value
    if isinstance(record.get("startTime"), str):  # some drivers hand BIGINT back as text
        with contextlib.suppress(ValueError):
            record["startTime"] = int(record["startTime"])
    try:
        text = jscompat.dumps(record)
    except ValueError as err:
        return ParsedRecord(origin, None, None, f"cannot be serialised: {err}", None)
    reason = validation_reason(record)
    start = record.get("startTime")
    day = start_day(start) if isinstance(start, int | float) and reason is None else None
    if reason is not None:
        return ParsedRecord(origin, text, None, reason, day)
    return ParsedRecord(origin, text, record, None, day)


def write_trajectory(engine: sa.Engine, table: str, trajectory: dict[str, Any]) -> None:
    """Insert one trajectory as elizaOS stores it, filling the columns the table has (schemas differ
    between elizaOS versions); a trajectory already there is replaced."""
    steps = trajectory.get("steps") or []
    now = datetime.now(UTC).isoformat()
    row = {
        "id": trajectory["trajectoryId"],
        "trajectory_id": trajectory["trajectoryId"],
        "agent_id": trajectory.get("agentId") or "",
        "source": trajectory.get("source") or "runtime",
        "status": "completed",
        "start_time": int(trajectory["startTime"]),
        "end_time": trajectory.get("endTime"),
        "duration_ms": trajectory.get("durationMs"),
        "step_count": len(steps),
        "llm_call_count": sum(len(step.get("llmCalls") or ()) for step in steps),
        "scenario_id": trajectory.get("scenarioId"),
        "batch_id": trajectory.get("batchId"),
        "steps_json": jscompat.dumps(steps),
        "metadata": jscompat.dumps(trajectory.get("metadata") or {}),
        "created_at": now,
        "updated_at": now,
    }
    schema, _, name = table.rpartition(".")
    try:
        columns = {c["name"] for c in sa.inspect(engine).get_columns(name, schema=schema or None)}
        row = {key: value for key, value in row.items() if key in columns}
        names = ", ".join(row)
        values = ", ".join(f":{key}" for key in row)
        with engine.begin() as conn:
            conn.execute(sa.text(f"DELETE FROM {_quote(engine, table)} WHERE id = :id"), {"id": row["id"]})
            conn.execute(sa.text(f"INSERT INTO {_quote(engine, table)} ({names}) VALUES ({values})"), row)
    except sa.exc.OperationalError as err:
        raise SourceUnavailable(
            f"trajectory database {engine.url.render_as_string(hide_password=True)} "
            f"is unavailable: {err.orig}"
        ) from err
