"""The export contract: with the `elizaos` profile, our datasets are exactly what elizaOS writes.

Expected outputs were produced by the real elizaOS code (`tests/reference/update_expected.sh`) from the
inputs `tests/reference/generate_cases.py` writes; see that file for what each case covers.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO
from training_pipeline.datasets.build import build_datasets
from training_pipeline.datasets.training_tasks import SUMMARY_FILE_NAME, TASK_FILE_NAMES
from training_pipeline.privacy.entities import EntityDirectory
from training_pipeline.privacy.filter import PrivacyFilter, secret_env_values
from training_pipeline.seen_ids import TasksPerId

CASES = sorted(p for p in (REPO / "tests" / "reference" / "cases").iterdir() if p.is_dir())


def _summary_without_timestamp(path: Path) -> dict:
    summary = json.loads(path.read_text(encoding="utf-8"))
    assert summary.pop("generatedAt").endswith("Z")
    return summary


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_datasets_match_elizaos_byte_for_byte(case: Path, tmp_path: Path) -> None:
    env = json.loads((case / "env.json").read_text())
    privacy = PrivacyFilter(
        "elizaos", EntityDirectory.load(case / "anon.json"), secret_env_values("elizaos", env)
    )
    result = build_datasets(case / "input.jsonl", tmp_path, privacy)

    for name in TASK_FILE_NAMES.values():
        ours, theirs = (tmp_path / name).read_bytes(), (case / "expected" / name).read_bytes()
        # parsed JSON per line is the contract; identical bytes show JSON.stringify is matched too
        assert [json.loads(x) for x in ours.splitlines()] == [json.loads(x) for x in theirs.splitlines()], (
            name
        )
        assert ours == theirs, name
    expected_summary = _summary_without_timestamp(case / "expected" / SUMMARY_FILE_NAME)
    assert _summary_without_timestamp(tmp_path / SUMMARY_FILE_NAME) == expected_summary

    reference = json.loads((case / "expected" / "reference-counts.json").read_text())
    assert result.quarantined == 0
    assert result.privacy["trajectoriesIn"] == reference["trajectories"]
    assert result.privacy["kept"] == reference["kept"]
    assert result.privacy["droppedPrivate"] == reference["dropped"]
    assert result.privacy["redactionCount"] == reference["redactionCount"]
    assert result.privacy["anonymizationCount"] == reference["anonymizationCount"]


def test_cli_matches_elizaos_with_the_same_environment(tmp_path: Path) -> None:
    """The command a user runs, in a subprocess, with the reference runner's secret environment."""
    case = next(c for c in CASES if c.name == "privacy")
    env = {"PATH": "/usr/bin:/bin", **json.loads((case / "env.json").read_text())}
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "training_pipeline",
            "build-datasets",
            str(case / "input.jsonl"),
            str(out),
            "--anonymizer",
            str(case / "anon.json"),
            "--privacy-profile",
            "elizaos",
            "--env-secrets",
            "REFERENCE_SECRET_*",
        ],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    last = json.loads(proc.stdout.strip().splitlines()[-1])
    reference = json.loads((case / "expected" / "reference-counts.json").read_text())
    assert last["counts"] == reference["counts"]
    assert last["redactionCount"] == reference["redactionCount"]
    for name in TASK_FILE_NAMES.values():
        assert (out / name).read_bytes() == (case / "expected" / name).read_bytes()
    assert {p.name for p in out.iterdir()} == {
        *TASK_FILE_NAMES.values(),
        SUMMARY_FILE_NAME,
        "quarantine.jsonl",
        "privacy_report.json",
    }


@pytest.mark.parametrize("case", [c for c in CASES if c.name in ("privacy", "texts")], ids=lambda c: c.name)
def test_many_workers_write_the_same_bytes_as_one(case: Path, tmp_path: Path) -> None:
    env = json.loads((case / "env.json").read_text())
    directory = EntityDirectory.load(case / "anon.json")
    single = build_datasets(
        case / "input.jsonl",
        tmp_path / "one",
        PrivacyFilter("elizaos", directory, secret_env_values("elizaos", env)),
    )
    many = build_datasets(
        case / "input.jsonl",
        tmp_path / "two",
        PrivacyFilter("elizaos", directory, secret_env_values("elizaos", env)),
        workers=2,
        span_bytes=4096,  # many small shares
    )
    for name in (*TASK_FILE_NAMES.values(), "quarantine.jsonl", "privacy_report.json"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name
    assert many.as_line() == single.as_line()


def test_a_folder_of_json_arrays_and_jsonl_files_builds_the_same_on_many_workers(tmp_path: Path) -> None:
    """`.json` arrays are parsed whole and sent to workers in chunks; `.jsonl` files are read by the
    workers in byte ranges; both in input order."""
    case = next(c for c in CASES if c.name == "texts")
    lines = (case / "input.jsonl").read_bytes().splitlines(keepends=True)
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.json").write_text(json.dumps(records[:300] * 2), encoding="utf-8")
    (folder / "b.jsonl").write_bytes(b"".join(lines))
    outputs = []
    for workers in (1, 2):
        out = tmp_path / f"out{workers}"
        result = build_datasets(folder, out, PrivacyFilter("strict"), workers=workers, span_bytes=4096)
        outputs.append({p.name: p.read_bytes() for p in out.iterdir() if p.name != SUMMARY_FILE_NAME})
        assert result.records_in == 2 * len(records[:300]) + sum(1 for x in lines if x.strip())
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize("in_memory_ids", [TasksPerId.IN_MEMORY_IDS, 1], ids=["in memory", "in the database"])
def test_a_trajectory_id_seen_again_counts_once_per_task_as_elizaos_counts_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_memory_ids: int
) -> None:
    """elizaOS counts the distinct trajectory ids behind each task's examples (checked with its own
    code on this shape of input): records sharing an id, in different shares of a build, count once,
    whether the build's ids are few enough to be counted in memory or not."""
    monkeypatch.setattr(TasksPerId, "IN_MEMORY_IDS", in_memory_ids)

    def record(trajectory_id: str, purpose: str) -> str:
        call = {"purpose": purpose, "systemPrompt": "s", "userPrompt": "u", "response": "r " * 1500}
        return json.dumps({"trajectoryId": trajectory_id, "startTime": 1, "steps": [{"llmCalls": [call]}]})

    lines = [record("a", "reply"), record("b", "reply"), record("a", "planner"), record("a", "reply")]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n")
    build_datasets(tmp_path / "in.jsonl", tmp_path / "out", PrivacyFilter("elizaos"), workers=2, span_bytes=1)
    metrics = _summary_without_timestamp(tmp_path / "out" / SUMMARY_FILE_NAME)["taskMetrics"]
    assert metrics["response"] == {"exampleCount": 3, "sourceCallCount": 3, "sourceTrajectoryCount": 2}
    assert metrics["action_planner"] == {"exampleCount": 1, "sourceCallCount": 1, "sourceTrajectoryCount": 1}
