"""The run-scoped store behind a task run: one SQLite file per run, shared by every process of it.

It keeps each step's status and attempts, every diff a step made to the context (undone by marking it
reverted, so a retry can roll back) and run-wide flags (abort, an ongoing retry reset). The context
itself is the replay of the live diffs; every diff is stored in its safe form (credentials redacted),
so the file holds nothing a step's output leaked. Envs need no tokens: their sockets are their doors.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from training_pipeline.privacy.stored import safe_text, safe_value
from training_pipeline.tasks.context import Ops, apply

_SCHEMA = """
CREATE TABLE IF NOT EXISTS steps (
    step_id TEXT PRIMARY KEY, status TEXT NOT NULL DEFAULT 'pending', attempts INTEGER NOT NULL DEFAULT 0,
    started_at REAL, finished_at REAL, error TEXT, heartbeat_at REAL);
CREATE TABLE IF NOT EXISTS diffs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, step_id TEXT, attempt INTEGER, ops TEXT NOT NULL,
    reverted INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS flags (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
#: A step is done with when it reaches one of these (`lost`: its process died without a word).
TERMINAL = ("succeeded", "failed", "tolerated", "skipped", "lost")
#: Flags naming a process group the run started (envs, the local model), stopped when the run ends.
PROCESS_FLAG = "process:"
#: Flags of a run that has ended, or of processes it ran, which a continuation of it does not inherit.
_RUN_ENDING_FLAGS = ("abort", "finished", "resetting", "local_llm", PROCESS_FLAG)
#: The run's own records of a step (its failures, its retries), dropped when that step runs again.
_STEP_RECORDS = (["failed_steps"], ["retry_resets"])


def _without_records_of(ops: Ops, steps: set[str]) -> Ops:
    return [
        op
        for op in ops
        if not (op["op"] == "append" and op["path"] in _STEP_RECORDS and op["value"].get("step_id") in steps)
    ]


class ContextStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        db = self._connect()
        try:
            db.executescript(_SCHEMA)  # idempotent; every op of the run opens the store
        finally:
            db.close()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        return db

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken up front so concurrent processes serialise instead of deadlocking."""
        db = self._connect()
        try:
            db.execute("BEGIN IMMEDIATE")
            yield db
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        finally:
            db.close()

    def ensure_steps(self, step_ids: Sequence[str]) -> None:
        with self._tx() as db:
            db.executemany("INSERT OR IGNORE INTO steps (step_id) VALUES (?)", [(s,) for s in step_ids])

    def continue_from(self, parent: Path, rerun: set[str], parent_run_id: str) -> bool:
        """Start this run as the continuation of a finished one (a Dagster re-execution of some of its
        steps): the parent's steps, live diffs and flags, less what the steps in `rerun` did,
        which are pending again (a step neither done then nor in `rerun` is skipped, so the run can end).
        Leaves the `resetting` flag set, so no step starts before the caller
        has revived the envs and dropped it. False when the run was already continued (another op did
        it first); the parent's store is only read."""
        source = sqlite3.connect(f"file:{parent}?mode=ro", uri=True)
        try:
            steps = source.execute("SELECT * FROM steps").fetchall()
            diffs = source.execute(
                "SELECT step_id, attempt, ops FROM diffs WHERE reverted = 0 ORDER BY seq"
            ).fetchall()
            flags = source.execute("SELECT key, value FROM flags").fetchall()
        finally:
            source.close()
        with self._tx() as db:
            if db.execute("SELECT 1 FROM flags WHERE key = 'continued_from'").fetchone():
                return False
            db.execute("DELETE FROM steps")
            db.executemany(
                "INSERT INTO steps VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (row[0], "pending", row[2], None, None, None, None)
                    if row[0] in rerun
                    # not run then and not selected now: it will not run in this run either
                    else (row if row[1] in TERMINAL else (row[0], "skipped", *row[2:]))
                    for row in steps
                ],
            )
            kept = [
                (step_id, attempt, json.dumps(ops))
                for step_id, attempt, text in diffs
                if step_id not in rerun and (ops := _without_records_of(json.loads(text), rerun))
            ]
            db.executemany("INSERT INTO diffs (step_id, attempt, ops) VALUES (?, ?, ?)", kept)
            db.executemany(
                "INSERT OR REPLACE INTO flags VALUES (?, ?)",
                [(key, value) for key, value in flags if not key.startswith(_RUN_ENDING_FLAGS)],
            )
            db.executemany(
                "INSERT OR REPLACE INTO flags VALUES (?, ?)",
                [("continued_from", parent_run_id), ("resetting", "continuation")],
            )
        return True

    # --- the context -------------------------------------------------------------------------------

    def state(self, db: sqlite3.Connection | None = None) -> dict[str, Any]:
        state: dict[str, Any] = {}
        if db is None:
            with self._tx() as db:
                return self.state(db)
        for (ops,) in db.execute("SELECT ops FROM diffs WHERE reverted = 0 ORDER BY seq"):
            apply(state, json.loads(ops))
        return state

    def commit(self, step_id: str | None, attempt: int, ops: Ops) -> None:
        """Record a diff; `step_id` None is the run's own bookkeeping, which no retry undoes."""
        if ops:
            with self._tx() as db:
                db.execute(
                    "INSERT INTO diffs (step_id, attempt, ops) VALUES (?, ?, ?)",
                    (step_id, attempt, json.dumps(safe_value(ops))),
                )

    def revert(self, step_ids: set[str]) -> Ops:
        """Take back every live diff of these steps; returns the ops taken back."""
        with self._tx() as db:
            marks = ",".join("?" * len(step_ids))
            rows = db.execute(
                f"SELECT seq, ops FROM diffs WHERE reverted = 0 AND step_id IN ({marks})", tuple(step_ids)
            ).fetchall()
            db.executemany("UPDATE diffs SET reverted = 1 WHERE seq = ?", [(seq,) for seq, _ in rows])
        return [op for _, ops in rows for op in json.loads(ops)]

    # --- steps -------------------------------------------------------------------------------------

    def try_start(self, step_id: str, owner: str | None = None) -> tuple[str, int, dict[str, Any]]:
        """("run", attempt, context) and the step is running; ("aborted", 0, {}) once the run is
        aborting (the step is marked skipped); ("wait", 0, {}) while another step is rolling the run
        back for a retry (`owner` is that step's own pass)."""
        with self._tx() as db:
            flags = dict(db.execute("SELECT key, value FROM flags").fetchall())
            if "abort" in flags:
                db.execute(
                    "UPDATE steps SET status = 'skipped', finished_at = ? WHERE step_id = ?",
                    (time.time(), step_id),
                )
                return "aborted", 0, {}
            if flags.get("resetting", owner) != owner:
                return "wait", 0, {}
            now = time.time()
            db.execute(
                "UPDATE steps SET status = 'running', attempts = attempts + 1, started_at = ?, "
                "heartbeat_at = ?, finished_at = NULL, error = NULL WHERE step_id = ?",
                (now, now, step_id),
            )
            (attempt,) = db.execute("SELECT attempts FROM steps WHERE step_id = ?", (step_id,)).fetchone()
            return "run", attempt, self.state(db)

    def finish(self, step_id: str, status: str, error: str | None = None) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE steps SET status = ?, finished_at = ?, error = ? WHERE step_id = ?",
                (status, time.time(), None if error is None else safe_text(error), step_id),
            )

    def beat(self, step_id: str) -> None:
        """A running step's sign of life, so a step whose process died can be told from a slow one."""
        with self._tx() as db:
            db.execute("UPDATE steps SET heartbeat_at = ? WHERE step_id = ?", (time.time(), step_id))

    def running(self, stale_after: float) -> tuple[set[str], set[str]]:
        """Steps marked running: (alive, silent for longer than `stale_after` seconds)."""
        with self._tx() as db:
            rows = db.execute("SELECT step_id, heartbeat_at FROM steps WHERE status = 'running'").fetchall()
        cutoff = time.time() - stale_after
        alive = {step_id for step_id, beat in rows if (beat or 0) >= cutoff}
        return alive, {step_id for step_id, _ in rows} - alive

    def statuses(self) -> dict[str, str]:
        with self._tx() as db:
            return dict(db.execute("SELECT step_id, status FROM steps").fetchall())

    def attempts(self, step_id: str) -> int:
        with self._tx() as db:
            row = db.execute("SELECT attempts FROM steps WHERE step_id = ?", (step_id,)).fetchone()
        return row[0] if row else 0

    # --- flags -----------------------------------------------------------------------------------

    def take_flag(self, key: str, value: str) -> bool:
        """Set a flag unless it is set already; True when this call set it."""
        with self._tx() as db:
            return db.execute("INSERT OR IGNORE INTO flags VALUES (?, ?)", (key, value)).rowcount == 1

    def set_flag(self, key: str, value: str) -> None:
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO flags VALUES (?, ?)", (key, value))

    def drop_flag(self, key: str) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM flags WHERE key = ?", (key,))

    def flags(self) -> dict[str, str]:
        with self._tx() as db:
            return dict(db.execute("SELECT key, value FROM flags").fetchall())

    def flag(self, key: str) -> str | None:
        with self._tx() as db:
            row = db.execute("SELECT value FROM flags WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None
