"""An independent second look for credentials, used by the blocking dataset check.

It deliberately shares no rule with the filter: detect-secrets' own detectors (Yelp's plugins, the
regex-based ones; the entropy and keyword heuristics are too noisy on prose) plus the exact secret values
found in the environment. A secret the filter's rules miss is still caught here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.plugins.base import BasePlugin
from detect_secrets.settings import default_settings

_NOT_CREDENTIALS = {"Base64HighEntropyString", "HexHighEntropyString", "KeywordDetector", "IPPublicDetector"}


def _plugins() -> list[BasePlugin]:
    with default_settings():
        return [
            cls()
            for cls in get_mapping_from_secret_type_to_class().values()
            if cls.__name__ not in _NOT_CREDENTIALS
        ]


@dataclass
class ScanReport:
    texts_scanned: int = 0
    findings: Counter[str] = field(default_factory=Counter)
    #: Where each finding was, e.g. "line 12"; never the secret itself.
    locations: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.findings


class SecretScanner:
    def __init__(self, env_secrets: Iterable[str] = ()) -> None:
        self._plugins = _plugins()
        self._env_secrets = tuple(env_secrets)
        # a day's prompts repeat the same lines (system prompts, shared history) thousands of times
        self._line = lru_cache(maxsize=200_000)(self._scan_line)

    def find(self, text: str) -> list[tuple[str, str]]:
        """(secret type, matched value) pairs in `text`, line by line as detect-secrets scans."""
        found: list[tuple[str, str]] = []
        for line in text.splitlines() or [text]:
            found.extend(self._line(line))
        found.extend(("Environment secret", value) for value in self._env_secrets if value in text)
        return found

    def _scan_line(self, line: str) -> tuple[tuple[str, str], ...]:
        return tuple(
            (plugin.secret_type, value) for plugin in self._plugins for value in plugin.analyze_string(line)
        )

    def scan(self, texts: Iterable[tuple[str, str]]) -> ScanReport:
        """Scan (location, text) pairs; the report holds counts by type and locations only."""
        report = ScanReport()
        for location, text in texts:
            report.texts_scanned += 1
            hits = self.find(text)
            for secret_type, _ in hits:
                report.findings[secret_type] += 1
            if hits and len(report.locations) < 50:
                report.locations.append(location)
        return report

    def mask(self, text: str) -> str:
        """`text` with anything the scanner recognises replaced, for previews shown in the UI."""
        for secret_type, value in self.find(text):
            if value:
                text = text.replace(value, f"<MASKED:{secret_type}>")
        return text
