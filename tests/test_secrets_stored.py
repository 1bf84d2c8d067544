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
import subprocess
import sys
from pathlib import Path

from tests.fake_openai import FakeOpenAI
from tests.planted_secrets import API_KEY, IN_ENVIRONMENT, IN_TRAJECTORY, stored_text, write_planted_day

REPO = Path(__file__).resolve().parents[1]


def test_no_planted_secret_is_stored_anywhere(tmp_path: Path) -> None:
    home, data, source = tmp_path / "home", tmp_path / "data", tmp_path / "in"
    home.mkdir()
    (home / "dagster.yaml").symlink_to(REPO / "dagster.yaml")
    write_planted_day(source)
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
    stored = stored_text(home, set()) | stored_text(data, {data / "trajectories"})
    stored[Path("uploaded to OpenAI")] = uploaded.decode()
    stored[Path("console output")] = day.stdout + day.stderr + train.stdout + train.stderr
    assert any(p.suffix == ".db" for p in stored) and any(
        "compute_logs" in str(p) or "storage" in str(p) for p in stored
    )
    for secret in [*IN_TRAJECTORY, IN_ENVIRONMENT, API_KEY]:
        leaks = [str(path) for path, text in stored.items() if secret in text]
        assert leaks == [], f"{secret[:12]}… found in {leaks}"
    # the scan can see them: the raw input store (left out above) holds every planted trajectory secret
    raw = stored_text(data / "trajectories", set())
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
