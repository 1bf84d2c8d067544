"""What a credential rule is: a labelled pattern whose matches (or one group of them) become
`<REDACTED:label>`. The rule sets (`rules`, `gitleaks`) are built from it."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

_PLACEHOLDER = re.compile(r"<REDACTED:[a-z0-9-]+>")
_A = re.ASCII  # JavaScript's \b and /i (without the u flag) are ASCII-only


_FAKE = re.compile(
    r"x{6,}|X{6,}|\*{4,}|#{4,}|0{12,}|EXAMPLE|\$\{|\{\{|<[a-z-]+>|^(?:changeme|password|secret)$", re.ASCII
)


def looks_fake(secret: str) -> bool:
    """A documentation value, a template or a mask where a credential would be."""
    return _FAKE.search(secret.strip("\"'`")) is not None


#: `self.password`, `os.environ.get`, `win32api.RegEnumKey`: a dotted name, a reference in code
REFERENCE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$")


def splice(match: re.Match[str], span: tuple[int, int], placeholder: str) -> str:
    """The match with the part at `span` (positions in the searched text) replaced by `placeholder`."""
    whole, base = match.group(), match.start()
    return whole[: span[0] - base] + placeholder + whole[span[1] - base :]


def is_placeholder(text: str) -> bool:
    """Already redacted: rules leave their own and each other's labels alone (redaction is idempotent)."""
    return _PLACEHOLDER.fullmatch(text) is not None


@dataclass(frozen=True, slots=True)
class CredentialRule:
    label: str
    pattern: re.Pattern[str]
    #: Redact only this group (e.g. the password of a URL), keeping the rest readable.
    group: int = 0
    #: Leave values that are placeholders (`xxxx`, `EXAMPLE`, `${VAR}`) alone: the strict profile's
    #: choice; elizaOS's own rules redact whatever their pattern matches.
    skip_placeholders: bool = False

    def strict(self) -> CredentialRule:
        """This rule as the strict profile runs it."""
        return dataclasses.replace(self, skip_placeholders=True)

    def redact(self, text: str) -> tuple[str, int]:
        """`text` with every match replaced by `<REDACTED:label>`, and how many there were."""
        placeholder = f"<REDACTED:{self.label}>"
        hits = 0

        def replace(match: re.Match[str]) -> str:
            nonlocal hits
            secret = match.group(self.group)
            if is_placeholder(secret) or (self.skip_placeholders and looks_fake(secret)):
                return match.group()  # redacted already (redaction is idempotent), or not a credential
            hits += 1
            return splice(match, match.span(self.group), placeholder)

        return self.pattern.sub(replace, text), hits


#: `\b` and then literal characters, the first a word character, the last not under a quantifier.
_BOUNDARY_THEN_LITERAL = re.compile(r"\\b([A-Za-z0-9_][A-Za-z0-9_-]*)(?![?*+{])")


def literal_first(pattern: str) -> str:
    """`\\bsk-…` as `sk-(?<!\\wsk-)…`: the same matches, but a pattern that starts with a literal is found
    by `re`'s fast literal search instead of being tried at every position (8x faster on long prompts).
    Before a word character, `\\b` means the previous character is not one, which the lookbehind checks."""
    head = _BOUNDARY_THEN_LITERAL.match(pattern)
    if head is None:
        return pattern
    literal = head.group(1)
    return f"{literal}(?<!\\w{literal}){pattern[head.end() :]}"
