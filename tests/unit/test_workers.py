"""The bounded pool: the same files as one process, input order, bounded memory, any host script."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.helpers import REPO
from training_pipeline.datasets.daily import DayFiles, build_day, export_store
from training_pipeline.datasets.training_tasks import TASK_FILE_NAMES, TASKS
from training_pipeline.datasets.validate import (
    INSPECTION_FILE_NAME,
    file_sha256,
    inspect_dataset_file,
    inspect_dataset_files,
)
from training_pipeline.intake import ingest, share
from training_pipeline.intake.filtered import FilteredDay, filter_store
from training_pipeline.intake.share import NoDerive, Share, ingest_share
from training_pipeline.privacy.entities import EntityDirectory
from training_pipeline.privacy.filter import PrivacyFilter
from training_pipeline.privacy.scan import SecretScanner
from training_pipeline.samples import write_long_sample
from training_pipeline.trajectories.files import read_files, unparsed_files, unparsed_shares
from training_pipeline.trajectories.models import start_day
from training_pipeline.workers import IN_FLIGHT, ordered_map


def _files(out: Path) -> DayFiles:
    """A day's layers in `out`: `t.parquet` stored, `f.parquet` filtered, `datasets/`."""
    return DayFiles(
        out / "t.parquet",
        out / "q.jsonl",
        FilteredDay(out / "f.parquet", out / "report.json"),
        out / "datasets",
    )


def _day(
    source: Path,
    out: Path,
    workers: int,
    records: str = "parsed",
    scanner_secrets: tuple[str, ...] | None = None,
    profile: str = "strict",
) -> dict:
    day = start_day(json.loads(source.read_text().splitlines()[0])["startTime"])
    built = build_day(
        _files(out),
        lambda: PrivacyFilter(profile, env_secrets=("tok-live-0f9e8d7c6b5a",)),
        records={
            "parsed": lambda: read_files(source, day),
            "unparsed": lambda: unparsed_files(source, day),
            "spans": lambda: unparsed_shares(source, day, span_bytes=64 << 10),  # the workers read them
        }[records],
        source="test",
        workers=workers,
        scanner_secrets=scanner_secrets,
    )
    assert built.manifest is not None
    return built.manifest.__dict__


def test_the_daily_pass_on_the_pool_writes_what_one_process_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingest, "POOL_FROM_BYTES", 0)  # a file this small would be done in one process
    monkeypatch.setattr(share, "SHARE_BYTES", 64 << 10)  # and in a share or two
    source = tmp_path / "2026-11-01.jsonl"  # a record without a start time is this day's
    write_long_sample(source, 400, target_bytes=4000)
    other_day = json.loads(source.read_text().splitlines()[0]) | {"startTime": 1_600_000_000_000}
    with source.open("a") as handle:  # a bad record, another day's, and a record with no start time
        handle.write('{"trajectoryId": "broken"\n' + json.dumps(other_day) + "\n" + '{"trajectoryId": 1}\n')
    one, pool, unparsed, spans = (tmp_path / name for name in ("one", "pool", "unparsed", "spans"))
    assert _day(source, one, 1) == _day(source, pool, 2) == _day(source, unparsed, 2, records="unparsed")
    assert _day(source, one, 1) == _day(source, spans, 2, records="spans")
    manifest = json.loads((one / "t.manifest.json").read_text())
    assert manifest["records_in"] == 402 and manifest["kept"] == 400 and manifest["quarantined"] == 2
    assert manifest["redactions_by_rule"]
    files = sorted(p.relative_to(one) for p in one.rglob("*") if p.is_file())
    for other in (pool, unparsed, spans):
        assert files == sorted(p.relative_to(other) for p in other.rglob("*") if p.is_file())
    for name, theirs in ((name, other / name) for name in files for other in (pool, unparsed, spans)):
        mine = one / name
        if name.name in ("t.parquet", "f.parquet"):  # the stored and the filtered day, row by row
            assert pq.read_table(mine).equals(pq.read_table(theirs)), name
        elif name.suffix == ".jsonl" or name.name == "report.json":  # datasets, quarantine, report
            assert mine.read_bytes() == theirs.read_bytes(), name


