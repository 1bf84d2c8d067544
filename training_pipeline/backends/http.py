"""HTTP for hosted training services: bearer auth, clear errors, retries on transient failures only."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from training_pipeline.backends.base import BackendError
from training_pipeline.http_errors import TRANSIENT_STATUS, error_message, retry_after


class ServiceClient:
    def __init__(
        self, service: str, base_url: str, token: str, timeout: float = 60.0, retries: int = 3
    ) -> None:
        import httpx  # here, not at import: every process that loads the code location imports this module

        self.service = service
        self._retries = retries
        self._client = httpx.Client(
            base_url=base_url.rstrip("/"), timeout=timeout, headers={"Authorization": f"Bearer {token}"}
        )

    def request(self, method: str, url: str, *, idempotent: bool | None = None, **kwargs: Any) -> Any:
        """JSON body of a 2xx answer. GETs are retried with backoff on timeouts, 429 and 5xx; a POST
        is not (it could create a second job), so its failure is reported at once."""
        import httpx

        retry = method == "GET" if idempotent is None else idempotent
        attempts = self._retries + 1 if retry else 1
        for attempt in range(1, attempts + 1):
            try:
                response = self._client.request(method, url, **kwargs)
            except httpx.TransportError as err:  # timeouts, refused connections
                if attempt < attempts:
                    time.sleep(min(2 ** (attempt - 1), 30))
                    continue
                raise BackendError(f"{self.service} {method} {url}: {type(err).__name__}: {err}") from err
            if response.status_code in TRANSIENT_STATUS and attempt < attempts:
                wait = retry_after(response)
                time.sleep(wait if wait is not None else min(2 ** (attempt - 1), 30))
                continue
            if response.is_error:
                raise BackendError(
                    f"{self.service} {method} {url}: HTTP {response.status_code}: {error_message(response)}"
                )
            return response.json() if response.content else {}
        raise AssertionError("unreachable")

    def close(self) -> None:
        self._client.close()


def poll(
    fetch: Callable[[], dict[str, Any]],
    state_of: Callable[[dict[str, Any]], str | None],
    terminal: set[str],
    label: str,
    poll_seconds: float,
    timeout_seconds: float,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """Fetch a hosted job until its state is terminal, logging each change; fails after the timeout."""
    deadline = time.monotonic() + timeout_seconds
    last = None
    while True:
        job = fetch()
        state = state_of(job)
        if state != last:
            log(f"{label}: {state}")
            last = state
        if state in terminal:
            return job
        if time.monotonic() > deadline:
            raise BackendError(f"{label} still {state} after {timeout_seconds:.0f}s")
        time.sleep(poll_seconds)
