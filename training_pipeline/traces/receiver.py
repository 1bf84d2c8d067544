"""An OTLP/HTTP trace receiver for teams without a collector: `training-pipeline otlp-receiver`.

`POST /v1/traces` with an `ExportTraceServiceRequest`, protobuf (`application/x-protobuf`) or JSON
(`application/json`), optionally `Content-Encoding: gzip`, as every OpenTelemetry SDK's OTLP/HTTP
exporter sends it. Each request is checked (it must parse), then written into the trace folder as a file
of its own (`<UTC day>/<time>-<random>.pb` or `.json`, the JSON as one line) and made durable (the file
and its folder synced) **before** the answer is 200: a receiver killed at any moment has lost nothing it
acknowledged. The daily assets and `build-datasets` read the folder like any other trace files.

What the OTLP spec asks of a server under pressure: a request over `max_request_bytes` (sent or
unzipped) is 413, which exporters do not retry; more requests in flight than `max_pending` (the disk is
behind) is 429 and a disk with less than `min_free_bytes` left is 503, both with `Retry-After`, which
exporters retry with backoff. Bound anywhere but loopback, it requires `Authorization: Bearer <token>`.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import secrets
import shutil
import threading
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson

from training_pipeline.atomic import atomic_open
from training_pipeline.traces.otlp import parse_request

__all__ = ["Answer", "Receiver", "ReceiverSettings", "serve"]

_PROTOBUF = "application/x-protobuf"
_JSON = "application/json"
#: an empty `ExportTraceServiceResponse`: all spans accepted
_ACCEPTED = {_PROTOBUF: b"", _JSON: b"{}"}


@dataclass(frozen=True)
class ReceiverSettings:
    folder: Path
    host: str = "127.0.0.1"
    port: int = 4318
    #: required of every request when set; must be set to bind anywhere but loopback
    token: str | None = None
    max_request_bytes: int = 16 << 20
    #: requests being written at once; past it, 429
    max_pending: int = 32
    #: free space the disk must keep; below it, 503
    min_free_bytes: int = 256 << 20
    retry_after_seconds: int = 5

    def check(self) -> None:
        """One line for what cannot work, before anything listens."""
        if self.token is None and not _loopback(self.host):
            raise ValueError(
                f"the receiver binds {self.host}, beyond loopback: set a bearer token (--token-env) so only "
                "your exporters can write"
            )
        if self.max_request_bytes <= 0 or self.max_pending <= 0:
            raise ValueError("--max-request-bytes and --max-pending must be positive")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


#: (status, body, content type, extra headers)
Answer = tuple[int, bytes, str, dict[str, str]]


class Receiver:
    """The receiver's decisions, apart from the sockets: `handle` takes a request, returns the answer."""

    def __init__(self, settings: ReceiverSettings) -> None:
        self.settings = settings
        self._pending = threading.BoundedSemaphore(settings.max_pending)
        self.stored = 0

    def handle(self, method: str, path: str, headers: Any, body: bytes | None, length: int | None) -> Answer:
        """`body` is None when it was not read (too large, or no length given)."""
        settings = self.settings
        if path.split("?", 1)[0] != "/v1/traces":
            return _error(404, "only /v1/traces is served")
        if method != "POST":
            return _error(405, "POST an ExportTraceServiceRequest to /v1/traces", {"Allow": "POST"})
        if settings.token is not None:
            given = headers.get("authorization") or ""
            if not hmac.compare_digest(given.encode(), f"Bearer {settings.token}".encode()):
                return _error(401, "a bearer token is required", {"WWW-Authenticate": "Bearer"})
        if length is None:
            return _error(411, "send a Content-Length: the body's length in bytes, in digits")
        if body is None:
            return _error(413, f"request over {settings.max_request_bytes} bytes")
        kind = (headers.get("content-type") or "").split(";")[0].strip().lower()
        if kind not in _ACCEPTED:
            return _error(415, f"content type must be {_PROTOBUF} or {_JSON}")
        encoding = (headers.get("content-encoding") or "identity").strip().lower()
        if encoding == "gzip":
            try:
                body = _gunzip(body, settings.max_request_bytes)
            except zlib.error as err:
                return _error(400, f"Content-Encoding is gzip but the body is not: {err}")
            if body is None:
                return _error(413, f"unzipped request over {settings.max_request_bytes} bytes")
        elif encoding not in ("identity", ""):
            return _error(415, f"content encoding {encoding!r}: send gzip or none")
        request, problem = parse_request(body, kind)
        if problem is not None:
            return _error(400, problem)
        if kind == _JSON:  # one request a line, as the collector's file exporter writes them
            body = orjson.dumps(request) + b"\n"
        if not self._pending.acquire(blocking=False):
            return _error(429, "the receiver is writing as fast as the disk allows", self._retry())
        try:
            if shutil.disk_usage(settings.folder).free < settings.min_free_bytes + len(body):
                return _error(503, "the trace folder's disk is nearly full", self._retry())
            self._store(body, kind)
        except OSError as err:
            return _error(503, f"could not store the request: {err.strerror or err}", self._retry())
        finally:
            self._pending.release()
        return 200, _ACCEPTED[kind], kind, {}

    def _retry(self) -> dict[str, str]:
        return {"Retry-After": str(self.settings.retry_after_seconds)}

    def _store(self, body: bytes, kind: str) -> None:
        now = datetime.now(UTC)
        folder = self.settings.folder / now.date().isoformat()
        folder.mkdir(parents=True, exist_ok=True)
        suffix = ".pb" if kind == _PROTOBUF else ".json"
        name = f"{now.strftime('%H%M%S.%f')}-{secrets.token_hex(6)}{suffix}"
        with atomic_open(folder / name, "wb") as handle:
            handle.write(body)
        _sync_folder(folder)
        self.stored += 1