def test_a_day_of_files_smaller_than_a_pool_is_worth_is_done_in_one_process(tmp_path: Path) -> None:
    """Starting the pool's fork server costs most of a second of a core: a day whose files are known to
    be smaller than `POOL_FROM_BYTES` runs in the step's process. Only spans of files are looked ahead
    (they hold no data), so a day of any other records keeps the pool; the records come back whole."""
    source = tmp_path / "2026-11-01.jsonl"
    write_long_sample(source, 60, target_bytes=3000)
    day = start_day(json.loads(source.read_text().splitlines()[0])["startTime"])
    spans = list(unparsed_shares(source, day, span_bytes=16 << 10))
    assert len(spans) > 3
    small, again = ingest._small(iter(spans))
    assert small and list(again) == spans
    unparsed = list(unparsed_files(source, day))
    small, again = ingest._small(iter([*spans[:2], unparsed[0], *spans[2:]]))
    assert not small and list(again) == [*spans[:2], unparsed[0], *spans[2:]]
    big = [
        replace(span, span=replace(span.span, end=span.span.start + ingest.POOL_FROM_BYTES // 2))
        for span in spans
    ]
    small, again = ingest._small(iter(big))
    assert not small and list(again) == big  # all of them, though only two were looked at
    assert ingest._small(iter([])) == (True, [])


def test_small_files_share_a_share(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A task run writes each trajectory to a file of its own: thousands of one-line files went to the
    pool as thousands of shares (and the stored day as as many row groups). Spans are gathered into
    shares of about `SHARE_BYTES` like any records, in order; a large file's span fills one alone."""
    runs = tmp_path / "runs"
    runs.mkdir()
    lines = []
    source = tmp_path / "2026-11-01.jsonl"
    write_long_sample(source, 30, target_bytes=2000)
    for index, line in enumerate(source.read_text().splitlines()):
        (runs / f"{index:03d}.jsonl").write_text(line + "\n")
        lines.append(line)
    day = start_day(json.loads(lines[0])["startTime"])
    spans = list(unparsed_shares(runs, day))
    shares = list(ingest._shares(spans, None, [0], None))  # type: ignore[arg-type]
    assert len(spans) == 30 and len(shares) == 1 and shares[0].items == spans
    monkeypatch.setattr(share, "SHARE_BYTES", 16 << 10)
    large = list(unparsed_shares(source, day, span_bytes=16 << 10))  # each span at least a share's size
    shares = list(ingest._shares(large, None, [0], None))  # type: ignore[arg-type]
    assert len(large) > 2 and [s.items for s in shares] == [[span] for span in large]


def test_the_datasets_exported_again_from_the_filtered_day_are_those_the_pass_wrote(tmp_path: Path) -> None:
    """Materialising the datasets without the layers above them exports the filtered day again
    (`export_store`): the same files, sidecars and previews as the day's pass wrote."""
    source = tmp_path / "2026-11-01.jsonl"
    write_long_sample(source, 300, target_bytes=3000)
    out = tmp_path / "out"
    day = start_day(json.loads(source.read_text().splitlines()[0])["startTime"])
    files = _files(out)
    built = build_day(files, lambda: PrivacyFilter("strict"), records=lambda: read_files(source, day))
    written = out / "datasets"
    again = export_store(out / "f.parquet", tmp_path / "again")
    names = sorted(p.name for p in written.glob("*.jsonl"))
    assert len(names) == 2 * len(TASKS) and names == sorted(
        p.name for p in (tmp_path / "again").glob("*.jsonl")
    )
    for name in names:
        assert (written / name).read_bytes() == (tmp_path / "again" / name).read_bytes(), name
    assert again.previews == built.previews


def _square(n: int) -> int:
    return n * n


def _noop() -> None:
    return None


def test_results_come_in_input_order_with_a_bounded_number_in_flight() -> None:
    drawn = 0

    def shares():
        nonlocal drawn
        for n in range(40):
            drawn += 1
            yield n

    results = []
    for result in ordered_map(shares(), _square, 2, _square, _noop, (), start_method="fork"):
        assert drawn - len(results) <= IN_FLIGHT * 2  # never more than this read ahead of the writer
        results.append(result)
    assert results == [n * n for n in range(40)]


def _in_a_daemon(results) -> None:
    results.put(list(ordered_map(range(5), _square, 2, _square, _noop, (), start_method="forkserver")))


def test_a_daemonic_process_runs_the_shares_itself() -> None:
    """A Celery prefork worker is daemonic and may not start processes: the shares run in it."""
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    daemon = context.Process(target=_in_a_daemon, args=(results,), daemon=True)
    daemon.start()
    assert results.get(timeout=60) == [0, 1, 4, 9, 16]
    daemon.join(timeout=10)
    assert daemon.exitcode == 0


def test_the_checks_inspect_files_side_by_side_as_one_scanner_would(tmp_path: Path) -> None:
    paths = []
    for index, content in enumerate(["plain words", "token ghp_PLANTEDsecretAbCdEfGhIjKlMnOpQrStUvWx", "x"]):
        path = tmp_path / f"{index}.jsonl"
        line = {"messages": [{"role": r, "content": content} for r in ("system", "user", "model")]}
        path.write_text((json.dumps(line) + "\n") * (index + 1) + ("{bad\n" if index == 2 else ""))
        paths.append(path)
    alone = [inspect_dataset_file(path, SecretScanner()) for path in paths]
    assert inspect_dataset_files(paths, (), workers=2) == [(done, False) for done in alone]
    assert not alone[1][1].clean and [e[:17] for e in alone[2][0].errors] == ["line 4: not JSON "]


def test_a_pooled_days_bad_records_are_quarantined_redacted_where_they_were_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bad record's quarantine entry is made, redacted, on the worker that read it: the step's
    process (Dagster's, which holds no privacy models) never loads the stored redaction for a day's few
    bad records."""
    from training_pipeline.privacy import stored

    monkeypatch.setattr(ingest, "POOL_FROM_BYTES", 0)
    monkeypatch.setattr(share, "SHARE_BYTES", 64 << 10)
    source = tmp_path / "2026-11-01.jsonl"
    write_long_sample(source, 200, target_bytes=3000)
    duplicate = source.read_text().splitlines()[150]
    key = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
    with source.open("a") as handle:  # a line cut short and a repeated id, each holding a live key
        handle.write(
            '{"trajectoryId": "broken", "note": "' + key + '"\n' + duplicate[:-1] + ', "k": "' + key + '"}\n'
        )

    def refused() -> None:
        raise AssertionError("the step's process redacted a quarantine entry")

    monkeypatch.setattr(stored, "stored_filter", refused)
    manifest = _day(source, tmp_path / "out", 2, records="spans")
    assert manifest["quarantined"] == 2
    entries = [json.loads(line) for line in (tmp_path / "out" / "q.jsonl").read_text().splitlines()]
    assert [entry["reason"].split(":")[0] for entry in entries] == ["invalid JSON", "duplicate trajectory id"]
    assert all(key not in entry["record"] and "<REDACTED:" in entry["record"] for entry in entries)


def test_what_the_pass_records_of_each_file_is_what_reading_it_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workers gather their share's inspections (messages scanned, the lines with a finding); the
    record the writer makes of them numbers every line as the file does, whichever worker made it."""
    monkeypatch.setattr(ingest, "POOL_FROM_BYTES", 0)
    monkeypatch.setattr(share, "SHARE_BYTES", 64 << 10)
    source = tmp_path / "2026-11-01.jsonl"
    write_long_sample(source, 240, target_bytes=3000)
    lines = [json.loads(line) for line in source.read_text().splitlines()]
    for trajectory in lines[5::37]:  # a key `elizaos` leaves and the checks' scanner knows
        call = next(call for step in trajectory["steps"] for call in step.get("llmCalls") or ())
        call["userPrompt"] += " stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        _day(source, out, workers, "spans", scanner_secrets=(), profile="elizaos")
        written = out / "datasets"
        record = json.loads((written / INSPECTION_FILE_NAME).read_text())["files"]
        for task in TASKS:
            path = written / TASK_FILE_NAMES[task]
            validation, scan = inspect_dataset_file(path, SecretScanner())
            assert record[path.name]["sha256"] == file_sha256(path)
            assert record[path.name] | {"sha256": None} == {
                "sha256": None,
                "lines": validation.lines,
                "errors": validation.errors,
                "texts_scanned": scan.texts_scanned,
                "findings": dict(scan.findings),
                "locations": scan.locations,
                "personal_locations": scan.personal_locations,
            }, (workers, task)
        findings = record[TASK_FILE_NAMES["should_respond"]]
        assert findings["findings"]["Stripe Access Key"] == 7  # the sample plants others elizaos leaves
        assert max(int(where.split()[1]) for where in findings["locations"]) > 64  # past the first share


def test_datasets_inspected_as_they_are_made_are_not_read_again_unless_changed(tmp_path: Path) -> None:
    """The fused pass inspects each example where it is made (a worker) as the checks inspect a file;
    the checks then only hash each file. A file changed since, or a scanner looking for other secret
    values, means the file is read and inspected again."""
    source = tmp_path / "2026-11-01.jsonl"
    write_long_sample(source, 200, target_bytes=3000)
    out = tmp_path / "out"
    _day(source, out, 2, scanner_secrets=("tok-live-0f9e8d7c6b5a",))
    written = out / "datasets"
    record = written / INSPECTION_FILE_NAME
    paths = [written / TASK_FILE_NAMES[task] for task in TASKS]
    read_now = [inspect_dataset_file(path, SecretScanner(("tok-live-0f9e8d7c6b5a",))) for path in paths]
    assert sum(done[1].texts_scanned for done in read_now) > 1000 and all(done[1].clean for done in read_now)
    assert inspect_dataset_files(paths, ("tok-live-0f9e8d7c6b5a",), 2, record) == [
        (d, True) for d in read_now
    ]

    # a secret added to one file after it was inspected: that file is read again, and the secret found
    with paths[0].open("a") as handle:
        leak = "token ghp_PLANTEDsecretAbCdEfGhIjKlMnOpQrStUvWx"
        handle.write(
            json.dumps({"messages": [{"role": r, "content": leak} for r in ("system", "user", "model")]})
            + "\n"
        )
    changed = inspect_dataset_files(paths, ("tok-live-0f9e8d7c6b5a",), 2, record)
    assert [recorded for _, recorded in changed] == [False] + [True] * (len(paths) - 1)
    assert changed[0][0][1].findings == {"GitHub Token": 3}
    # the checks' scanner looks for another secret value: nothing recorded stands
    other = inspect_dataset_files(paths, ("another-secret-value",), 2, record)
    assert not any(recorded for _, recorded in other)


def test_the_pool_starts_from_a_script_without_a_main_guard(tmp_path: Path) -> None:
    """Inside a host whose main script would run again in each worker (a script calling `materialize`
    with no `if __name__ == "__main__"`), the workers start clean and the day is built once."""
    source = tmp_path / "in.jsonl"
    write_long_sample(source, 50, target_bytes=2000)
    script = tmp_path / "host.py"
    script.write_text(
        textwrap.dedent(
            f"""
            from pathlib import Path
            from tests.unit.test_workers import _day
            print("host ran")
            print(_day(Path({str(source)!r}), Path({str(tmp_path / "out")!r}), 2)["kept"])
            """
        )
    )
    run = subprocess.run(
        [sys.executable, str(script)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["host", "ran", "50"]  # the script ran once: no worker re-ran it


def test_the_pools_fork_server_imports_what_workers_use_and_no_more() -> None:
    """Every day's pool starts a fork server that imports the pass's modules before any worker can
    work: the Parquet writer (the step's process writes the files; a worker sends Arrow batches),
    gitleaks' rules (built by the first share that needs them) and the deployment's settings are not
    among them."""
    from training_pipeline.datasets.export import DailyExamples
    from training_pipeline.intake.share import ingest_in_worker

    modules = [ingest_in_worker.__module__, DailyExamples.__module__]
    code = f"import sys\nfor name in {modules!r}: __import__(name)\n" + (
        "print(sorted(m for m in ('pyarrow.parquet', 'training_pipeline.privacy.gitleaks',"
        " 'training_pipeline.settings')"
        " if m in sys.modules))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert run.stdout.strip() == "[]"


def test_build_datasets_runs_the_daily_pass_without_loading_arrow(tmp_path: Path) -> None:
    """`build-datasets` runs the daily assets' pass (`ingest_share`) but stores no rows: Arrow (a fifth
    of a worker's memory) is never imported in its processes."""
    source = tmp_path / "in.jsonl"
    write_long_sample(source, 20)
    code = (
        "import sys\nfrom pathlib import Path\n"
        "from training_pipeline.datasets.build import build_datasets\n"
        "from training_pipeline.privacy.filter import PrivacyFilter\n"
        f"source, out = Path({str(source)!r}), Path({str(tmp_path / 'out')!r})\n"
        "done = build_datasets(source, out, PrivacyFilter('strict'))\n"
        "print(done.privacy['kept'], 'pyarrow' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["20", "False"]


def test_build_datasets_keeps_a_repeated_trajectory_as_elizaos_does(tmp_path: Path) -> None:
    """The same pass as a day's, which keeps a trajectory id once: `build-datasets` follows elizaOS's
    export, which makes a repeated record's examples again (its summary counts two trajectories)."""
    from training_pipeline.datasets.build import build_datasets

    source = tmp_path / "in.jsonl"
    write_long_sample(source, 1)
    source.write_text(source.read_text() * 2)
    done = build_datasets(source, tmp_path / "out", PrivacyFilter("elizaos"))
    assert done.quarantined == 0 and done.summary["trajectoryCount"] == 2
    assert sum(done.summary["counts"].values()) > 0
    for name in TASK_FILE_NAMES.values():
        lines = (tmp_path / "out" / name).read_text().splitlines()
        assert lines[: len(lines) // 2] * 2 == lines, name


def test_overlapping_pool_starts_put_the_hosts_main_back() -> None:
    from training_pipeline.workers import _host_main_hidden

    host = sys.modules["__main__"]
    first, second = _host_main_hidden("forkserver"), _host_main_hidden("forkserver")
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # the first to finish leaves it hidden for the other
    assert sys.modules["__main__"] is not host
    second.__exit__(None, None, None)
    assert sys.modules["__main__"] is host


def test_the_filtered_day_is_the_same_fused_on_the_pool_and_filtered_again(tmp_path: Path) -> None:
    """Rows the filter leaves alone are handed on as stored rows (they cross processes once); rows it
    anonymises come as rows of their own. Either way the filtered day is the one a separate filtering
    of the stored day writes, byte for byte, including a row stored as it came (not re-serialised)."""
    source = tmp_path / "2026-11-01.jsonl"
    write_long_sample(source, 300, target_bytes=3000)
    lines = source.read_text().splitlines()
    # the second half's records as a person would write them (indented keys): stored as they came
    lines[150:] = [json.dumps(json.loads(line), indent=None, separators=(", ", ": ")) for line in lines[150:]]
    source.write_text("\n".join(lines) + "\n")
    directory = EntityDirectory(
        {"discord:erin": "e-erin", "discord:alice": "e-alice"}, frozenset({"e-alice"})
    )
    tables = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        privacy = PrivacyFilter("strict", directory)
        manifest = build_day(
            _files(out),
            lambda privacy=privacy: privacy,
            records=lambda: read_files(source, start_day(json.loads(lines[0])["startTime"])),
            source="test",
            workers=workers,
        ).manifest
        assert manifest is not None
        staged = pq.read_table(out / "f.parquet")
        filter_store(
            out / "t.parquet", out / "again.parquet", out / "again.json", PrivacyFilter("strict", directory)
        )
        assert staged.equals(pq.read_table(out / "again.parquet"))
        assert 0 < staged.num_rows < manifest.kept  # the private person's trajectories are dropped
        raws = staged.column("raw").to_pylist()
        assert any("<entity:e-erin>" in raw for raw in raws) and any('", "' in raw for raw in raws)
        tables.append(staged)
    assert tables[0].equals(tables[1])


def test_a_share_whose_first_anonymised_trajectory_comes_late_keeps_every_row_before_it() -> None:
    """A share's filtered rows are made only from its first anonymised trajectory on; the kept rows
    before it are the stored ones, copied, so the filtered rows are the kept trajectories in order:
    stored as they came where the filter changed nothing, re-serialised where it anonymised, without
    the private person's."""

    def trajectory(name: str, text: str) -> tuple[str, str]:
        call = {"systemPrompt": "s", "userPrompt": text, "response": "r"}
        record = {"trajectoryId": name, "startTime": 1.0, "steps": [{"llmCalls": [call]}]}
        return f"{name}.json", json.dumps(record, separators=(", ", ": "))

    records = [
        trajectory("a", "nobody here"),
        trajectory("b", "still nobody"),
        trajectory("c", "ask @erin"),
        trajectory("d", "ask @alice"),
        trajectory("e", "nobody again"),
    ]
    directory = EntityDirectory(
        {"discord:erin": "e-erin", "discord:alice": "e-alice"}, frozenset({"e-alice"})
    )
    done = ingest_share(PrivacyFilter("strict", directory), Share(records, NoDerive()))
    assert done.kept == [0, 1, 2, 4] and done.filtered is not None
    filtered = done.filtered.to_pydict()
    assert filtered["trajectory_id"] == ["a", "b", "c", "e"]
    assert filtered["origin"] == ["a.json", "b.json", "c.json", "e.json"]
    raws = filtered["raw"]
    assert [raws[0], raws[1], raws[3]] == [records[0][1], records[1][1], records[4][1]]  # as they came
    assert "<entity:e-erin>" in raws[2] and json.loads(raws[2])["trajectoryId"] == "c"
    assert done.stored.num_rows == 5


def test_a_filter_that_only_redacts_copies_the_stored_day(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no entity directory the filter changes nothing the stored day has not had redacted, so the
    filtered day is the stored file, copied (not encoded a second time), and holds what a
    separate filtering of the stored day writes."""
    source = tmp_path / "2026-11-01.jsonl"
    write_long_sample(source, 120, target_bytes=3000)
    out = tmp_path / "out"
    written: list[str] = []

    class Writer(ingest.TrajectoryParquetWriter):
        def __init__(self, path: Path) -> None:
            written.append(path.name)
            super().__init__(path)

    monkeypatch.setattr(ingest, "TrajectoryParquetWriter", Writer)
    _day(source, out, 1)
    assert written == ["t.parquet"]
    filtered = out / "f.parquet"
    assert filtered.read_bytes() == (out / "t.parquet").read_bytes()
    filter_store(out / "t.parquet", out / "again.parquet", out / "again.json", PrivacyFilter("strict"))
    again = pq.read_table(out / "again.parquet")
    assert again.num_rows == 120 and pq.read_table(filtered).equals(again)


ORPHAN_WORK = """
import time
def work(share):
    time.sleep(0.5)
    return share
def init(*args):
    pass
"""
ORPHAN_MAIN = """
import os, sys
from orphan_work import init, work
from training_pipeline.workers import ordered_map
if __name__ == "__main__":
    print(os.getpid(), flush=True)
    for _ in ordered_map(range(10_000), work, 2, work, init, (), start_method=sys.argv[1]):
        pass
"""


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry))
    found, stack = set(), [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.add(child)
            stack.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("start_method", ["forkserver", "fork"])
def test_workers_fork_server_and_tracker_die_with_a_killed_pipeline(
    tmp_path: Path, start_method: str
) -> None:
    """After `kill -9` of the process that started the pool, nothing it started keeps running (the
    fork server, its workers and multiprocessing's resource tracker all did, for good)."""
    (tmp_path / "orphan_work.py").write_text(ORPHAN_WORK)
    (tmp_path / "main.py").write_text(ORPHAN_MAIN)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}"}
    main = subprocess.Popen(
        [sys.executable, str(tmp_path / "main.py"), start_method], stdout=subprocess.PIPE, env=env, text=True
    )
    started: set[int] = set()
    try:
        assert main.stdout is not None and int(main.stdout.readline()) == main.pid
        expected = 3 if start_method == "forkserver" else 2  # the workers, the fork server and the tracker
        deadline = time.monotonic() + 30
        while len(started := _descendants(main.pid)) < expected and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(started) >= expected
    finally:
        main.kill()
        main.wait()
    deadline = time.monotonic() + 10
    while (left := [pid for pid in started if _alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in left:  # not to leave them to the rest of the suite
        os.kill(pid, 9)
    assert left == []


def test_a_trajectory_read_twice_in_a_day_is_kept_once_on_the_pool_as_in_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Duplicates across files, and across shares that different workers processed: each is quarantined
    naming where its id was first read, and the day's files are the same whatever processed them. A
    share holding a duplicate among new trajectories keeps the new ones; on the pool it goes back to
    a worker, the step's process filtering nothing (it would load what the workers filter with)."""
    monkeypatch.setattr(ingest, "POOL_FROM_BYTES", 0)
    monkeypatch.setattr(share, "SHARE_BYTES", 64 << 10)
    source = tmp_path / "2026-11-01.jsonl"
    write_long_sample(source, 300, target_bytes=3000)
    lines = source.read_text().splitlines(keepends=True)
    # an early share's amid a later share's new ones, then a late share's, and the early one again
    source.write_text("".join([*lines[:200], lines[5], *lines[200:], lines[250], lines[5]]))
    one, pool = tmp_path / "one", tmp_path / "pool"
    in_process = _day(source, one, 1)
    filtered_here = []
    monkeypatch.setattr(ingest, "ingest_share", lambda *args: filtered_here.append(args))
    assert _day(source, pool, 2) == in_process and not filtered_here
    manifest = json.loads((one / "t.manifest.json").read_text())
    assert manifest["records_in"] == 303 and manifest["kept"] == 300 and manifest["quarantined"] == 3
    for out in (one, pool):
        quarantine = [json.loads(line) for line in (out / "q.jsonl").read_text().splitlines()]
        assert [entry["origin"].rsplit(":", 1)[-1] for entry in quarantine] == ["201", "302", "303"]
        assert [entry["reason"].rsplit(":", 1)[-1].split(";")[0] for entry in quarantine] == ["6", "252", "6"]
    assert (one / "q.jsonl").read_bytes() == (pool / "q.jsonl").read_bytes()
    assert pq.read_table(one / "t.parquet").equals(pq.read_table(pool / "t.parquet"))


def test_ids_that_share_a_digest_within_a_share_do_not_stall_the_day(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The day's ids are remembered as 64-bit digests; two distinct ids of one share with the same
    digest (made certain here) cannot be told from a duplicate by the table, and no earlier share holds
    either: the share is kept as it is, never sent back again and again."""
    from training_pipeline.seen_ids import FirstReads

    monkeypatch.setattr(ingest, "POOL_FROM_BYTES", 0)
    monkeypatch.setattr(FirstReads, "_id", lambda self, trajectory_id: 0)
    source = tmp_path / "2026-11-01.jsonl"
    write_long_sample(source, 40, target_bytes=2000)
    manifest = _day(source, tmp_path / "pool", 2)
    assert manifest["records_in"] == manifest["kept"] == 40
