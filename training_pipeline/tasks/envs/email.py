"""The email environment: one mailbox in SQLite, with tools to list, read, send and reply.

Run as `python -I email.py --db PATH --socket PATH` (standard library only, so it runs in a sandbox
that holds nothing of the pipeline): it serves HTTP on the Unix socket and prints `{"socket": PATH}` on
its first stdout line once it listens. The socket is its only door: in its sandbox it has no network,
and on the host the socket sits in the run's folder, so no token is needed or kept.
"""

from __future__ import annotations

import argparse
import json
import os
import socketserver
import sqlite3
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS emails (
    id INTEGER PRIMARY KEY AUTOINCREMENT, folder TEXT NOT NULL, sender TEXT NOT NULL,
    recipient TEXT NOT NULL, subject TEXT NOT NULL, body TEXT NOT NULL, sent_at TEXT NOT NULL,
    in_reply_to INTEGER, read INTEGER NOT NULL DEFAULT 0)
"""


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


_STR = {"type": "string"}
TOOLS = [
    _tool(
        "list_emails",
        "List the emails in a folder, newest first.",
        {"folder": {"type": "string", "enum": ["inbox", "sent"]}},
        [],
    ),
    _tool("read_email", "Read one email by its id.", {"email_id": {"type": "integer"}}, ["email_id"]),
    _tool(
        "send_email",
        "Send a new email.",
        {"to": _STR, "subject": _STR, "body": _STR},
        ["to", "subject", "body"],
    ),
    _tool(
        "reply_email",
        "Reply to an email; the reply goes to its sender.",
        {"email_id": {"type": "integer"}, "body": _STR},
        ["email_id", "body"],
    ),
]


class ToolError(ValueError):
    pass


class Mailbox:
    def __init__(self, path: str, owner: str) -> None:
        self.owner = owner
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute(_SCHEMA)
        self._lock = threading.Lock()

    def _rows(self, query: str, *args: Any) -> list[dict[str, Any]]:
        with self._lock:
            cursor = self._db.execute(query, args)
            names = [column[0] for column in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def _insert(
        self,
        folder: str,
        sender: str,
        recipient: str,
        subject: str,
        body: str,
        in_reply_to: int | None = None,
        sent_at: str | None = None,
    ) -> int:
        with self._lock:
            cursor = self._db.execute(
                "INSERT INTO emails (folder, sender, recipient, subject, body, sent_at, in_reply_to) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    folder,
                    sender,
                    recipient,
                    subject,
                    body,
                    sent_at or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    in_reply_to,
                ),
            )
            return int(cursor.lastrowid or 0)

    def load(self, emails: list[dict[str, Any]]) -> int:
        for email in emails:
            sender = str(email.get("from") or "")
            recipient = str(email.get("to") or self.owner)
            if not sender:
                raise ToolError("every email to load needs a 'from'")
            folder = email.get("folder") or ("sent" if sender == self.owner else "inbox")
            self._insert(
                folder,
                sender,
                recipient,
                str(email.get("subject") or ""),
                str(email.get("body") or ""),
                sent_at=email.get("date"),
            )
        return len(emails)

    def call(self, name: str, args: dict[str, Any]) -> Any:
        try:
            if name == "list_emails":
                folder = args.get("folder") or "inbox"
                return self._rows(
                    "SELECT id, sender AS 'from', recipient AS 'to', subject, sent_at, read FROM emails "
                    "WHERE folder = ? ORDER BY id DESC",
                    folder,
                )
            if name == "read_email":
                email = self._email(int(args["email_id"]))
                with self._lock:
                    self._db.execute("UPDATE emails SET read = 1 WHERE id = ?", (email["id"],))
                return email
            if name == "send_email":
                return {
                    "id": self._insert(
                        "sent", self.owner, str(args["to"]), str(args["subject"]), str(args["body"])
                    ),
                    "status": "sent",
                }
            if name == "reply_email":
                original = self._email(int(args["email_id"]))
                subject = original["subject"]
                subject = subject if subject.lower().startswith("re:") else f"Re: {subject}"
                return {
                    "id": self._insert(
                        "sent",
                        self.owner,
                        original["from"],
                        subject,
                        str(args["body"]),
                        in_reply_to=original["id"],
                    ),
                    "status": "sent",
                }
        except KeyError as err:
            raise ToolError(f"{name}: missing argument {err.args[0]!r}") from err
        except (TypeError, ValueError) as err:
            raise ToolError(f"{name}: {err}") from err
        raise ToolError(f"unknown tool {name!r}")

    def _email(self, email_id: int) -> dict[str, Any]:
        rows = self._rows(
            "SELECT id, folder, sender AS 'from', recipient AS 'to', subject, body, sent_at, in_reply_to "
            "FROM emails WHERE id = ?",
            email_id,
        )
        if not rows:
            raise ToolError(f"no email with id {email_id}")
        return rows[0]

    def state(self) -> dict[str, Any]:
        emails = self._rows(
            "SELECT id, folder, sender AS 'from', recipient AS 'to', subject, body, sent_at, in_reply_to, "
            "read FROM emails ORDER BY id"
        )
        return {"owner": self.owner, "emails": emails}


class _UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    allow_reuse_address = False

    def server_bind(self) -> None:
        socketserver.UnixStreamServer.server_bind(self)
        os.chmod(self.server_address, 0o600)
        self.server_name, self.server_port = "env", 0


def serve(mailbox: Mailbox, socket_path: str, ttl_seconds: float) -> None:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def address_string(self) -> str:
            return "unix"

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._route("GET")

        def do_POST(self) -> None:
            self._route("POST")

        def _route(self, method: str) -> None:
            if self.path == "/health":
                return self._send(200, {"ok": True})
            try:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}") if method == "POST" else {}
                if method == "GET" and self.path == "/tools":
                    return self._send(200, {"tools": TOOLS})
                if method == "GET" and self.path == "/state":
                    return self._send(200, mailbox.state())
                if method == "POST" and self.path == "/load":
                    return self._send(200, {"loaded": mailbox.load(body.get("emails") or [])})
                if method == "POST" and self.path.startswith("/tools/"):
                    return self._send(200, {"result": mailbox.call(self.path[7:], body)})
                return self._send(404, {"error": f"no route {method} {self.path}"})
            except (ToolError, json.JSONDecodeError) as err:
                return self._send(400, {"error": str(err)})

        def _send(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    if os.path.exists(socket_path):  # a revived env: its old socket died with its old process
        os.unlink(socket_path)
    server = _UnixHTTPServer(socket_path, Handler)
    # an env the run failed to stop still ends: nothing outlives its time to live
    timer = threading.Timer(ttl_seconds, server.shutdown)
    timer.daemon = True
    timer.start()
    print(json.dumps({"socket": socket_path}), flush=True)
    server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", required=True)
    parser.add_argument("--owner", default="assistant@example.com")
    parser.add_argument("--socket", required=True)
    parser.add_argument("--ttl-seconds", type=float, default=6 * 3600)
    args = parser.parse_args(argv)
    serve(Mailbox(args.db, args.owner), args.socket, args.ttl_seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