def _sync_folder(folder: Path) -> None:
    """The rename that published a file, made durable with its folder's entry."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _gunzip(body: bytes, limit: int) -> bytes | None:
    """`body` unzipped, or None when it unzips past `limit` (a bomb is never held whole)."""
    inflater = zlib.decompressobj(wbits=31)
    data = inflater.decompress(body, limit + 1)
    if len(data) > limit or inflater.unconsumed_tail:
        return None
    return data


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> Answer:
    # OTLP/HTTP's error body is a `google.rpc.Status`; its JSON form carries the message
    return status, orjson.dumps({"code": status, "message": message}), _JSON, headers or {}


def serve(settings: ReceiverSettings) -> ThreadingHTTPServer:
    """A server for `settings`, listening (not yet serving: call `serve_forever`)."""
    settings.check()
    settings.folder.mkdir(parents=True, exist_ok=True)
    receiver = Receiver(settings)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "training-pipeline-otlp"

        def log_message(self, *args: Any) -> None:  # request lines would only repeat the counts
            pass

        def do_POST(self) -> None:
            self._answer("POST")

        def do_GET(self) -> None:
            self._answer("GET")

        def do_PUT(self) -> None:
            self._answer("PUT")

        def _answer(self, method: str) -> None:
            length_header = (self.headers.get("content-length") or "").strip()
            # ASCII digits only: `isdigit` is true of `²`, which `int` refuses
            length = int(length_header) if length_header.isascii() and length_header.isdigit() else None
            body = None
            if length is not None and length <= settings.max_request_bytes:
                body = self.rfile.read(length)
            status, data, kind, extra = receiver.handle(method, self.path, self.headers, body, length)
            if body is None and length != 0:
                # a body not read (too large, chunked, or of a length not given as a number) would be
                # read as the next request: the connection cannot go on
                self.close_connection = True
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            for key, value in extra.items():
                self.send_header(key, value)
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer((settings.host, settings.port), Handler)
    server.daemon_threads = True
    server.receiver = receiver  # type: ignore[attr-defined]
    return server
