"""Plant secrets in trajectories and in the environment, run the pipeline through the CLI on a real
Dagster instance (SQLite storage, compute logs), train on a hosted backend, then read back everything
that was stored: not one planted secret may appear.

The raw `trajectories` store and the quarantine are the input as it came (before the privacy filter) and
are left out of the scan by design; everything downstream of the filter, and everything Dagster keeps
(runs, run config, tags, event log, metadata, compute logs), is scanned.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from tests.fake_openai import FakeOpenAI

REPO = Path(__file__).resolve().parents[1]
IN_TRAJECTORY = [
    "sk-proj-PLANTEDsecretAbCdEfGhIjKlMnOpQr",
    "ghp_PLANTEDsecretAbCdEfGhIjKlMnOpQrStUvWx",
    "xoxb-123456789012-PLANTEDsecretAbCdEf",
]
IN_ENVIRONMENT = "planted-env-secret-Zq9x8w7v"
API_KEY = "sk-PLANTEDopenaiKeyForTheFakeServer01"


def _planted_day(folder: Path) -> None:
    rows = []
    for n in range(12):
        secret = IN_TRAJECTORY[n % 3]
        call = {
            "systemPrompt": "You are Eliza.",
            "purpose": "response",
            "userPrompt": f"user{n}: my credentials are {secret} and {IN_ENVIRONMENT}",
            "response": f"Noted, I will not share {secret}.",
        }
        rows.append(
            {
                "trajectoryId": f"t{n}",
                "agentId": "a",
                "startTime": 1_795_478_500_000 + n,
                "steps": [{"llmCalls": [call]}],
                "metadata": {"debug": f"env dump {IN_ENVIRONMENT}"},
            }
        )
    folder.mkdir()
    (folder / "2026-11-24.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _stored_text(root: Path, skip: set[Path]) -> dict[Path, str]:
    texts = {}
    for path in root.rglob("*"):
        if not path.is_file() or any(path.is_relative_to(s) for s in skip):
            continue
        if path.suffix == ".parquet":
            table = pq.read_table(path)
            texts[path] = json.dumps(table.to_pylist(), default=str)
        elif path.suffix == ".db":
            with sqlite3.connect(path) as db:
                rows = []
                for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'"):
                    rows += [repr(r) for r in db.execute(f'SELECT * FROM "{table}"')]
            texts[path] = "\n".join(rows)
        else:
            texts[path] = path.read_bytes().decode("utf-8", errors="replace")
    return texts


def test_no_planted_secret_is_stored_anywhere(tmp_path: Path) -> None:
    home, data, source = tmp_path / "home", tmp_path / "data", tmp_path / "in"
    home.mkdir()
    (home / "dagster.yaml").symlink_to(REPO / "dagster.yaml")
    _planted_day(source)
    cli = str(Path(sys.executable).parent / "training-pipeline")
    with FakeOpenAI(api_key=API_KEY) as openai:
        env = {
            **os.environ,
            "DAGSTER_HOME": str(home),
            "TRAINING_PIPELINE_DATA": str(data),
            "TRAJECTORY_DIR": str(source),
            "PLANTED_SERVICE_TOKEN": IN_ENVIRONMENT,
            "OPENAI_API_KEY": API_KEY,
            "OPENAI_BASE_URL": openai.base_url,
            "OPENAI_POLL_INTERVAL_SECONDS": "0.05",
        }
        day = subprocess.run(
            [cli, "materialize", "--start", "2026-11-24"], env=env, capture_output=True, text=True
        )
        assert day.returncode == 0, day.stderr[-3000:]
        train = subprocess.run(
            [cli, "train", "--task", "response", "--backend", "openai"],
            env=env,
            capture_output=True,
            text=True,
        )
    assert train.returncode == 0, train.stderr[-3000:]
    assert json.loads(train.stdout[train.stdout.index("{") :])["status"] == "succeeded"

    uploaded = b"".join(f["content"] for f in openai.files.values())
    stored = _stored_text(home, set()) | _stored_text(data, {data / "trajectories"})
    stored[Path("uploaded to OpenAI")] = uploaded.decode()
    stored[Path("console output")] = day.stdout + day.stderr + train.stdout + train.stderr
    assert any(p.suffix == ".db" for p in stored) and any(
        "compute_logs" in str(p) or "storage" in str(p) for p in stored
    )
    for secret in [*IN_TRAJECTORY, IN_ENVIRONMENT, API_KEY]:
        leaks = [str(path) for path, text in stored.items() if secret in text]
        assert leaks == [], f"{secret[:12]}… found in {leaks}"
    # the scan can see them: the raw input store (left out above) holds every planted trajectory secret
    raw = _stored_text(data / "trajectories", set())
    assert all(any(secret in text for text in raw.values()) for secret in IN_TRAJECTORY)
    # and it did read Dagster's event log: the materialisation metadata is in it
    assert any(
        "records_in" in text and "redactions_by_rule" in text
        for p, text in stored.items()
        if p.suffix == ".db"
    )
    # the filter did see them: the redactions are in the reports
    report = json.loads((data / "filtered_trajectories" / "2026-11-24.privacy_report.json").read_text())
    assert report["redactionsByRule"].get("env-secret", 0) >= 12
