"""An independent second look for credentials, used by the blocking dataset check.

It deliberately shares no rule with the filter: detect-secrets' own detectors (Yelp's plugins: the
regex-based ones, and its keyword detector, which knows a secret by the name it is assigned to; the
entropy heuristics are too noisy on prose) plus the exact secret values found in the environment. A
secret the filter's rules miss is still caught here.

The keyword detector counts a value as detect-secrets' own scan does after its heuristic filters (not a
template, a `$VARIABLE`, an indirect reference, a sequence, a UUID, punctuation), and not when the value
is a redaction the filter left (`<REDACTED:…>`): it runs only on lines that hold one of its keywords.

detect-secrets runs every plugin's regexes on every line: a day's datasets are millions of lines, nearly
all clean. Its patterns are compiled into a Hyperscan gate (`prefilter.LineGate`, the same engine as the
filter's, with these patterns and no others) that scans a whole text once; a text in which no
pattern can match on any line has nothing for the plugins, and any other text is scanned line by line
as before. The gate is a superset, so what is found is exactly what the plugins alone find.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property, lru_cache
from typing import TYPE_CHECKING

import hyperscan

from training_pipeline.privacy.personal import PersonalDataFinder
from training_pipeline.privacy.personal.finder import finder_digest
from training_pipeline.privacy.prefilter import LineGate

if TYPE_CHECKING:
    from detect_secrets.plugins.base import BasePlugin

_NOT_CREDENTIALS = {"Base64HighEntropyString", "HexHighEntropyString", "KeywordDetector", "IPPublicDetector"}
#: what the filter leaves where it redacted: a value the keyword detector finds in its place is no secret
_LEFT_BY_THE_FILTER = re.compile(r"<(?:REDACTED|entity|MASKED):")
#: every keyword of detect-secrets' keyword detector (`api_?key`, `db_?pass`, `password`, `pwd`,
#: `secret`, `contraseña`…) holds one of these: a text with none is not the detector's, and is passed
#: without importing detect-secrets (a test holds the list to the detector's own)
KEYWORD_HINTS = ("key", "pass", "pwd", "secret", "contrase")


def holds_keyword_hint(text: str) -> bool:
    """Whether `text` holds one of `KEYWORD_HINTS` in any case. Substring searches of the casefolded
    text, not a case-blind expression: `re` tries such an alternation at every character, ten times
    slower on a prompt, and this runs on every message of every example. Casefolding folds what
    `re.IGNORECASE` does (`KEY`, the Kelvin sign, the long s) and more, which only widens the test."""
    folded = text.casefold()
    return any(hint in folded for hint in KEYWORD_HINTS)


# detect-secrets is imported where a scanner first looks at a line (`gated_plugins`), not with this
# module: a pool's fork server imports this module for its workers and needs none of it.


@dataclass(frozen=True)
class GatedPlugins:
    """What a scanner needs before it looks at a line: the plugins' gate (None: they cannot be gated,
    every line is theirs) and a digest of the plugins' names and patterns (`SecretScanner.fingerprint`)."""

    gate: LineGate | None
    plugins: str


@cache
def gated_plugins() -> GatedPlugins:
    """The plugins' gate and digest, made once per process from detect-secrets' plugins."""
    plugins = _plugins()
    return GatedPlugins(plugin_gate(plugins), _plugins_digest(plugins))


def _plugins_digest(plugins: Sequence[BasePlugin]) -> str:
    from detect_secrets.__version__ import VERSION

    digest = hashlib.sha256(f"detect-secrets {VERSION}".encode())
    for plugin in plugins:
        digest.update(f"\0{type(plugin).__name__}".encode())
        for pattern in getattr(plugin, "denylist", ()):
            digest.update(f"\1{pattern.pattern}\1{pattern.flags}".encode())
    return digest.hexdigest()


def _plugins() -> list[BasePlugin]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.settings import default_settings

    with default_settings():
        return [
            cls()
            for cls in get_mapping_from_secret_type_to_class().values()
            if cls.__name__ not in _NOT_CREDENTIALS
        ]


def plugin_gate(plugins: Sequence[BasePlugin]) -> LineGate | None:
    """A gate over every plugin's patterns, or None when one of them cannot be gated (a plugin that is
    not regex-based, a verbose pattern with spaces or comments, a pattern Hyperscan refuses): then
    every text is scanned in full, slower and as exact."""
    from detect_secrets.plugins.base import RegexBasedDetector

    patterns: list[re.Pattern[str]] = []
    for plugin in plugins:
        if not isinstance(plugin, RegexBasedDetector):
            return None
        for pattern in plugin.denylist:
            if pattern.flags & re.VERBOSE and re.search(r"\s|#", pattern.pattern):
                return None
            patterns.append(pattern)
    try:
        return LineGate(patterns)
    except (ValueError, hyperscan.error):
        return None


#: how a finding of personal data is counted among a report's findings (`PII:EMAIL_ADDRESS`)
PERSONAL_PREFIX = "PII:"


