"""Files in the input folder that are not what they say, or that change while a day is read: FIFOs
named like exports, a file truncated or deleted mid-read, a day exported as one large `.json` array.
Each is reported by name with a reason, memory stays bounded, and the day goes on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import REPO
from training_pipeline.trajectories.files import (
    LineSpan,
    export_files,
    iter_file_records,
    line_spans,
    read_files,
)

T = 1_795_478_500_000  # 2026-11-24
CLI = Path(sys.executable).parent / "training-pipeline"


def _good(trajectory_id: str) -> dict:
    call = {"purpose": "response", "systemPrompt": "s", "userPrompt": "u", "response": "r"}
    return {"trajectoryId": trajectory_id, "startTime": T, "steps": [{"llmCalls": [call]}]}


def test_fifos_named_like_exports_are_refused_and_reported_not_waited_on(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "day.jsonl").write_text(json.dumps(_good("ok")) + "\n")
    os.mkfifo(folder / "pipe.jsonl")
    os.mkfifo(tmp_path / "elsewhere")
    (folder / "sub").mkdir()
    os.mkfifo(folder / "sub" / "target")
    (folder / "link.jsonl").symlink_to(folder / "sub" / "target")  # inside the folder, to a FIFO
    done = subprocess.run(
        [str(CLI), "build-datasets", str(folder), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["recordsIn"] == 3 and summary["quarantined"] == 2 and summary["trajectories"] == 1
    quarantine = [
        json.loads(line) for line in (tmp_path / "out" / "quarantine.jsonl").read_text().splitlines()
    ]
    assert sorted(Path(entry["origin"]).name for entry in quarantine) == ["link.jsonl", "pipe.jsonl"]
    assert all("a FIFO, not a regular file" in entry["reason"] for entry in quarantine)


def test_a_file_truncated_while_it_is_cut_into_shares_does_not_kill_the_reader(tmp_path: Path) -> None:
    """With the file mapped, reading past its new end was SIGBUS: the process died with no message."""
    source = tmp_path / "day.jsonl"
    source.write_text("".join(json.dumps(_good(f"t{i}")) + "\n" for i in range(20_000)))
    code = f"""
from pathlib import Path
from training_pipeline.trajectories.files import line_spans
spans = line_spans(Path({str(source)!r}), 64 * 1024)
first = next(spans)
open({str(source)!r}, "r+b").truncate(100_000)
rest = list(spans)
records = [r for span in [first, *rest] for r in span.records()]
print(len(records), sum(1 for r in records if r.problem))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, f"died with {done.returncode}: {done.stderr[-500:]}"
    records, problems = map(int, done.stdout.split())
    assert records > 0 and problems >= 1  # what was cut away is reported, not silently lost


def test_a_file_deleted_after_it_was_listed_is_quarantined_by_name_and_the_day_goes_on(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("a", "b"):
        (folder / f"{name}.jsonl").write_text(json.dumps(_good(name)) + "\n")
    [span] = [s for s in line_spans(folder / "b.jsonl", 1 << 20) if isinstance(s, LineSpan)]
    (folder / "b.jsonl").unlink()
    [record] = list(span.records())
    assert record.problem is not None and "unreadable" in record.problem and "b.jsonl" in record.origin
    files = export_files(folder)
    (folder / "a.jsonl").unlink()
    [gone] = list(iter_file_records(files[0]))
    assert gone.problem is not None and "vanished" in gone.problem


def test_a_json_array_is_streamed_element_by_element_each_under_the_cap(tmp_path: Path) -> None:
    cap = 4096
    tricky = _good("tricky")
    tricky["steps"][0]["llmCalls"][0]["response"] = 'a "quoted" ] } , [ { \\ and \u00e9 in a string'
    elements = [_good(f"t{i}") for i in range(3000)]
    elements[10] = tricky
    elements[20] = {**_good("huge"), "metadata": {"blob": "x" * (3 * cap)}}
    source = tmp_path / "2026-11-24.json"
    source.write_text(json.dumps(elements, indent=2))
    assert source.stat().st_size > 100 * cap  # the whole file is far over the cap; no element but one is
    parsed = list(read_files(source, max_bytes=cap))
    assert len(parsed) == 3000
    bad = [p for p in parsed if p.trajectory is None]
    assert [p.origin for p in bad] == [f"{source}:[20]"] and bad[0].reason.startswith("record too large")
    assert parsed[10].trajectory == tricky and parsed[2999].origin == f"{source}:[2999]"


def test_an_unfinished_array_or_content_after_it_is_reported(tmp_path: Path) -> None:
    cut = tmp_path / "cut.json"
    cut.write_text(json.dumps([_good("a"), _good("b")])[:-30])
    parsed = list(read_files(cut))
    assert parsed[0].trajectory is not None and all(p.trajectory is None for p in parsed[1:])
    assert any("ends inside it" in (p.reason or "") for p in parsed)
    after = tmp_path / "after.json"
    after.write_text(json.dumps([_good("a")]) + "\n{}")
    reasons = [p.reason for p in read_files(after)]
    assert reasons[0] is None and "after the end" in reasons[1]
    single = tmp_path / "one.json"
    single.write_text(json.dumps(_good("solo")))
    [only] = list(read_files(single))
    assert only.trajectory is not None and only.origin == str(single)


def test_the_array_splitter_is_right_wherever_the_pieces_are_cut() -> None:
    from training_pipeline.trajectories.files import _ArraySplitter

    elements = [
        {"a": 'quote " bracket ] brace } comma , backslash \\ end'},
        [1, [2, [3, {"x": "]]"}]]],
        'a plain string \\" with an escaped quote',
        12.5,
        None,
        {"nested": {"deeper": ["{", "[", ","]}},
    ]
    data = json.dumps(elements).encode()
    for size in (1, 2, 3, 5, 7, 64):
        splitter = _ArraySplitter(1 << 20)
        found: list = []
        for start in range(0, len(data), size):
            found += splitter.feed(data[start : start + size])
        found += splitter.finish()
        assert [json.loads(item) for item in found] == elements, size
