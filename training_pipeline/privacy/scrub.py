"""Scrubbing what task code left on disk: a run's env databases, logs, work files and artifacts are
redacted in place when the run ends, so a key a script printed into a file, or an agent mailed into
an env, is not kept in clear.

Everything scrubbed was made by task code, so the scrub treats it as hostile:

- it runs in its own confined process (`scrub_confined`: the task sandbox, with the scrub's limits),
  never in the pipeline's: a crafted database that exhausts memory or CPU, or a SQLite bug, stays there;
- a database's triggers are task code: they are dropped before any cell is changed (and
  `trusted_schema` is off), so no update fires one; views and indexes whose text holds a secret are
  made again from their redacted text, or dropped;
- tables are scrubbed by rowid or, `WITHOUT ROWID`, by primary key, streamed a batch of rows at a
  time; table and column names are renamed to their redaction; what the schema still holds in clear
  (a secret in a `DEFAULT`) makes the database one that cannot be scrubbed;
- other files are streamed in segments cut at line ends (a private key block kept whole), never read
  whole; a symlink's target and every file and folder name are redacted too;
- a file that cannot be scrubbed is removed and named, never left in clear.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from training_pipeline.environment import hide_values
from training_pipeline.privacy.stored import safe_bytes, safe_text
from training_pipeline.sandbox.beneath import open_in

__all__ = ["ScrubReport", "scrub_confined", "scrub_folder"]

_SQLITE_HEADER = b"SQLite format 3\x00"
#: Sidecar files SQLite folds back into the database when it is opened and closed.
_SIDECARS = ("-wal", "-shm", "-journal")
#: a file is redacted a segment at a time: segments end at a line end after this many bytes...
SEGMENT = 1024 * 1024
#: ...or at whitespace, or here, for a file without line ends
_HARD_CUT = 4 * SEGMENT
#: a private key block open at a cut keeps the segment going for up to this much more
_PEM_REACH = 128 * 1024
_ROWS = 256


@dataclass
class ScrubReport:
    """What the scrub did, every name already redacted: files changed, files removed (with why)."""

    changed: list[str] = field(default_factory=list)
    removed: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {"changed": self.changed, "removed": self.removed}


def scrub_folder(folder: Path, report: ScrubReport | None = None, prefix: str = "") -> ScrubReport:
    """Redact every file under `folder` in place, names included, in this process; links are never
    followed. Names in the report are relative to `folder` (after `prefix`)."""
    report = report if report is not None else ScrubReport()
    if not folder.is_dir() or folder.is_symlink():
        return report
    # bottom up: a folder is renamed after what it holds
    for top, folders, files, top_fd in os.fwalk(folder, topdown=False, follow_symlinks=False):
        relative = os.path.relpath(top, folder)
        base = "" if relative == "." else relative + "/"
        databases = {name for name in files if _is_sqlite(top_fd, name)}
        sidecars = {f"{db}{suffix}" for db in databases for suffix in _SIDECARS}
        for name in sorted(files):
            if name in sidecars:
                continue
            shown = safe_text(prefix + base + name)
            try:
                if _scrub_entry(top_fd, name, name in databases):
                    report.changed.append(shown)
            except (OSError, sqlite3.Error, ValueError, UnicodeError) as err:
                _remove(top_fd, name, databases)
                report.removed[shown] = safe_text(f"{type(err).__name__}: {err}")[:300]
        for name in [*files, *folders]:
            _rename_if_secret(top_fd, name, report, prefix + base)
    return report


def _is_sqlite(folder: int, name: str) -> bool:
    with contextlib.suppress(OSError, ValueError), open_in(folder, name) as handle:  # links, FIFOs: no
        return handle.read(16) == _SQLITE_HEADER
    return False


def _scrub_entry(folder: int, name: str, database: bool) -> bool:
    info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    if stat.S_ISLNK(info.st_mode):
        target = os.readlink(name, dir_fd=folder)
        clean = safe_text(target)
        if clean == target:
            return False
        os.unlink(name, dir_fd=folder)
        os.symlink(clean, name, dir_fd=folder)
        return True
    if not stat.S_ISREG(info.st_mode):
        return False  # a socket or a FIFO holds nothing once its processes are gone
    if database:
        return _scrub_sqlite(folder, name)
    return _scrub_stream(folder, name)


def _remove(folder: int, name: str, databases: set[str]) -> None:
    for doomed in [name, *((f"{name}{suffix}" for suffix in _SIDECARS) if name in databases else ())]:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(doomed, dir_fd=folder)


def _rename_if_secret(folder: int, name: str, report: ScrubReport, base: str) -> None:
    clean = safe_text(name).replace("/", "_")
    if clean == name:
        return
    target = clean
    try:
        while True:  # never over another entry
            try:
                os.stat(target, dir_fd=folder, follow_symlinks=False)
            except FileNotFoundError:
                break
            target = f"{clean}.{secrets.token_hex(3)}"
        os.rename(name, target, src_dir_fd=folder, dst_dir_fd=folder)
    except FileNotFoundError:
        return  # removed above: it could not be scrubbed
    except OSError as err:  # the redacted name cannot be (too long, say): the entry cannot stay
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISDIR(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode):
                shutil.rmtree(name, dir_fd=folder)
            else:
                os.unlink(name, dir_fd=folder)
        report.removed[safe_text(base + name)] = f"its name could not be redacted: {err.strerror}"
        return
    report.changed.append(safe_text(base + target))


# --- files ---


def segments(handle: BinaryIO) -> Iterator[bytes]:
    """The file's bytes in pieces that a redaction can take one at a time: each ends at a line end once
    past `SEGMENT` bytes (else at whitespace, else at `_HARD_CUT`), and a piece where a private key
    block begins and has not ended goes on until it does (up to `_PEM_REACH` more)."""
    pending = b""
    while chunk := handle.read(SEGMENT):
        pending += chunk
        while len(pending) >= SEGMENT:
            cut = _cut(pending)
            if cut is None:
                break
            yield pending[:cut]
            pending = pending[cut:]
    if pending:
        yield pending


def _cut(data: bytes) -> int | None:
    """Where to end the segment at the start of `data`, or None to read more first."""
    cut = data.rfind(b"\n") + 1
    if not cut:
        if len(data) < _HARD_CUT:
            return None
        cut = max(data.rfind(b" "), data.rfind(b"\t")) + 1 or _HARD_CUT
    head = data[:cut]
    begin = head.rfind(b"-----BEGIN")
    if begin >= 0 and head.find(b"-----END", begin) < 0:
        end = data.find(b"-----END", begin)
        if end >= 0:
            line = data.find(b"\n", end)
            return line + 1 if line >= 0 else None
        if len(data) - begin < _PEM_REACH:
            return None  # the block may end in what comes next
    return cut


def _scrub_stream(folder: int, name: str) -> bool:
    """The file redacted a segment at a time into a new file beside it, renamed over it if anything
    changed. Returns whether it did."""
    temporary = f".{name[:100]}.{secrets.token_hex(6)}.scrub"
    changed = False
    with open_in(folder, name) as source:
        mode = os.fstat(source.fileno()).st_mode & 0o777
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=folder)
        try:
            with os.fdopen(fd, "wb") as out:
                for segment in segments(source):
                    clean = safe_bytes(segment)
                    changed = changed or clean != segment
                    out.write(clean)
            if changed:
                os.chmod(temporary, mode, dir_fd=folder)
                os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
                return True
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary, dir_fd=folder)
    return False


# --- SQLite ---


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _scrub_sqlite(folder: int, name: str) -> bool:
    """Every text and blob cell redacted, then names and the schema; freed pages zeroed and the file
    rebuilt, so old values are not left in free space or the write-ahead log."""
    path = f"/proc/self/fd/{folder}/{name}"
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA trusted_schema = OFF")  # no function with side effects in the schema runs
        db.execute("PRAGMA secure_delete = ON")
        changed = _drop_triggers(db)
        tables = [
            row[0]
            for row in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND sql NOT LIKE 'CREATE VIRTUAL%'"
            )
        ]
        for table in tables:
            changed = _scrub_table(db, table) or changed
        changed = _scrub_names(db, tables) or changed
        changed = _scrub_schema_objects(db) or changed
        left = [
            safe_text(f"{kind} {row_name}")
            for kind, row_name, sql in db.execute("SELECT type, name, sql FROM sqlite_master")
            if safe_text(row_name) != row_name or (sql is not None and safe_text(sql) != sql)
        ]
        if left:
            raise ValueError(f"the schema keeps a secret where it cannot be redacted: {', '.join(left[:3])}")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        if changed:
            db.execute("VACUUM")
    finally:
        db.close()
    for suffix in _SIDECARS:  # folded in above; an empty leftover goes too
        with contextlib.suppress(OSError):
            if os.stat(f"{name}{suffix}", dir_fd=folder, follow_symlinks=False).st_size == 0:
                os.unlink(f"{name}{suffix}", dir_fd=folder)
    return changed


def _drop_triggers(db: sqlite3.Connection) -> bool:
    triggers = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")]
    for trigger in triggers:
        db.execute(f"DROP TRIGGER {_quoted(trigger)}")
    return bool(triggers)


def _clean(value: object) -> object:
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, bytes):
        return safe_bytes(value)
    return value


def _scrub_table(db: sqlite3.Connection, table: str) -> bool:
    quoted = _quoted(table)
    info = list(db.execute(f"PRAGMA table_xinfo({quoted})"))  # cid, name, type, notnull, default, pk, hidden
    columns = [row[1] for row in info if row[6] == 0]  # generated and hidden columns are not set
    keys = [row[1] for row in sorted(info, key=lambda row: row[5]) if row[5] > 0]
    try:
        db.execute(f"SELECT rowid FROM {quoted} LIMIT 0")
        keys, where = ["rowid"], "rowid = ?"
    except sqlite3.OperationalError:  # WITHOUT ROWID: by its primary key
        where = " AND ".join(f"{_quoted(key)} IS ?" for key in keys)
    selected = ", ".join(
        [*(_quoted(key) if key != "rowid" else "rowid" for key in keys), *map(_quoted, columns)]
    )
    updates: list[tuple[list[object], dict[str, object]]] = []
    cursor = db.execute(f"SELECT {selected} FROM {quoted}")
    while rows := cursor.fetchmany(_ROWS):
        for row in rows:
            key, values = list(row[: len(keys)]), row[len(keys) :]
            changes = {}
            for column, value in zip(columns, values, strict=True):
                clean = _clean(value)
                if clean != value:
                    changes[column] = clean
            if changes:
                updates.append((key, changes))
    if not updates:
        return False
    db.execute("BEGIN")
    for key, changes in updates:
        assignments = ", ".join(f"{_quoted(column)} = ?" for column in changes)
        db.execute(f"UPDATE {quoted} SET {assignments} WHERE {where}", [*changes.values(), *key])
    db.execute("COMMIT")
    return True


def _scrub_names(db: sqlite3.Connection, tables: list[str]) -> bool:
    changed = False
    for table in tables:
        current = table
        clean = safe_text(table)
        if clean != table:
            db.execute(f"ALTER TABLE {_quoted(table)} RENAME TO {_quoted(clean)}")
            current, changed = clean, True
        for row in list(db.execute(f"PRAGMA table_xinfo({_quoted(current)})")):
            column = row[1]
            clean = safe_text(column)
            if clean != column:
                db.execute(
                    f"ALTER TABLE {_quoted(current)} RENAME COLUMN {_quoted(column)} TO {_quoted(clean)}"
                )
                changed = True
    return changed


def _scrub_schema_objects(db: sqlite3.Connection) -> bool:
    """Views and indexes whose name or text holds a secret: made again from the redacted text, or
    dropped when that text is no longer valid."""
    changed = False
    rows = list(
        db.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE type IN ('view', 'index') AND sql IS NOT NULL"
        )
    )
    for kind, name, sql in rows:
        if safe_text(name) == name and safe_text(sql) == sql:
            continue
        db.execute(f"DROP {kind.upper()} {_quoted(name)}")
        with contextlib.suppress(sqlite3.Error):
            db.execute(safe_text(sql))
        changed = True
    return changed


# --- the confined process ---

#: what the scrub's process may use: it rebuilds a database (twice its size on disk, briefly) and
#: redacts a segment of a file at a time
SCRUB_CPU_SECONDS = 600
SCRUB_MEMORY_MB = 2048
SCRUB_FILE_SIZE_MB = 8192


def scrub_confined(
    run_dir: Path, folders: tuple[str, ...], env_secrets: tuple[str, ...], timeout: float = 900
) -> ScrubReport:
    """Scrub `folders` of `run_dir` in a confined process (the task sandbox: nothing of the host but
    the Python installation and this package, read-only, and the run's folder), so nothing task code
    left behind runs, or uses memory and CPU, in the pipeline's process. The environment's secret
    values reach the scrub on its standard input. When the process fails (a limit, a crash), every
    file of those folders is removed: none is left in clear."""
    from training_pipeline.environment import cache_dir
    from training_pipeline.sandbox import Limits, Sandbox, SandboxError
    from training_pipeline.sandbox.confine import ended

    package = Path(__file__).resolve().parents[1]
    readonly = [package]
    if cache_dir().is_dir():
        readonly.append(cache_dir().resolve())
    sandbox = Sandbox(
        run_dir,
        Limits(
            cpu_seconds=SCRUB_CPU_SECONDS,
            memory_mb=SCRUB_MEMORY_MB,
            processes=8,
            file_size_mb=SCRUB_FILE_SIZE_MB,
        ),
        readonly=tuple(readonly),
        env={"XDG_CACHE_HOME": str(cache_dir().resolve().parent)},
    )
    if not any((run_dir / folder).is_dir() for folder in folders):
        return ScrubReport()  # nothing was left behind: no process to start
    try:
        process = sandbox.spawn(
            [sys.executable, "-I", "-m", "training_pipeline.privacy.scrub", *folders],
            lifeline="starter",
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except (SandboxError, OSError) as error:  # no bubblewrap: nothing may be left unscrubbed instead
        return _removed_all(run_dir, folders, safe_text(f"the scrub could not start: {error}"))
    try:
        out, err = process.communicate(json.dumps(list(env_secrets)).encode(), timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # the whole sandbox: it runs in its own session
        out, err = process.communicate()
    finally:
        ended(process.pid)
    if process.returncode == 0:
        try:
            done = json.loads(out)
            return ScrubReport(list(done["changed"]), dict(done["removed"]))
        except (ValueError, KeyError, TypeError):
            pass
    reason = safe_text(f"the scrub failed (exit {process.returncode}): {err.decode(errors='replace')[-300:]}")
    return _removed_all(run_dir, folders, reason)


def _removed_all(run_dir: Path, folders: tuple[str, ...], reason: str) -> ScrubReport:
    report = ScrubReport()
    for folder in folders:
        _remove_all(run_dir / folder, folder, reason, report)
    return report


def _remove_all(folder: Path, prefix: str, reason: str, report: ScrubReport) -> None:
    if not folder.is_dir() or folder.is_symlink():
        return
    for top, folders, files, top_fd in os.fwalk(folder, topdown=False, follow_symlinks=False):
        relative = os.path.relpath(top, folder)
        base = "" if relative == "." else relative + "/"
        for name in files:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=top_fd)
            report.removed[safe_text(f"{prefix}/{base}{name}")] = reason
        for name in folders:
            with contextlib.suppress(OSError):
                os.rmdir(name, dir_fd=top_fd)


def _main(folders: list[str]) -> int:
    """In the confined process: the secret values from stdin, each folder scrubbed, the report out."""
    hide_values(json.loads(sys.stdin.read() or "[]"))
    report = ScrubReport()
    for folder in folders:
        scrub_folder(Path(folder), report, prefix=f"{folder}/")
    json.dump(report.to_dict(), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
