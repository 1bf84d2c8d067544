"""HTTP for hosted training services: bearer auth, clear errors, retries on transient failures only."""

from __future__ import annotations

import time
from typing import Any

import httpx

from training_pipeline.backends.base import BackendError

TRANSIENT_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


class ServiceClient:
    def __init__(
        self, service: str, base_url: str, token: str, timeout: float = 60.0, retries: int = 3
    ) -> None:
        self.service = service
        self._retries = retries
        self._client = httpx.Client(
            base_url=base_url.rstrip("/"), timeout=timeout, headers={"Authorization": f"Bearer {token}"}
        )

    def request(self, method: str, url: str, *, idempotent: bool | None = None, **kwargs: Any) -> Any:
        """JSON body of a 2xx answer. GETs are retried with backoff on timeouts, 429 and 5xx; a POST
        is not (it could create a second job), so its failure is reported at once."""
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
                time.sleep(min(2 ** (attempt - 1), 30))
                continue
            if response.is_error:
                raise BackendError(
                    f"{self.service} {method} {url}: HTTP {response.status_code}: {_message(response)}"
                )
            return response.json() if response.content else {}
        raise AssertionError("unreachable")

    def close(self) -> None:
        self._client.close()


def _message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:500]
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error)[:500]
    return str(error or body)[:500]
