"""Who is behind a `@handle`: the entity directory the filter anonymises against.

elizaOS asks its relationships service; here the directory is a file a user maintains. Two formats:
- JSON, the reference runner's: `{"handles": {"discord:alice": "e-1"}, "private": ["e-1"]}`;
- CSV with a header `platform,handle,entity_id,privacy_level` (privacy level `public` or `private`).
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

#: elizaOS's platform order: a handle resolves on the first platform that knows it.
DEFAULT_PLATFORMS: tuple[str, ...] = (
    "telegram",
    "discord",
    "slack",
    "matrix",
    "signal",
    "whatsapp",
    "twitter",
    "instagram",
    "email",
)


@dataclass(frozen=True)
class EntityDirectory:
    handles: dict[str, str] = field(default_factory=dict)  # "platform:handle" -> entity id
    private: frozenset[str] = frozenset()
    platforms: tuple[str, ...] = DEFAULT_PLATFORMS

    def resolve(self, handle: str) -> str | None:
        """The entity id of `handle` (without '@') on the first platform that has one."""
        for platform in self.platforms:
            entity = self.handles.get(f"{platform}:{handle}")
            if entity:  # elizaOS treats an empty id as unresolved
                return entity
        return None

    def is_private(self, entity_id: str) -> bool:
        return entity_id in self.private

    @classmethod
    def load(cls, path: Path) -> EntityDirectory:
        if path.suffix.lower() == ".csv":
            return cls._from_csv(path)
        return cls._from_json(path)

    @classmethod
    def _from_json(cls, path: Path) -> EntityDirectory:
        try:
            spec = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise ValueError(f"entity directory {path}: cannot read JSON: {err}") from err
        handles = spec.get("handles", {}) if isinstance(spec, dict) else None
        private = spec.get("private", []) if isinstance(spec, dict) else None
        if not isinstance(handles, dict) or not isinstance(private, list):
            raise ValueError(
                f'entity directory {path}: expected {{"handles": {{"platform:handle": "id"}}, '
                f'"private": ["id"]}}'
            )
        return cls({str(k): str(v) for k, v in handles.items()}, frozenset(map(str, private)))

    @classmethod
    def _from_csv(cls, path: Path) -> EntityDirectory:
        handles: dict[str, str] = {}
        private: set[str] = set()
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            missing = {"platform", "handle", "entity_id"} - set(reader.fieldnames or ())
            if missing:
                raise ValueError(f"entity directory {path}: missing CSV columns {sorted(missing)}")
            for line, row in enumerate(reader, start=2):
                level = (row.get("privacy_level") or "public").strip().lower()
                if level not in ("public", "private"):
                    raise ValueError(
                        f"entity directory {path}:{line}: privacy_level must be public or private"
                    )
                handles[f"{row['platform'].strip()}:{row['handle'].strip().lstrip('@')}"] = row[
                    "entity_id"
                ].strip()
                if level == "private":
                    private.add(row["entity_id"].strip())
        return cls(handles, frozenset(private))
