"""What task code leaves on disk is scrubbed when its run ends: SQLite cells (the write-ahead log and
free pages included), text and binary files, names; and since all of it was made by task code, the
scrub runs none of it (a trigger), holds no file whole, leaves nothing it cannot scrub in clear, and
runs confined with limits of its own."""

from __future__ import annotations

import os
import sqlite3
import time
import tracemalloc
from pathlib import Path

import pytest

from tests.planted_secrets import IN_TRAJECTORY
from training_pipeline.privacy import scrub
from training_pipeline.privacy.scrub import scrub_confined, scrub_folder

SECRET = IN_TRAJECTORY[1]  # a GitHub token


def _bytes_under(folder: Path) -> list[tuple[str, bytes]]:
    return [(str(p), p.read_bytes()) for p in folder.rglob("*") if p.is_file() and not p.is_symlink()]


def test_databases_and_files_are_redacted_in_place(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "env.sqlite")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE emails (body TEXT, raw BLOB)")
    db.execute("INSERT INTO emails VALUES (?, ?)", (f"the key is {SECRET}", f"raw {SECRET}".encode()))
    db.commit()  # left in the write-ahead log, the connection never closed, as a killed env leaves it
    (tmp_path / "notes.txt").write_text(f"token: {SECRET}\n")
    (tmp_path / "dump.bin").write_bytes(b"\xff\xfe" + SECRET.encode() + b"\x00\x01")
    report = scrub_folder(tmp_path)
    db.close()
    assert set(report.changed) == {"env.sqlite", "notes.txt", "dump.bin"} and report.removed == {}
    for path in tmp_path.iterdir():
        assert SECRET.encode() not in path.read_bytes(), path.name
    with sqlite3.connect(tmp_path / "env.sqlite") as check:
        assert check.execute("SELECT body FROM emails").fetchone()[0] == "the key is <REDACTED:github-token>"


def test_a_file_that_cannot_be_scrubbed_is_removed_and_named(tmp_path: Path) -> None:
    (tmp_path / "broken.sqlite").write_bytes(b"SQLite format 3\x00" + SECRET.encode() + b"\x07" * 200)
    (tmp_path / "open.txt").write_text(SECRET)
    report = scrub_folder(tmp_path)
    assert list(report.removed) == ["broken.sqlite"] and not (tmp_path / "broken.sqlite").exists()
    assert SECRET not in (tmp_path / "open.txt").read_text()


def test_a_trigger_never_fires_in_the_scrub(tmp_path: Path) -> None:
    """A trigger that writes hundreds of megabytes on any update (it did, in the pipeline's process)."""
    db = sqlite3.connect(tmp_path / "env.sqlite")
    db.executescript(
        f"""
        CREATE TABLE t (body TEXT);
        CREATE TABLE sink (blob BLOB);
        CREATE TRIGGER bomb AFTER UPDATE ON t BEGIN
            INSERT INTO sink WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
            SELECT randomblob(1000000) FROM n;
        END;
        INSERT INTO t VALUES ('key {SECRET}');
        """
    )
    db.close()
    started = time.monotonic()
    report = scrub_folder(tmp_path)
    assert time.monotonic() - started < 5
    assert report.changed == ["env.sqlite"] and (tmp_path / "env.sqlite").stat().st_size < 100_000
    with sqlite3.connect(tmp_path / "env.sqlite") as check:
        assert check.execute("SELECT count(*) FROM sink").fetchone()[0] == 0
        assert check.execute("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'").fetchone()[0] == 0


def test_without_rowid_tables_names_and_file_names_are_scrubbed(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "env.sqlite")
    db.executescript(
        f"""
        CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID;
        INSERT INTO kv VALUES ('a', 'value {SECRET}'), ('{SECRET}', 'its key is a secret');
        CREATE TABLE "cache_{SECRET}" ("col_{SECRET}" TEXT, plain TEXT);
        INSERT INTO "cache_{SECRET}" VALUES ('x', 'y');
        CREATE INDEX "idx_{SECRET}" ON kv (v);
        CREATE VIEW "view_{SECRET}" AS SELECT v FROM kv;
        """
    )
    db.close()
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / f"{SECRET}.cache").write_text("clean")
    (tmp_path / f"dir_{SECRET}").mkdir()
    (tmp_path / f"dir_{SECRET}" / "f.txt").write_text("clean")
    (tmp_path / "pointer").symlink_to(f"/nowhere/{SECRET}")
    report = scrub_folder(tmp_path)
    assert report.removed == {}
    for _root, folders, files in os.walk(tmp_path):
        for name in [*folders, *files]:
            assert SECRET not in name, name
    assert SECRET not in os.readlink(tmp_path / "pointer")
    assert all(SECRET.encode() not in data for _, data in _bytes_under(tmp_path))
    assert all(SECRET not in name for name in report.changed)
    with sqlite3.connect(tmp_path / "env.sqlite") as check:
        assert sorted(check.execute("SELECT k, v FROM kv")) == [
            ("<REDACTED:github-token>", "its key is a secret"),
            ("a", "value <REDACTED:github-token>"),
        ]
        assert check.execute("SELECT count(*) FROM sqlite_master WHERE type = 'view'").fetchone()[0] == 1


