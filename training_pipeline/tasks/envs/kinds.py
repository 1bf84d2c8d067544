"""The env kinds `deploy_env` can start, how to start one, how to talk to it, and the named state
checks `env_outcome_verifier` can run on it (Python functions over the env's `/state`)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from training_pipeline.processes import Owner
from training_pipeline.sandbox import Limits, Sandbox

Check = Callable[..., tuple[bool, str]]


def _matches(
    email: dict[str, Any],
    to: str | None,
    subject_contains: str | None,
    body_contains: str | None,
    in_reply_to_from: str | None,
    state: dict[str, Any],
) -> bool:
    if to is not None and email["to"].lower() != to.lower():
        return False
    if subject_contains is not None and subject_contains.lower() not in email["subject"].lower():
        return False
    if body_contains is not None and body_contains.lower() not in email["body"].lower():
        return False
    if in_reply_to_from is not None:
        original = next((e for e in state["emails"] if e["id"] == email["in_reply_to"]), None)
        if original is None or original["from"].lower() != in_reply_to_from.lower():
            return False
    return True


def email_sent(
    state: dict[str, Any],
    to: str | None = None,
    subject_contains: str | None = None,
    body_contains: str | None = None,
    in_reply_to_from: str | None = None,
) -> tuple[bool, str]:
    """An email matching every given condition was sent."""
    sent = [e for e in state["emails"] if e["folder"] == "sent"]
    hits = [e for e in sent if _matches(e, to, subject_contains, body_contains, in_reply_to_from, state)]
    return bool(hits), f"{len(hits)} of {len(sent)} sent emails match"


def emails_sent_count(
    state: dict[str, Any], at_least: int = 0, at_most: int | None = None
) -> tuple[bool, str]:
    count = sum(1 for e in state["emails"] if e["folder"] == "sent")
    ok = count >= at_least and (at_most is None or count <= at_most)
    return ok, f"{count} emails sent"


def email_read(state: dict[str, Any], subject_contains: str) -> tuple[bool, str]:
    hits = [e for e in state["emails"] if subject_contains.lower() in e["subject"].lower()]
    read = [e for e in hits if e["read"]]
    return bool(read), f"{len(read)} of {len(hits)} matching emails read"


@dataclass(frozen=True)
class EnvKind:
    module: str
    checks: dict[str, Check] = field(default_factory=dict)


ENV_KINDS: dict[str, EnvKind] = {
    "email": EnvKind(
        "training_pipeline.tasks.envs.email",
        {"email_sent": email_sent, "emails_sent_count": emails_sent_count, "email_read": email_read},
    ),
}


@dataclass(frozen=True)
class StartedEnv:
    #: `unix:<socket path>`: the env's only door (see `envs/email.py`)
    url: str
    pid: int


#: The env's socket, in its work folder.
SOCKET_NAME = "env.sock"
#: An env server lives for its run: more CPU time than a script, the same memory.
ENV_LIMITS = Limits(cpu_seconds=3600)


def start_env(
    kind: str,
    workdir: Path,
    options: dict[str, str],
    limits: Limits | None = None,
    timeout: float = 30.0,
    lifeline: Owner | None = None,
) -> StartedEnv:
    """Start an env server in its own sandbox and session (the run stops its whole group), and wait
    until it listens on its socket. `lifeline`: the server also ends with its owner (`Sandbox.spawn`,
    `TaskRun.lifeline`); None leaves it to the run's end."""
    spec = importlib.util.find_spec(ENV_KINDS[kind].module)
    assert spec is not None and spec.origin is not None
    server = Path(spec.origin)
    command = [sys.executable, "-I", str(server), "--db", "env.sqlite", "--socket", SOCKET_NAME]
    for key, value in options.items():
        command += [f"--{key.replace('_', '-')}", value]
    sandbox = Sandbox(workdir, limits or ENV_LIMITS, readonly=(server.parent,))
    workdir.mkdir(parents=True, exist_ok=True)
    with (workdir / "env.log").open("ab") as log:
        process = sandbox.spawn(command, lifeline=lifeline, stdout=subprocess.PIPE, stderr=log)
    assert process.stdout is not None
    line = process.stdout.readline()  # the server prints its socket once it listens
    process.stdout.close()
    if not line:
        process.wait(timeout)
        detail = (workdir / "env.log").read_text(errors="replace")[-1000:]
        raise RuntimeError(f"the {kind} env exited before listening (code {process.returncode}): {detail}")
    return StartedEnv(f"unix:{workdir / SOCKET_NAME}", process.pid)


class EnvClient:
    """HTTP to an env over its Unix socket (`unix:PATH`)."""

    def __init__(self, url: str, timeout: float = 30.0) -> None:
        import httpx  # here, not at import: every process that loads the code location imports this module

        path = url.removeprefix("unix:")
        self._folder = os.open(os.path.dirname(path), os.O_PATH | os.O_DIRECTORY)
        # through the folder's descriptor: a run folder's path can exceed a socket path's 108 bytes
        transport = httpx.HTTPTransport(uds=f"/proc/self/fd/{self._folder}/{os.path.basename(path)}")
        self._http = httpx.Client(transport=transport, base_url="http://env", timeout=timeout)

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        answer = self._http.request(method, path, json=body)
        payload = answer.json()
        if not answer.is_success:
            raise RuntimeError(f"env {method} {path}: HTTP {answer.status_code}: {payload.get('error')}")
        return payload

    def tools(self) -> list[dict[str, Any]]:
        return self._call("GET", "/tools")["tools"]

    def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        return self._call("POST", f"/tools/{name}", arguments)["result"]

    def load(self, data: dict[str, Any]) -> int:
        return self._call("POST", "/load", data)["loaded"]

    def state(self) -> dict[str, Any]:
        return self._call("GET", "/state")

    def close(self) -> None:
        self._http.close()
        os.close(self._folder)

    def __enter__(self) -> EnvClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
