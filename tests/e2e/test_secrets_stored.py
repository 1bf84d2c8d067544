"""Plant secrets everywhere a user's data can carry them — trajectories (a broken record among them),
the environment, a task script's output, an env's database through the script, a service's responses —
run the pipeline through the CLI on a real Dagster instance (SQLite storage, compute logs): a day, a
training run on a hosted backend, a task run. Then read every byte under the Dagster home, the data
folder (the raw trajectory store and the quarantine included) and the task runs' folders, SQLite files
as tables and Parquet as rows: not one planted secret may appear.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.fake_openai import FakeOpenAI
from tests.helpers import REPO, cli
from tests.planted_secrets import (
    API_KEY,
    IN_ENVIRONMENT,
    IN_TRAJECTORY,
    PERSONAL,
    stored_text,
    write_planted_day,
    write_planted_traces,
)

#: What the task script makes up and leaks: printed, written to its work folder, and mailed into its env.
#: Built from halves so the script file itself (the user's input) does not hold it whole.
SCRIPT_SECRET = "ghp_SCRIPTplantedAbCdEfGhIjKlMnOpQrStUv"
SCRIPT = f"""
import json, os, sys, urllib.request
secret = {SCRIPT_SECRET[:12]!r} + {SCRIPT_SECRET[12:]!r}
print(json.dumps({{"found": secret}}))
print("debug: " + secret, file=sys.stderr)
open("notes.txt", "w").write("the key is " + secret)
request = urllib.request.Request(
    os.environ["ENV_URL"] + "/tools/send_email",
    data=json.dumps({{"to": "x@example.com", "subject": "key", "body": secret}}).encode(),
    headers={{"content-type": "application/json"}},
)
urllib.request.urlopen(request, timeout=10).read()
"""


def test_no_planted_secret_is_stored_anywhere(tmp_path: Path) -> None:
    home, data, source, tasks = tmp_path / "home", tmp_path / "data", tmp_path / "in", tmp_path / "tasks"
    home.mkdir()
    tasks.mkdir()
    (home / "dagster.yaml").symlink_to(REPO / "dagster.yaml")
    write_planted_day(source)
    write_planted_traces(source)  # an agent's OpenTelemetry traces beside the exports
    with (source / "2026-11-24.jsonl").open("a") as day:  # cut off mid-record: quarantined whole
        cut = {"trajectoryId": "cut", "note": f"token {IN_TRAJECTORY[1]}, reply to {PERSONAL['email']}"}
        day.write(json.dumps(cut)[:-10] + "\n")
    (tasks / "leak.py").write_text(SCRIPT)
    steps = [
        {"id": "email", "type": "deploy_env", "env_type": "email", "env_name": "email"},
        {"id": "leak", "type": "run_code", "env_name": "email", "script": "leak.py"},
        {"id": "snap", "type": "snapshot_env", "env_name": "email"},
    ]
    (tasks / "leak.json").write_text(json.dumps(steps))
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

        def run(*args: str) -> subprocess.CompletedProcess:
            done = cli(env, *args)
            assert done.returncode == 0, done.stderr[-3000:]
            return done

        day = run("materialize", "--start", "2026-11-24")
        train = run("train", "--task", "response", "--backend", "openai")
        task = run("task", "run", str(tasks / "leak.json"))
    assert json.loads(train.stdout[train.stdout.index("{") :])["status"] == "succeeded"

    uploaded = b"".join(f["content"] for f in openai.files.values())
    stored = stored_text(home, set()) | stored_text(data, set())
    stored[Path("uploaded to OpenAI")] = uploaded.decode()
    stored[Path("console output")] = "".join(p.stdout + p.stderr for p in (day, train, task))
    # the scan reads what it must: Dagster's databases, the raw store, the quarantine, the task's files
    assert {"runs.db", "2026-11-24.parquet", "2026-11-24.quarantine.jsonl", "context.db", "env.sqlite"} <= {
        p.name for p in stored
    }
    assert any(
        "records_in" in text and "redactions_by_rule" in text
        for p, text in stored.items()
        if p.suffix == ".db"
    )
    for secret in [*IN_TRAJECTORY, IN_ENVIRONMENT, API_KEY, SCRIPT_SECRET, *PERSONAL.values()]:
        leaks = [str(path) for path, text in stored.items() if secret in text]
        assert leaks == [], f"{secret[:12]}… found in {leaks}"

    # and the secrets did pass through: redacted, with their labels, where they were
    [run_dir] = (data / "task_runs").iterdir()
    context = json.loads((run_dir / "context.json").read_text())
    assert context["metadata"]["script_results"]["leak"]["output"] == {"found": "<REDACTED:github-token>"}
    assert (run_dir / "work" / "leak" / "notes.txt").read_text() == "the key is <REDACTED:github-token>"
    snapshot = json.loads((run_dir / context["metadata"]["snapshots"]["snap"]["path"]).read_text())
    assert [e["body"] for e in snapshot["emails"]] == ["<REDACTED:github-token>"]
    quarantine = (data / "trajectories" / "2026-11-24.quarantine.jsonl").read_text()
    assert "<REDACTED:github-token>" in quarantine and '"origin"' in quarantine
    # the traced conversation came through, redacted in every message, tool call and tool result
    traced = (data / "trace_datasets" / "2026-11-24" / "tool_use.jsonl").read_text().splitlines()
    text = "".join(traced)
    assert len(traced) == 2
    assert "<REDACTED:" in text and "<PII:EMAIL_ADDRESS:" in text and "store_key" in text
    report = json.loads((data / "filtered_trajectories" / "2026-11-24.privacy_report.json").read_text())
    assert report["redactionsByRule"].get("env-secret", 0) >= 12