def test_a_secret_the_schema_keeps_makes_the_database_go(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "env.sqlite")
    db.execute(f"CREATE TABLE t (v TEXT DEFAULT 'uses {SECRET}')")
    db.close()
    report = scrub_folder(tmp_path)
    assert list(report.removed) == ["env.sqlite"] and "schema" in report.removed["env.sqlite"]
    assert not (tmp_path / "env.sqlite").exists()


def test_a_large_file_is_streamed_not_held_whole(tmp_path: Path) -> None:
    line = b"an ordinary log line of the env, nothing to see here at all\n"
    big = tmp_path / "env.log"
    with big.open("wb") as out:
        for index in range(40 * 1024 * 1024 // len(line)):
            out.write(line if index != 300_000 else f"token {SECRET}\n".encode())
    tracemalloc.start()
    try:
        report = scrub_folder(tmp_path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert report.changed == ["env.log"]
    assert peak < 24 * 1024 * 1024  # a 40 MB file, a few segments at a time
    assert SECRET.encode() not in big.read_bytes() and big.stat().st_size > 40_000_000


def test_segments_keep_a_private_key_block_whole() -> None:
    import io

    block = b"-----BEGIN RSA PRIVATE KEY-----\n" + b"QUJD" * 16 * 200 + b"\n-----END RSA PRIVATE KEY-----\n"
    data = b"x" * (scrub.SEGMENT - 100) + b"\n" + block + b"y\n" * 10
    pieces = list(scrub.segments(io.BytesIO(data)))
    assert b"".join(pieces) == data
    assert any(block in piece for piece in pieces)


@pytest.mark.skipif(not Path("/usr/bin/bwrap").exists(), reason="bubblewrap is what confines the scrub")
def test_the_scrub_runs_confined_and_a_failure_leaves_nothing_in_clear(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "work" / "step").mkdir(parents=True)
    (run / "work" / "step" / "out.txt").write_text(f"printed {SECRET} and an env value planted-123456789\n")
    report = scrub_confined(run, ("work", "envs"), ("planted-123456789",))
    assert report.removed == {} and report.changed == ["work/step/out.txt"]
    text = (run / "work" / "step" / "out.txt").read_text()
    assert SECRET not in text and "planted-123456789" not in text
    # a scrub that cannot finish (here: out of time before it starts) removes what it could not redact
    (run / "work" / "step" / "again.txt").write_text(SECRET)
    report = scrub_confined(run, ("work",), (), timeout=0.05)
    assert "work/step/again.txt" in report.removed and "work/step/out.txt" in report.removed
    assert not any(SECRET.encode() in data for _, data in _bytes_under(run))


def test_without_bubblewrap_what_cannot_be_scrubbed_is_removed(tmp_path: Path, monkeypatch) -> None:
    from training_pipeline.sandbox import confine

    run = tmp_path / "run"
    (run / "work").mkdir(parents=True)
    (run / "work" / "out.txt").write_text(SECRET)
    monkeypatch.setattr(confine.shutil, "which", lambda name: None)
    report = scrub_confined(run, ("work", "envs"), ())
    assert list(report.removed) == ["work/out.txt"] and "bubblewrap" in report.removed["work/out.txt"]
    assert not (run / "work" / "out.txt").exists()
    assert scrub_confined(tmp_path / "empty-run", ("work",), ()).to_dict() == {"changed": [], "removed": {}}


def test_a_name_whose_redaction_cannot_be_a_name_goes(tmp_path: Path) -> None:
    """Placeholders are longer than some keys: a name near the 255-byte limit cannot take one."""
    key = "AKIAPMK9MY4F0DGGC6QP"  # 20 characters, its placeholder 25
    name = f"{key}-" + "n" * (254 - len(key))
    (tmp_path / name).write_text("clean")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / name).mkdir()
    (tmp_path / "d" / name / "inner.txt").write_text("x")
    report = scrub_folder(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"] and list((tmp_path / "d").iterdir()) == []
    assert len(report.removed) == 2 and all(key not in removed for removed in report.removed)
