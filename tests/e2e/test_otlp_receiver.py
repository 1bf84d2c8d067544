"""`training-pipeline otlp-receiver`: the real OTLP/HTTP exporter of a traced agent posts to it, and what
it acknowledged is on disk, whole, even when it is killed; it refuses what it must (too large, a bomb,
not a request, no token) and tells exporters to back off when the disk is behind or nearly full."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.fake_chat import FakeChatServer
from tests.helpers import CLI
from tests.otlp_store import REPO, collector_json_line
from tests.traced_agent import reply
from training_pipeline.datasets.build import build_datasets
from training_pipeline.privacy.filter import PrivacyFilter
from training_pipeline.traces import receiver as receiver_module
from training_pipeline.traces.otlp import spans_of_file, trace_kind
from training_pipeline.traces.receiver import Receiver, ReceiverSettings


def start_receiver(
    folder: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [str(CLI), "otlp-receiver", "--out", str(folder), "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    line = process.stdout.readline()  # type: ignore[union-attr]
    assert line.startswith("receiving OTLP traces on "), process.stderr.read()  # type: ignore[union-attr]
    return process, line.split(" on ")[1].split(" into ")[0]


@pytest.fixture
def request_body(traced_runs: dict) -> bytes:
    """One real request, as the OTLP/HTTP exporter of a traced agent posts it."""
    return sorted(traced_runs["openinference"][0].glob("*.pb"))[0].read_bytes()


def test_a_traced_agent_exports_to_the_receiver_and_its_calls_become_datasets(tmp_path: Path) -> None:
    folder = tmp_path / "traces"
    process, endpoint = start_receiver(folder)
    try:
        with FakeChatServer(reply) as chat:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "tests.traced_agent",
                    "--instrumentation",
                    "both",
                    "--chat-url",
                    chat.base_url,
                    "--otlp-endpoint",
                    endpoint,
                    "--record",
                    str(tmp_path / "sent.json"),
                ],
                cwd=REPO,
                check=True,
                timeout=120,
            )
    finally:
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=30)
    assert process.returncode == 0 and "requests stored" in out
    stored = list(folder.rglob("*.pb"))
    assert stored and all(trace_kind(path) == "otlp-protobuf" for path in stored)
    result = build_datasets(folder, tmp_path / "out", PrivacyFilter("strict"))
    assert result.as_line()["traceDatasets"] == {"chat": 1, "tool_use": 2}


def test_json_and_gzip_requests_are_stored_as_collector_lines(tmp_path: Path, request_body: bytes) -> None:
    folder = tmp_path / "traces"
    process, endpoint = start_receiver(folder)
    try:
        line = collector_json_line(request_body).encode()
        answer = httpx.post(
            endpoint,
            content=gzip.compress(line),
            headers={"content-type": "application/json", "content-encoding": "gzip"},
        )
        assert answer.status_code == 200 and answer.json() == {}
    finally:
        process.kill()
        process.wait()
    [stored] = folder.rglob("*.json")
    assert stored.read_bytes().count(b"\n") == 1 and trace_kind(stored) == "otlp-json"
    assert json.loads(stored.read_text()) == json.loads(line)


def test_what_the_receiver_must_refuse_is_refused_with_the_spec_status(
    tmp_path: Path, request_body: bytes
) -> None:
    folder = tmp_path / "traces"
    process, endpoint = start_receiver(folder, "--max-request-bytes", "65536")
    protobuf = {"content-type": "application/x-protobuf"}
    try:
        too_large = httpx.post(endpoint, content=b"\x0a" * 70_000, headers=protobuf)
        bomb = httpx.post(
            endpoint,
            content=gzip.compress(b"\x00" * 10_000_000),
            headers={**protobuf, "content-encoding": "gzip"},
        )
        not_a_request = httpx.post(endpoint, content=b"\xff\xff\xff", headers=protobuf)
        not_json = httpx.post(endpoint, content=b"{", headers={"content-type": "application/json"})
        wrong_type = httpx.post(endpoint, content=request_body, headers={"content-type": "text/plain"})
        wrong_path = httpx.post(
            endpoint.replace("/v1/traces", "/v1/logs"), content=request_body, headers=protobuf
        )
        fine = httpx.post(endpoint, content=request_body, headers=protobuf)
    finally:
        process.kill()
        process.wait()
    assert [too_large.status_code, bomb.status_code, not_a_request.status_code] == [413, 413, 400]
    assert [not_json.status_code, wrong_type.status_code, wrong_path.status_code] == [400, 415, 404]
    assert fine.status_code == 200
    assert len(list(folder.rglob("*.pb"))) == 1  # only what was acknowledged


def _raw(endpoint: str, request: bytes) -> bytes:
    """What the receiver answers to `request`, sent as it is, until it closes the connection (a close
    with the body unread may reach the client as a reset, after the answer)."""
    host, port = endpoint.split("//")[1].split("/")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as connection:
        connection.sendall(request)
        answer = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := connection.recv(65536):
                answer += chunk
    return answer


def test_a_body_of_no_readable_length_gets_411_and_its_connection_is_closed(
    tmp_path: Path, request_body: bytes
) -> None:
    process, endpoint = start_receiver(tmp_path / "traces")
    head = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
    try:
        # `²` is a digit to `str.isdigit` and not to `int`; a chunked body has no length at all
        superscript = _raw(endpoint, head + "Content-Length: ²\r\n\r\n".encode() + request_body)
        chunked = _raw(
            endpoint,
            head
            + b"Transfer-Encoding: chunked\r\n\r\n%x\r\n" % len(request_body)
            + request_body
            + b"\r\n0\r\n\r\n",
        )
        fine = httpx.post(endpoint, content=request_body, headers={"content-type": "application/x-protobuf"})
    finally:
        process.kill()
        _, errors = process.communicate()
    for answer in (superscript, chunked):
        # one answer, and the connection closed after it: the unread body is never read as a request
        assert answer.startswith(b"HTTP/1.1 411 ") and answer.count(b"HTTP/1.1") == 1
        assert b"Connection: close" in answer
    assert fine.status_code == 200 and "Traceback" not in errors


def test_beyond_loopback_a_bearer_token_is_required(tmp_path: Path, request_body: bytes) -> None:
    env = {**os.environ, "OTLP_TOKEN": "a-long-random-token-for-the-test"}
    refused = subprocess.run(
        [str(CLI), "otlp-receiver", "--out", str(tmp_path / "t"), "--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (
        refused.returncode == 2
        and "set a bearer token" in refused.stderr
        and "Traceback" not in refused.stderr
    )
    process, endpoint = start_receiver(
        tmp_path / "t", "--host", "0.0.0.0", "--token-env", "OTLP_TOKEN", env=env
    )
    endpoint = endpoint.replace("0.0.0.0", "127.0.0.1")
    protobuf = {"content-type": "application/x-protobuf"}
    try:
        anonymous = httpx.post(endpoint, content=request_body, headers=protobuf)
        wrong = httpx.post(
            endpoint, content=request_body, headers={**protobuf, "authorization": "Bearer nope"}
        )
        right = httpx.post(
            endpoint,
            content=request_body,
            headers={**protobuf, "authorization": "Bearer a-long-random-token-for-the-test"},
        )
    finally:
        process.kill()
        process.wait()
    assert (anonymous.status_code, wrong.status_code, right.status_code) == (401, 401, 200)


def test_what_was_acknowledged_survives_kill_9_mid_stream(tmp_path: Path, request_body: bytes) -> None:
    folder = tmp_path / "traces"
    process, endpoint = start_receiver(folder)
    acknowledged = 0
    stop = threading.Event()

    def send() -> None:
        nonlocal acknowledged
        with httpx.Client(headers={"content-type": "application/x-protobuf"}) as client:
            while not stop.is_set():
                try:
                    if client.post(endpoint, content=request_body).status_code == 200:
                        acknowledged += 1
                except httpx.HTTPError:
                    return

    sender = threading.Thread(target=send)
    sender.start()
    while acknowledged < 20:
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait()
    stop.set()
    sender.join(timeout=30)
    stored = sorted(folder.rglob("*.pb"))
    assert len(stored) >= acknowledged >= 20
    assert all(path.read_bytes() == request_body for path in stored)  # whole, every one
    spans = [span for path in stored for span in spans_of_file(path, "otlp-protobuf")]
    assert spans and all(type(span).__name__ == "Span" for span in spans)


def test_a_slow_disk_gets_429_and_a_full_one_503_with_retry_after(
    tmp_path: Path, request_body: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk behind: fsync takes a second while the receiver may write one request at a time."""
    receiver = Receiver(ReceiverSettings(tmp_path / "traces", max_pending=1, min_free_bytes=0))
    (tmp_path / "traces").mkdir()
    real_fsync = os.fsync

    def slow_fsync(fd: int) -> None:
        time.sleep(1.0)
        real_fsync(fd)

    monkeypatch.setattr(receiver_module.os, "fsync", slow_fsync)
    headers = {"content-type": "application/x-protobuf"}
    answers: list[tuple[int, dict[str, str]]] = []

    def post() -> None:
        status, _, _, extra = receiver.handle("POST", "/v1/traces", headers, request_body, len(request_body))
        answers.append((status, extra))

    first = threading.Thread(target=post)
    first.start()
    time.sleep(0.2)
    post()  # while the first is still being written
    first.join()
    assert sorted(status for status, _ in answers) == [200, 429]
    assert [extra for status, extra in answers if status == 429] == [{"Retry-After": "5"}]
    full = Receiver(ReceiverSettings(tmp_path / "traces", min_free_bytes=1 << 60))
    status, _, _, extra = full.handle("POST", "/v1/traces", headers, request_body, len(request_body))
    assert (status, extra) == (503, {"Retry-After": "5"})
