"""A secret in a name task code chose: a file named after a Stripe key, collected as an artifact, in a
run's work folder and in a database's schema. It reached Dagster's event log, `context.db` and
`context.json` before (the key ended at `.cache`, where gitleaks' pattern did not end it, and the scrub
left names as they were); now no stored byte holds it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.helpers import run_task_file, task_context, write_task

KEY = "sk_live_4eC39HqLyjWDarjtT1zdp7dcAbCdEfGh12"

#: the key is put together by the script, so the task file (and the step's recorded command) never
#: holds it: only the names the script makes do
PLANT = f"""
import os, sqlite3
key = "sk_" + {KEY[3:]!r}
os.makedirs("cache", exist_ok=True)
open(f"cache/{{key}}.cache", "w").write("cached")
db = sqlite3.connect("env.sqlite")
db.execute(f'CREATE TABLE "{{key}}" ("{{key}}" TEXT, plain TEXT)')
db.execute(f'CREATE INDEX "{{key}}.idx" ON "{{key}}" (plain)')
db.commit()
"""


def test_a_key_in_a_file_or_schema_name_is_stored_nowhere(data: Path, tmp_path: Path) -> None:
    task = write_task(
        tmp_path / "tasks",
        [
            {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box"},
            {
                "id": "plant",
                "type": "run_in_sandbox",
                "sandbox_name": "box",
                "command": ["python", "-c", PLANT],
            },
            {"id": "all", "type": "collect_files", "sandbox_name": "box", "patterns": ["cache/*"]},
        ],
    )
    result, logs, _ = run_task_file(task)
    events = "\n".join(str(event.dagster_event or event.user_message) for event in logs)
    assert result.success
    assert KEY not in events
    context = task_context(data, result.run_id)
    assert context["metadata"]["artifacts"]["all"] == [
        "artifacts/all/cache/<REDACTED:stripe-access-token>.cache"
    ]
    run = data / "task_runs" / result.run_id
    for path in run.rglob("*"):
        assert KEY not in str(path.relative_to(run)), path
        if path.is_file() and not path.is_symlink():
            assert KEY.encode() not in path.read_bytes(), path
    [database] = list(run.rglob("env.sqlite"))
    with sqlite3.connect(database) as check:
        names = [row[0] for row in check.execute("SELECT sql FROM sqlite_master")]
    assert names and all(KEY not in name for name in names)
