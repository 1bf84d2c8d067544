"""Copies on shared storage (an fsspec URL; here `file://`, S3 in the deployment test): whole files under
their real names, a day complete when its summary is there, nothing stale or temporary left."""

from __future__ import annotations

from pathlib import Path

import pytest

from training_pipeline.shared_storage import SharedStorage, public_url


def _day(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def _contents(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in folder.iterdir()}


def test_a_republished_day_replaces_the_old_one_whole(tmp_path: Path) -> None:
    shared = SharedStorage(f"file://{tmp_path}/shared/")
    local = tmp_path / "local"
    _day(local, {"a.jsonl": "1\n", "b.jsonl": "2\n", "summary.json": "{}"})
    urls = shared.put_folder(local, "datasets", "2026-11-24", last="summary.json")
    assert urls[-1] == f"file://{tmp_path}/shared/datasets/2026-11-24/summary.json"

    _day(local, {"a.jsonl": "1\n1\n", "summary.json": '{"v": 2}'})
    shared.put_folder(local, "datasets", "2026-11-24", last="summary.json")
    assert _contents(tmp_path / "shared" / "datasets" / "2026-11-24") == _contents(local)  # b.jsonl gone


def test_a_failed_upload_leaves_the_day_visibly_incomplete(tmp_path: Path) -> None:
    shared = SharedStorage(str(tmp_path / "shared"))
    local = _day(tmp_path / "local", {"a.jsonl": "1\n", "b.jsonl": "2\n", "summary.json": "{}"})
    shared.put_folder(local, "d", last="summary.json")
    (local / "b.jsonl").unlink()
    (local / "b.jsonl").symlink_to("/proc/self/mem")  # a file whose reading fails (EIO at offset 0)
    with pytest.raises(OSError):
        shared.put_folder(local, "d", last="summary.json")
    left = _contents(tmp_path / "shared" / "d")
    assert left == {"a.jsonl": "1\n", "b.jsonl": "2\n"}  # no summary, so readers know; no temporary left


def test_an_incomplete_local_folder_is_refused(tmp_path: Path) -> None:
    local = _day(tmp_path / "local", {"a.jsonl": "1\n"})
    with pytest.raises(FileNotFoundError, match=r"summary\.json is missing"):
        SharedStorage(str(tmp_path / "shared")).put_folder(local, "d", last="summary.json")


def test_urls_shown_never_carry_a_password() -> None:
    url = "webdav://user:hunter2hunter2@files.example.com:8443/share"
    assert public_url(url) == "webdav://files.example.com:8443/share"
    assert public_url("s3://bucket/prefix") == "s3://bucket/prefix"


def test_a_days_format_folders_travel_with_it_and_stale_ones_go(tmp_path: Path) -> None:
    shared = SharedStorage(f"file://{tmp_path}/shared")
    local = _day(tmp_path / "local", {"a.jsonl": "1\n", "summary.json": "{}"})
    (local / "parquet").mkdir()
    (local / "parquet" / "a.parquet").write_text("PAR1")
    (local / "parquet" / "b.parquet").write_text("PAR1")
    shared.put_folder(local, "d", last="summary.json")
    copied = tmp_path / "shared" / "d"
    assert (copied / "parquet" / "b.parquet").read_text() == "PAR1"

    (local / "parquet" / "b.parquet").unlink()
    shared.put_folder(local, "d", last="summary.json")
    assert sorted(p.relative_to(copied).as_posix() for p in copied.rglob("*") if p.is_file()) == [
        "a.jsonl",
        "parquet/a.parquet",
        "summary.json",
    ]
