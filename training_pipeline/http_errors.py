"""What an HTTP error means, shared by every client here (LLM servers and hosted training services)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx

#: Worth retrying: the request may well succeed later.
TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


def error_message(response: httpx.Response, limit: int = 500) -> str:
    """The server's own words: `{"error": {"message"}}` (OpenAI, Google), else the body."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:limit]
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error)[:limit]
    return str(error or body)[:limit]


def retry_after(response: httpx.Response, cap: float = 60.0) -> float | None:
    """Seconds the server asked us to wait (`Retry-After`), capped."""
    value = response.headers.get("retry-after")
    try:
        return min(float(value), cap) if value is not None else None
    except ValueError:
        return None
