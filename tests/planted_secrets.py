"""Known secrets to plant in trajectories and the environment, and a reader of everything stored, so
tests can prove none of them comes out the other end."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pyarrow.parquet as pq

IN_TRAJECTORY = [
    "sk-proj-PLANTEDsecretAbCdEfGhIjKlMnOpQr",
    "ghp_PLANTEDsecretAbCdEfGhIjKlMnOpQrStUvWx",
    "xoxb-123456789012-PLANTEDsecretAbCdEf",
]
IN_ENVIRONMENT = "planted-env-secret-Zq9x8w7v"
#: A customer's data, planted beside the credentials: none of it may be stored either (the strict
#: profile's personal-data redaction; docs/privacy.md)
PERSONAL = {
    "email": "marguerite.planted@example.org",
    "phone": "+44 20 7946 0958",
    "card": "4539 1488 0343 6467",
    "name": "Marguerite Okonkwo",
}
API_KEY = "sk-PLANTEDopenaiKeyForTheFakeServer01"


def write_planted_day(folder: Path, name: str = "2026-11-24.jsonl") -> None:
    rows = []
    for n in range(12):
        secret = IN_TRAJECTORY[n % 3]
        call = {
            "systemPrompt": "You are Eliza.",
            "purpose": "response",
            "userPrompt": f"user{n}: my credentials are {secret} and {IN_ENVIRONMENT}. "
            f"My name is {PERSONAL['name']}, mail {PERSONAL['email']}, call {PERSONAL['phone']}, "
            f"card {PERSONAL['card']}",
            "response": f"Noted, I will not share {secret}.",
        }
        rows.append(
            {
                "trajectoryId": f"t{n}",
                "agentId": "a",
                "startTime": 1_795_478_500_000 + n,
                "steps": [{"llmCalls": [call]}],
                "metadata": {"debug": f"env dump {IN_ENVIRONMENT}", "customer": PERSONAL["email"]},
            }
        )
    folder.mkdir(exist_ok=True)
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows))


#: A live-format Stripe key: elizaOS's five patterns miss it, the strict profile and detect-secrets do not.
STRIPE_KEY = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"


def write_stripe_leak_day(folder: Path) -> Path:
    """A one-trajectory day (2026-11-24) whose prompt holds `STRIPE_KEY`; returns the folder."""
    folder.mkdir()
    call = {
        "systemPrompt": "You are Eliza.",
        "userPrompt": f"charge it to {STRIPE_KEY}",
        "response": "Done, I used the card on file.",
        "purpose": "response",
    }
    record = {
        "trajectoryId": "t-leak",
        "agentId": "a",
        "startTime": 1_795_478_500_000,
        "steps": [{"llmCalls": [call]}],
    }
    (folder / "leak.jsonl").write_text(json.dumps(record) + "\n")
    return folder


def stored_text(root: Path, skip: set[Path]) -> dict[Path, str]:
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
