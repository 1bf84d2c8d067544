"""Records that did not make it, each with where it came from and why, so nothing is lost silently."""

from __future__ import annotations

import base64
from pathlib import Path
from types import TracebackType
from typing import IO

from training_pipeline import jscompat
from training_pipeline.atomic import StagedFiles
from training_pipeline.privacy.stored import safe_bytes, safe_text
from training_pipeline.trajectories.parsing import ParsedRecord


def quarantine_line(parsed: ParsedRecord) -> str:
    """One quarantine entry, serialised: the origin, the reason and the record (as bytes if not UTF-8),
    its credentials redacted like everything else stored (the reason and position stay as they are)."""
    entry: dict[str, str | int] = {"origin": parsed.origin, "reason": safe_text(parsed.reason or "unknown")}
    if parsed.text is not None:
        entry["record"] = safe_text(parsed.text.rstrip("\r\n"))
    elif parsed.undecodable is not None:
        entry["recordBase64"] = base64.b64encode(safe_bytes(parsed.undecodable)).decode("ascii")
    if parsed.size is not None:
        entry["bytes"] = parsed.size
    return jscompat.dumps(entry) + "\n"


class QuarantineWriter:
    """JSONL of `{"origin", "reason", "record"}` (`recordBase64` when the bytes are not UTF-8),
    published atomically on a clean exit."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._staged = StagedFiles(path.parent)
        self._handle: IO[str] = self._staged.open(path.name)
        self.count = 0
        self.reasons: dict[str, int] = {}

    def add(self, parsed: ParsedRecord) -> None:
        self.add_line(quarantine_line(parsed), parsed.reason or "unknown")

    def add_line(self, line: str, reason: str) -> None:
        self._handle.write(line)
        self.count += 1
        kind = reason.split(":", 1)[0]
        self.reasons[kind] = self.reasons.get(kind, 0) + 1

    def __enter__(self) -> QuarantineWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._handle.close()
        if kind is None:
            self._staged.publish()
        else:
            self._staged.discard()
