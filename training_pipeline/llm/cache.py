"""An on-disk response cache keyed by the whole request, so a re-run after a crash pays only for calls
it has not made yet. Entries are written atomically; a corrupt entry is treated as a miss."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from training_pipeline.atomic import atomic_write_text


def request_key(url: str, body: dict[str, Any]) -> str:
    canonical = json.dumps(
        {"url": url, "body": body}, sort_keys=True, ensure_ascii=False, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseCache:
    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        path = self._path(key)
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def put(self, key: str, response: dict[str, Any]) -> None:
        atomic_write_text(self._path(key), json.dumps(response, ensure_ascii=False))
