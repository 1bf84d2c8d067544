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
    # no vendor's shape: a secret only by the key it is held under in an object (`"api_key": …`)
    "Zq4Lm8Rt2Vx6Bn0Ws3Yd7P",
    # a password a person chose, in a login's arguments and the `.env` an agent read: no rule of
    # randomness or length tells it
    "marmalade sunrise planted",
    # another, under a lower-case key of a PHP config (`$db_pass`)
    "quince harbour planted",
]
IN_ENVIRONMENT = "planted-env-secret-Zq9x8w7v"
#: A customer's data, planted beside the credentials: none of it may be stored either (the strict
#: profile's personal-data redaction; docs/privacy.md)
PERSONAL = {
    "email": "marguerite.planted@example.org",
    "phone": "+44 20 7946 0958",
    "card": "4539 1488 0343 6467",
    "name": "Marguerite Okonkwo",
    # the phone dialled with its country code, as a messaging platform names its user (and a session)
    "dialled": "+442079460958",
    # bare digits, someone's by the list they are in (`"phones": […]`)
    "listed": "2079460977",
    # an address a web page writes with a character reference against harvesters
    "referenced": "marguerite.okonkwo&#64;example.org",
    # an account's name, in the home folder a coding agent works in
    "account": "mokonkwo",
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
                "trajectoryId": f"whatsapp:{PERSONAL['dialled']}-{n}" if n % 4 == 0 else f"t{n}",
                "agentId": "a",
                "startTime": 1_795_478_500_000 + n,
                "steps": [{"llmCalls": [call]}],
                "metadata": {
                    "debug": f"env dump {IN_ENVIRONMENT}",
                    "customer": PERSONAL["email"],
                    # a tool's result keyed by the customer's address, a config keyed by a token
                    "contacts": {PERSONAL["email"]: "primary", secret: "api"},
                    "config": {"api_key": IN_TRAJECTORY[3], "region": "eu-west-1"},
                    "login": {"user": "bob", "password": IN_TRAJECTORY[4]},
                    "shell": f'$ cat .env\nDB_HOST=db\nDB_PASSWORD="{IN_TRAJECTORY[4]}"\n',
                    "php": f"$ cat config.php\n<?php\n$db_host = 'db';\n$db_pass = '{IN_TRAJECTORY[5]}';\n",
                    "contact": {"phones": [PERSONAL["listed"]]},
                    "page": f"<p>Write to {PERSONAL['referenced']}</p>",
                    "cwd": f"/Users/{PERSONAL['account']}/src/app",
                },
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


def write_planted_traces(folder: Path, name: str = "traces-2026-11-24.json") -> None:
    """A collector's OTLP/JSON line of 2026-11-24: an agent's two chat spans (GenAI attributes form) whose
    messages, tool call and tool result hold the planted secrets and personal data."""
    secret, other = IN_TRAJECTORY[0], IN_TRAJECTORY[2]
    user = (
        f"my key is {secret}, the service token {IN_ENVIRONMENT}. I am {PERSONAL['name']}, "
        f"{PERSONAL['email']}, {PERSONAL['phone']}, card {PERSONAL['card']}"
    )
    call = {"type": "tool_call", "id": "c1", "name": "store_key", "arguments": {"key": other}}
    result = {"type": "tool_call_response", "id": "c1", "response": f"stored {other} for {PERSONAL['email']}"}
    first_in = [{"role": "user", "parts": [{"type": "text", "content": user}]}]
    second_in = [*first_in, {"role": "assistant", "parts": [call]}, {"role": "tool", "parts": [result]}]
    outputs = (
        [{"role": "assistant", "parts": [call], "finish_reason": "tool_calls"}],
        [{"role": "assistant", "parts": [{"type": "text", "content": f"Done, {PERSONAL['name']}."}]}],
    )

    def attributes(values: dict) -> list[dict]:
        return [{"key": k, "value": {"stringValue": v}} for k, v in values.items()]

    start = 1_795_478_500_000_000_000  # 2026-11-24
    spans = [
        {
            "traceId": "5b8efff798038103d269b633813fc60c",
            "spanId": f"{n + 1:016x}",
            "name": "chat gpt-4o-mini",
            "kind": 3,
            "startTimeUnixNano": str(start + n * 10**9),
            "endTimeUnixNano": str(start + n * 10**9 + 5 * 10**8),
            "attributes": attributes(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "gpt-4o-mini",
                    "gen_ai.conversation.id": f"planted-{PERSONAL['email']}",
                    "gen_ai.system_instructions": json.dumps([{"type": "text", "content": "You keep keys."}]),
                    "gen_ai.input.messages": json.dumps(messages),
                    "gen_ai.output.messages": json.dumps(output),
                }
            ),
        }
        for n, (messages, output) in enumerate(zip((first_in, second_in), outputs, strict=True))
    ]
    request = {
        "resourceSpans": [
            {
                "resource": {"attributes": attributes({"service.name": "planted-agent"})},
                "scopeSpans": [{"scope": {"name": "test"}, "spans": spans}],
            }
        ]
    }
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(json.dumps(request) + "\n")
