"""S3 on loopback: moto's server speaking S3's wire protocol, as a process of its own, for the tests that
read from or copy to an `s3://` URL with the real s3fs client."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.dagster_servers import free_port

BIN = Path(sys.executable).parent


class S3Server:
    """`with S3Server(log) as s3:` a moto server on a free loopback port; `s3.env` is what a process
    needs to reach it (`AWS_ENDPOINT_URL` and credentials), `s3.fs()` an s3fs client, `s3.bucket(name)`
    makes a bucket."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.port = free_port()
        self.env = {
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{self.port}",
            "AWS_ACCESS_KEY_ID": "s3-test",
            "AWS_SECRET_ACCESS_KEY": "s3-test-secret-0f9e8d7c6b5a",
            "AWS_DEFAULT_REGION": "us-east-1",
        }
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> S3Server:
        with self.log.open("ab") as out:
            self._process = subprocess.Popen(
                [str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(self.port)],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._process is not None
        if self._process.poll() is None:
            os.killpg(self._process.pid, signal.SIGTERM)
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait()

    def fs(self) -> Any:
        return s3_client(self.env)

    def bucket(self, name: str, timeout: float = 60) -> None:
        """Makes bucket `name`, waiting for the server to answer."""
        assert self._process is not None
        deadline = time.monotonic() + timeout
        while True:
            assert self._process.poll() is None, self.log.read_text()[-3000:]
            try:
                self.fs().mkdir(name)
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)


def s3_client(env: dict[str, str]) -> Any:
    """An s3fs client for the server whose `S3Server.env` is (among) `env`."""
    import s3fs

    return s3fs.S3FileSystem(
        endpoint_url=env["AWS_ENDPOINT_URL"],
        key=env["AWS_ACCESS_KEY_ID"],
        secret=env["AWS_SECRET_ACCESS_KEY"],
        skip_instance_cache=True,
    )
