"""What task code leaves on disk is scrubbed when its run ends: SQLite cells (the write-ahead log and
free pages included), text and binary files; a file that cannot be scrubbed does not stop the rest."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.planted_secrets import IN_TRAJECTORY
from training_pipeline.privacy.scrub import scrub_folder

SECRET = IN_TRAJECTORY[1]  # a GitHub token


def test_databases_and_files_are_redacted_in_place(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "env.sqlite")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE emails (body TEXT, raw BLOB)")
    db.execute("INSERT INTO emails VALUES (?, ?)", (f"the key is {SECRET}", f"raw {SECRET}".encode()))
    db.commit()  # left in the write-ahead log, the connection never closed, as a killed env leaves it
    (tmp_path / "notes.txt").write_text(f"token: {SECRET}\n")
    (tmp_path / "dump.bin").write_bytes(b"\xff\xfe" + SECRET.encode() + b"\x00\x01")
    changed = scrub_folder(tmp_path)
    db.close()
    assert {p.name for p in changed} == {"env.sqlite", "notes.txt", "dump.bin"}
    for path in tmp_path.iterdir():
        assert SECRET.encode() not in path.read_bytes(), path.name
    with sqlite3.connect(tmp_path / "env.sqlite") as check:
        assert check.execute("SELECT body FROM emails").fetchone()[0] == "the key is <REDACTED:github-token>"


def test_a_file_that_cannot_be_scrubbed_is_named_and_the_rest_is_scrubbed(tmp_path: Path) -> None:
    (tmp_path / "broken.sqlite").write_bytes(b"SQLite format 3\x00" + b"\x07" * 200)  # not a database
    (tmp_path / "open.txt").write_text(SECRET)
    with pytest.raises(OSError, match=r"broken\.sqlite"):
        scrub_folder(tmp_path)
    assert SECRET not in (tmp_path / "open.txt").read_text()
