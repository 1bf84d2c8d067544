"""Scrubbing what task code left on disk: a run's env databases, logs and work files are redacted
in place when the run ends, so a key a script printed into a file, or an agent mailed into an env,
is not kept in clear. Env servers and scripts are task code: they write what they like while they
run; what stays afterwards goes through the same redaction as everything else stored."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from training_pipeline.atomic import atomic_open
from training_pipeline.privacy.stored import safe_bytes, stored_filter

_SQLITE_HEADER = b"SQLite format 3\x00"
#: Sidecar files SQLite folds back into the database when it is opened and closed.
_SIDECARS = ("-wal", "-shm", "-journal")


def scrub_folder(folder: Path) -> list[Path]:
    """Redact every file under `folder` in place; returns the files that changed. A file that cannot
    be scrubbed does not stop the others; they are named in the `OSError` raised at the end."""
    changed: list[Path] = []
    failed: list[str] = []
    if not folder.is_dir():
        return changed
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
    databases = [p for p in files if _is_sqlite(p)]
    sidecars = {Path(f"{db}{suffix}") for db in databases for suffix in _SIDECARS}
    for path in files:
        if path in sidecars or not path.exists():
            continue
        try:
            if _scrub_sqlite(path) if path in databases else _scrub_file(path):
                changed.append(path)
        except (OSError, sqlite3.Error) as err:
            failed.append(f"{path}: {err}")
    if failed:
        raise OSError(f"{len(failed)} file(s) could not be scrubbed: {'; '.join(failed[:5])}")
    return changed


def _is_sqlite(path: Path) -> bool:
    with contextlib.suppress(OSError), path.open("rb") as handle:
        return handle.read(16) == _SQLITE_HEADER
    return False


def _scrub_sqlite(path: Path) -> bool:
    """Every text and blob cell redacted; freed pages zeroed and the file rebuilt, so the old values
    are not left in free space or the write-ahead log."""
    redactor = stored_filter()
    changed = False
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA secure_delete = ON")
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            if table.startswith("sqlite_"):
                continue
            quoted = '"' + table.replace('"', '""') + '"'
            columns = [row[1] for row in db.execute(f"PRAGMA table_info({quoted})")]
            db.execute("BEGIN")
            for row in db.execute(f"SELECT rowid, * FROM {quoted}").fetchall():
                updates = {}
                for column, value in zip(columns, row[1:], strict=True):
                    if isinstance(value, str):
                        clean: str | bytes = redactor.redact(value)
                    elif isinstance(value, bytes):
                        clean = safe_bytes(value)
                    else:
                        continue
                    if clean != value:
                        updates[column] = clean
                if updates:
                    assignments = ", ".join('"' + c.replace('"', '""') + '" = ?' for c in updates)
                    db.execute(
                        f"UPDATE {quoted} SET {assignments} WHERE rowid = ?", [*updates.values(), row[0]]
                    )
                    changed = True
            db.execute("COMMIT")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        if changed:
            db.execute("VACUUM")
    finally:
        db.close()
    for suffix in _SIDECARS:  # folded in above; an empty leftover goes too
        sidecar = Path(f"{path}{suffix}")
        with contextlib.suppress(OSError):
            if sidecar.stat().st_size == 0:
                sidecar.unlink()
    return changed


def _scrub_file(path: Path) -> bool:
    data = path.read_bytes()
    clean = safe_bytes(data)
    if clean == data:
        return False
    mode = path.stat().st_mode & 0o777
    with atomic_open(path, "wb") as handle:
        handle.write(clean)
    os.chmod(path, mode)
    return True