@dataclass
class ScanReport:
    texts_scanned: int = 0
    #: credential types and, prefixed `PII:`, kinds of personal data, with how often each was found
    findings: Counter[str] = field(default_factory=Counter)
    #: Where each credential was, e.g. "line 12"; never the secret itself.
    locations: list[str] = field(default_factory=list)
    #: Where each finding of personal data was (the `no_personal_data` check's; never the value)
    personal_locations: list[str] = field(default_factory=list)

    @property
    def credentials(self) -> Counter[str]:
        return Counter({k: n for k, n in self.findings.items() if not k.startswith(PERSONAL_PREFIX)})

    @property
    def personal(self) -> Counter[str]:
        return Counter(
            {k[len(PERSONAL_PREFIX) :]: n for k, n in self.findings.items() if k.startswith(PERSONAL_PREFIX)}
        )

    @property
    def clean(self) -> bool:
        """No credential found (personal data is the `no_personal_data` check's: `personal`)."""
        return not self.credentials


class SecretScanner:
    def __init__(self, env_secrets: Iterable[str] = (), personal_kinds: frozenset[str] = frozenset()) -> None:
        """`personal_kinds`: the kinds of personal data `find_personal` looks for (the filter's, so the
        check fails a dataset holding what the filter should have redacted)."""
        gated = gated_plugins()
        self.gate = gated.gate
        self._plugins_digest = gated.plugins
        self._env_secrets = tuple(env_secrets)
        # a day's prompts repeat the same lines (system prompts, shared history) thousands of times
        self._line = lru_cache(maxsize=200_000)(self._scan_line)
        self._keyword_line = lru_cache(maxsize=200_000)(self._keyword_findings_in_line)
        # an LLM call's prompts come back in each of its examples (up to five), one after another
        self._text = lru_cache(maxsize=256)(self._scan_text)
        self.personal_kinds = personal_kinds
        self._personal = PersonalDataFinder(personal_kinds) if personal_kinds else None

    @cached_property
    def _plugins(self) -> list[BasePlugin]:
        """Made where the first line is looked at (`gated_plugins`)."""
        return _plugins()

    @cached_property
    def _keywords(self) -> tuple[re.Pattern[str], BasePlugin]:
        """detect-secrets' keyword detector, and a search for its keywords (a line without one is not its)."""
        from detect_secrets.plugins.keyword import DENYLIST, KeywordDetector

        return re.compile("|".join(DENYLIST), re.IGNORECASE), KeywordDetector()

    def _keyword_findings(self, text: str) -> list[tuple[str, str]]:
        if not holds_keyword_hint(text):
            return []
        found: list[tuple[str, str]] = []
        for line in text.splitlines():
            found.extend(self._keyword_line(line))
        return found

    def _keyword_findings_in_line(self, line: str) -> tuple[tuple[str, str], ...]:
        """The keyword detector's findings in one line: remembered, as `_line` remembers the plugins'
        (a conversation's lines come back in every later call's prompt and in each of its examples)."""
        from detect_secrets.filters import heuristic

        words, detector = self._keywords
        if words.search(line) is None:
            return ()
        values = dict.fromkeys(detector.analyze_string(line))  # several of its forms may match
        # detect-secrets' indirect reference test backtracks over a long line: asked only of a line
        # with a finding to set aside
        if not values or heuristic.is_indirect_reference(line):
            return ()
        return tuple(
            (detector.secret_type, value)
            for value in values
            if not (
                _LEFT_BY_THE_FILTER.search(value)
                or heuristic.is_templated_secret(value)
                or heuristic.is_prefixed_with_dollar_sign(value)
                or heuristic.is_sequential_string(value)
                or heuristic.is_potential_uuid(value)
                or heuristic.is_not_alphanumeric_string(value)
            )
        )

    def fingerprint(self) -> str:
        """What this scanner looks for, as a digest (the plugins' patterns, the keyword detector, and a
        hash of each secret value, never the value): an inspection made by a scanner with the same
        fingerprint stands."""
        digest = hashlib.sha256(self._plugins_digest.encode() + b"\0KeywordDetector")
        for secret in self._env_secrets:
            digest.update(b"\2" + hashlib.sha256(secret.encode("utf-8", "surrogatepass")).digest())
        if self._personal is not None:
            digest.update(b"\3" + repr(sorted(self.personal_kinds)).encode() + finder_digest().encode())
        return digest.hexdigest()

    def find_personal(self, text: str) -> tuple[str, ...]:
        """The kinds of personal data in `text`, one entry per finding (placeholders the filter left
        are not findings); never the values."""
        if self._personal is None:
            return ()
        return tuple(PERSONAL_PREFIX + kind for _, _, kind in self._personal.spans(text))

    def find(self, text: str) -> tuple[tuple[str, str], ...]:
        """(secret type, matched value) pairs in `text`, line by line as detect-secrets scans (the
        remembered tuple itself, not a copy: every message of a day's datasets comes here)."""
        return self._text(text)

    def _scan_text(self, text: str) -> tuple[tuple[str, str], ...]:
        found: list[tuple[str, str]] = []
        if self.gate is None or self.gate.candidates(text):
            for line in text.splitlines() or [text]:
                found.extend(self._line(line))
        found.extend(self._keyword_findings(text))
        found.extend(("Environment secret", value) for value in self._env_secrets if value in text)
        return tuple(found)

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
