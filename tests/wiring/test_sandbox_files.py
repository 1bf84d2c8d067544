"""Moving files in and out of a sandbox's folder while the code inside races the pipeline.

The attacker is a real process that keeps swapping a folder of the sandbox with a symlink to a host
folder, as a sandboxed step running beside an upload or a download can. Every file operation the
pipeline makes on a sandbox's folder (upload and deploy, download, collect, `file_exists`, a JUnit
report) runs thousands of times beside it: nothing may land in the host folder, and no host file may be
copied out. The same test against the earlier check-then-open code wrote into the host folder.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from training_pipeline.sandbox.beneath import EscapeRefused, find_files, is_regular_file, open_regular
from training_pipeline.tasks.sandboxes import copy_in, copy_out
from training_pipeline.tasks.steps.verifiers import _junit_counts

ROUNDS = 3000
HOST_SECRET = b"host-only content, never to be copied out"

#: exchanges `sub` (a real folder) and `swap` (a link to the host folder) atomically (`renameat2` with
#: RENAME_EXCHANGE), as fast as it can until killed: `sub` is always there, half the time a link
SWAPPER = r"""
import ctypes, os, sys
os.chdir(sys.argv[1])
os.symlink(sys.argv[2], "swap")
renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
AT_FDCWD, RENAME_EXCHANGE = -100, 2
while True:
    renameat2(AT_FDCWD, b"sub", AT_FDCWD, b"swap", RENAME_EXCHANGE)
"""

JUNIT = b'<testsuite tests="3" failures="0" errors="0" skipped="0"></testsuite>'


@pytest.fixture
def raced(tmp_path: Path):
    """A sandbox folder whose `sub` folder an attacker keeps swapping with a link to `outside`."""
    box, outside = tmp_path / "box", tmp_path / "outside"
    (box / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "payload.txt").write_bytes(HOST_SECRET)
    (outside / "report.xml").write_bytes(JUNIT)
    (box / "sub" / "payload.txt").write_bytes(b"sandbox content")
    attacker = subprocess.Popen([sys.executable, "-c", SWAPPER, str(box), str(outside)])
    time.sleep(0.2)
    try:
        yield box, outside
    finally:
        attacker.kill()
        attacker.wait()
    assert sorted(p.name for p in outside.iterdir()) == ["payload.txt", "report.xml"], "a file landed outside"


def test_uploads_never_land_outside_the_sandbox_however_its_folders_are_swapped(
    raced, tmp_path: Path
) -> None:
    box, outside = raced
    source = tmp_path / "upload.txt"
    source.write_bytes(b"task-controlled content")
    written = refused = 0
    for round_ in range(ROUNDS):
        try:
            copy_in(source, box, f"sub/up-{round_}.txt")
            written += 1
        except (ValueError, OSError):  # EscapeRefused is a ValueError
            refused += 1
    assert written + refused == ROUNDS
    assert written > 0  # the race was run, not refused wholesale
    assert not any(outside.glob("up-*")) and not any(outside.glob(".up-*"))


def test_downloads_and_reads_never_copy_a_host_file(raced, tmp_path: Path) -> None:
    box, _ = raced
    artifacts = tmp_path / "artifacts"
    copied = 0
    for round_ in range(ROUNDS):
        target = artifacts / f"{round_}.txt"
        try:
            copy_out(box, "sub/payload.txt", target)
            copied += 1
        except (ValueError, OSError):  # EscapeRefused is a ValueError
            continue
        assert target.read_bytes() == b"sandbox content"
        if round_ % 10 == 0:  # the other readers, less often: each walks the folder
            with contextlib.suppress(ValueError, OSError):
                assert _junit_counts(box, "sub/report.xml") is None  # the report exists only outside
            assert not is_regular_file(box, "sub/report.xml")
            assert all(entry.relative != "sub/report.xml" for entry in find_files(box, ["**/*"]))
    assert copied > 0


def test_a_link_anywhere_on_the_way_is_refused_and_a_fifo_does_not_hang(tmp_path: Path) -> None:
    box, outside = tmp_path / "box", tmp_path / "outside"
    box.mkdir()
    outside.mkdir()
    (outside / "secret").write_bytes(HOST_SECRET)
    (box / "link").symlink_to(outside)
    (box / "file-link").symlink_to(outside / "secret")
    os.mkfifo(box / "pipe")
    for path in ("link/secret", "file-link", "../outside/secret", "/etc/passwd", "pipe"):
        with pytest.raises((EscapeRefused, OSError)):
            open_regular(box, path).close()
    with pytest.raises(EscapeRefused):
        copy_in(box.parent / "outside" / "secret", box, "link/new.txt")
    assert sorted(p.name for p in outside.iterdir()) == ["secret"]
    # an upload replaces a hard link planted at its destination instead of writing through it
    (box / "hard").hardlink_to(outside / "secret")
    source = tmp_path / "src"
    source.write_bytes(b"new")
    copy_in(source, box, "hard")
    assert (outside / "secret").read_bytes() == HOST_SECRET and (box / "hard").read_bytes() == b"new"


def test_collecting_never_walks_out_of_the_folder_whatever_the_pattern(tmp_path: Path) -> None:
    box = tmp_path / "box"
    (box / "reports" / "deep").mkdir(parents=True)
    (box / "reports" / "a.json").write_text("{}")
    (box / "reports" / "deep" / "b.json").write_text("{}")
    (box / "notes.txt").write_text("x")
    (box / "host").symlink_to("/usr")
    os.mkfifo(box / "reports" / "c.json")
    found = {
        entry.relative: entry.kind for entry in find_files(box, ["reports/**/*.json", "*.txt", "host/**/*"])
    }
    assert found == {
        "reports/a.json": "file",
        "reports/c.json": "other",
        "reports/deep/b.json": "file",
        "notes.txt": "file",
    }
    assert {entry.relative: entry.kind for entry in find_files(box, ["host"])} == {"host": "link"}
    for pattern in ("../x", "/usr/*", "a/../../b"):
        with pytest.raises(EscapeRefused):
            find_files(box, [pattern])


def test_a_folder_nested_deeper_than_the_walk_goes_is_named_not_followed(tmp_path: Path) -> None:
    from training_pipeline.sandbox.beneath import DEPTH_LIMIT

    box = tmp_path / "box"
    deep = box.joinpath(*["d"] * (DEPTH_LIMIT + 10))
    deep.mkdir(parents=True)
    (deep / "x.txt").write_text("x")
    (box / "top.txt").write_text("t")
    found = {entry.relative: entry.kind for entry in find_files(box, ["**/*"])}
    assert found["top.txt"] == "file"
    assert [kind for relative, kind in found.items() if relative != "top.txt"] == ["other"]
