"""What a credential rule is: a labelled pattern whose matches (or one group of them) become
`<REDACTED:label>`. The rule sets (`rules`, `gitleaks`) are built from it."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

_PLACEHOLDER = re.compile(r"<REDACTED:[a-z0-9-]+>")
#: what a redaction found: (the secret it replaced, the rule's label), in order
Found = list[tuple[str, str]]
_A = re.ASCII  # JavaScript's \b and /i (without the u flag) are ASCII-only
#: a bracketed class in a pattern's text, as `re` reads one: a `]` first in it (after `^` or not) is its
#: own, an escaped character is skipped (what a reading of a pattern's text steps over whole)
CHARACTER_CLASS = r"\[\^?\]?(?:\\.|[^\\\]])*\]"


#: a variable's name of words, one naming a credential, written where the credential goes
#: (`aws_secret_access_key` in `s3://aws_access_key_id:aws_secret_access_key@bucket`, `DB_PASSWORD`)
CREDENTIAL_NAME = (
    r"(?:[a-z]+_)*(?:password|passwd|secret|token|key|pwd)(?:_[a-z]+)*"
    r"|(?:[A-Z]+_)*(?:PASSWORD|PASSWD|SECRET|TOKEN|KEY|PWD)(?:_[A-Z]+)*"
)
#: a mask, a template's stand-in, or a credential's name where the credential goes
_FAKE = re.compile(
    rf"x{{6,}}|X{{6,}}|\*{{4,}}|#{{4,}}|0{{12,}}|EXAMPLE|\$\{{|\{{\{{|<[a-z-]+>|^changeme$|^(?:{CREDENTIAL_NAME})$",
    re.ASCII,
)


def looks_fake(secret: str) -> bool:
    """A documentation value, a template or a mask where a credential would be."""
    return _FAKE.search(secret.strip("\"'`")) is not None


#: `self.password`, `os.environ.get`, `win32api.RegEnumKey`: a dotted name, a reference in code
REFERENCE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$")


#: punctuation a token may go on with, when the secret found at its start holds it too
_TOKEN_PUNCTUATION = frozenset("-_+/=.~")


def token_end(text: str, start: int, end: int) -> int:
    """Where the token that the secret `text[start:end]` begins ends: past `end`, ASCII letters and
    digits (if the secret has any) and the punctuation the secret itself holds. A rule whose pattern
    takes the first 20 characters of a longer token, or caps a value's length, would otherwise leave
    the rest in clear (`glpat-` and 20, then the 8 it did not take). A full stop at the end is the
    sentence's."""
    secret = text[start:end]
    alphanumeric = any(char.isascii() and char.isalnum() for char in secret)
    punctuation = _TOKEN_PUNCTUATION.intersection(secret)
    position, length = end, len(text)
    while position < length:
        char = text[position]
        if not ((alphanumeric and char.isascii() and char.isalnum()) or char in punctuation):
            break
        position += 1
    while position > end and text[position - 1] == ".":  # a sentence's full stop, not the token's
        position -= 1
    return position


#: the parts a token goes on with after a full stop, each long and random: a JWT's payload and
#: signature, an Airtable token's secret after its id (`pat…`), an Authress key's after its client
#: (`sc_….…`); not a file's extension, a domain's next label or a sentence
_DOTTED_PART = re.compile(r"\.([A-Za-z0-9_+/=-]{8,})")


def dotted_end(text: str, end: int) -> int:
    """Where the token that a secret ending at `end` is the first part of ends, past each part after a
    full stop that holds a letter and a digit (a rule that knows a token's first part, or stops at a
    full stop, would leave the rest in clear); `end` when none follows."""
    while (part := _DOTTED_PART.match(text, end)) is not None:
        chars = part.group(1)
        if not (any(c.isdigit() for c in chars) and any(c.isalpha() for c in chars)):
            break
        end = part.end()
    return end


def overlaps_a_placeholder(text: str, start: int, end: int) -> bool:
    """Whether `text[start:end]` takes in part of a placeholder an earlier rule left (`http://<REDACTED:
    github-app-token>@` read as a URL's user and password): redacting it again would break it."""
    if "<REDACTED:" not in text:
        return False
    return any(
        m.start() < end and start < m.end() for m in _PLACEHOLDER.finditer(text, max(0, start - 64), end + 64)
    )


def splice(match: re.Match[str], span: tuple[int, int], placeholder: str) -> str:
    """The match with the part at `span` (positions in the searched text) replaced by `placeholder`."""
    whole, base = match.group(), match.start()
    return whole[: span[0] - base] + placeholder + whole[span[1] - base :]


def is_placeholder(text: str) -> bool:
    """Already redacted: rules leave their own and each other's labels alone (redaction is idempotent)."""
    return _PLACEHOLDER.fullmatch(text) is not None


#: a leading global flags group, `(?i)` and the like (Python takes them nowhere else)
_GLOBAL_FLAGS = re.compile(r"\(\?([aiLmsux]+)\)")
_FLAG_LETTERS = {
    "a": re.ASCII,
    "i": re.IGNORECASE,
    "L": re.LOCALE,
    "m": re.MULTILINE,
    "s": re.DOTALL,
    "u": re.UNICODE,
    "x": re.VERBOSE,
}


class LazyPattern:
    """A regex compiled when first used, standing in for the `re.Pattern` it compiles to: `pattern` and
    `flags` at once, anything else (`search`, `sub`...) from the compiled pattern.

    A rule set of a few hundred patterns runs few of them in a process: the gate names a rule only for
    text it could match, and compiling every pattern of gitleaks' would be paid by every process that
    filters with `strict`, each worker of the pool among them. `flags` are the compiled pattern's, read
    off the pattern: the given ones, its leading global flags, and `re.UNICODE` unless ASCII or LOCALE."""

    __slots__ = ("_compiled", "flags", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        position = 0
        while (group := _GLOBAL_FLAGS.match(pattern, position)) is not None:
            for letter in group.group(1):
                flags |= _FLAG_LETTERS[letter]
            position = group.end()
        self.pattern = pattern
        self.flags = flags if flags & (re.ASCII | re.LOCALE) else flags | re.UNICODE
        self._compiled: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self.flags)
        return self._compiled

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # a slot not set yet (a copy being made), not the pattern's
            raise AttributeError(name)
        return getattr(self.compiled(), name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LazyPattern) and (self.pattern, self.flags) == (other.pattern, other.flags)

    def __hash__(self) -> int:
        return hash((self.pattern, self.flags))


def compiled(pattern: re.Pattern[str] | LazyPattern) -> re.Pattern[str]:
    """The compiled pattern itself, for code that runs a rule: each call through a `LazyPattern` (its
    `__getattr__`, its Python `__hash__` in `boundary_free`'s cache) is a Python call more, which put
    the strict core build at +2.6% instructions per trajectory before the rules and the allowlists went
    through this."""
    return pattern.compiled() if type(pattern) is LazyPattern else pattern  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class CredentialRule:
    label: str
    pattern: re.Pattern[str] | LazyPattern
    #: Redact only this group (e.g. the password of a URL), keeping the rest readable.
    group: int = 0
    #: Leave values that are placeholders (`xxxx`, `EXAMPLE`, `${VAR}`) or part of an earlier rule's
    #: (`overlaps_a_placeholder`) alone: the strict profile's choice; elizaOS's own rules redact
    #: whatever their pattern matches.
    skip_placeholders: bool = False
    #: Redact to the end of the token a secret begins (`token_end`), not only what the pattern took:
    #: the strict profile's choice; elizaOS's rules leave a longer token's tail as elizaOS does.
    whole_token: bool = False

    def strict(self) -> CredentialRule:
        """This rule as the strict profile runs it."""
        return dataclasses.replace(self, skip_placeholders=True, whole_token=True)

    def redacted(
        self,
        text: str,
        match: re.Match[str],
        span: tuple[int, int],
        placeholder: str,
        found: Found | None = None,
    ) -> str | tuple[str, int]:
        """The match with the secret at `span` replaced; for a rule that redacts whole tokens, with where
        the text goes on after it: past the rest of the token when the secret ends the match. `found`
        gets (the secret as redacted, label)."""
        replaced = splice(match, span, placeholder)
        end = span[1]
        if not self.whole_token:
            resume = None
        else:
            resume = match.end()
            if span[1] == resume:
                resume = end = token_end(text, span[0], span[1])
            tail = dotted_end(text, end)
            if tail > end and tail >= resume:  # the token goes on past a full stop the match took or not
                replaced = text[match.start() : span[0]] + placeholder
                resume = end = tail
        if found is not None:  # a full stop that ends it may be the sentence's: not looked for elsewhere
            found.append((text[span[0] : end].rstrip("."), self.label))
        return replaced if resume is None else (replaced, resume)

    def applies(self, text: str) -> bool:
        """Whether the rule runs on `text` at all (gitleaks' rules need one of their keywords)."""
        return True

    def gate(self) -> re.Pattern[str]:
        """What `prefilter.RuleGate` looks for to name this rule: it matches every text the rule could
        redact in (here the rule's own pattern)."""
        return self.pattern

    def redact(self, text: str, found: Found | None = None) -> tuple[str, int]:
        """`text` with the secret of every match (`secret_span`) replaced by `<REDACTED:label>`, and how
        many there were; `found` gets each secret redacted, with the label (`PrivacyFilter` redacts it
        wherever else it appears)."""
        placeholder = f"<REDACTED:{self.label}>"
        hits = 0

        def replace(match: re.Match[str]) -> str | tuple[str, int]:
            nonlocal hits
            span = self.secret_span(match, text)
            if span is None or (self.skip_placeholders and overlaps_a_placeholder(text, *span)):
                return match.group()
            hits += 1
            return self.redacted(text, match, span, placeholder, found)

        return self.sub(replace, text), hits

    def secret_span(self, match: re.Match[str], text: str) -> tuple[int, int] | None:
        """Where the secret of a match is (the rule's group), or None when the match holds none: a
        placeholder (redacted already: redaction is idempotent) or, under `skip_placeholders`, a fake.
        A rule that reads more than its pattern (a key, a token's shape, what stands around it) says so
        here, and `redact` stays one."""
        secret = match.group(self.group)
        if is_placeholder(secret) or (self.skip_placeholders and looks_fake(secret)):
            return None
        return match.span(self.group)

    def sub(self, replace: Callable[[re.Match[str]], str | tuple[str, int]], text: str) -> str:
        """`self.pattern.sub(replace, text)`, what every rule's redaction runs. `replace` may also give
        where the text goes on after its replacement (`redacted`: the rest of a token), past the match."""
        pattern = compiled(self.pattern)
        if boundary_free(pattern) is None and not self.whole_token and type(self).searcher is _base_searcher:
            return pattern.sub(replace, text)  # type: ignore[arg-type]
        next_match = self.searcher(text)
        parts: list[str] = []
        position = search = 0
        while (match := next_match(search)) is not None:
            replaced = replace(match)
            resume = match.end()
            if isinstance(replaced, tuple):
                replaced, resume = replaced
            parts += (text[position : match.start()], replaced)
            position = resume
            search = max(resume, match.start() + 1)  # the next match starts after what was replaced
        if not parts:
            return text
        parts.append(text[position:])
        return "".join(parts)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """`self.pattern.finditer(text)`, found as `sub` finds them."""
        pattern = compiled(self.pattern)
        if boundary_free(pattern) is None and type(self).searcher is _base_searcher:
            return pattern.finditer(text)
        return _each(self.searcher(text))

    def searcher(self, text: str) -> Callable[[int], re.Match[str] | None]:
        """For `text`: the first match at or after a position, as `self.pattern.search(text, position)`
        finds it (credentials are never empty, so matches never are). A rule may find its matches a
        faster way, giving the same ones."""
        pattern = compiled(self.pattern)
        finder = boundary_free(pattern)
        if finder is None:
            return lambda position: pattern.search(text, position)
        return lambda position: _next_match(pattern, finder, text, position)


_base_searcher = CredentialRule.searcher


def _each(next_match: Callable[[int], re.Match[str] | None]) -> Iterator[re.Match[str]]:
    position = 0
    while (match := next_match(position)) is not None:
        yield match
        position = max(match.end(), match.start() + 1)


#: a pattern that opens with `\b` or gitleaks' "no letter or digit before", `(?<![^\W_])` (after its
#: flags, if any): `re` tries such a pattern at every position of a text, where without it it finds the
#: first character or literal by fast search
_OPENING_BOUNDARY = re.compile(r"(\(\?[aiLmsu]+\))?(?:\\b(?![?*+{])|\(\?<!\[\^\\W_\]\))")


@lru_cache(maxsize=1024)
def boundary_free(pattern: re.Pattern[str]) -> re.Pattern[str] | None:
    """`pattern` without its opening `\b`, or None when it has none (or could match an empty string,
    where `finditer` has rules of its own for the next match).

    Every match of the pattern is a match of this one at the same place, where the boundary holds, and
    the rest of the pattern matches there as it did: so the pattern's matches are found by searching
    with this one and keeping the places where the pattern itself matches (`_matches_after_boundary`):
    a pattern that starts with `\b` is tried at every position, one that starts with a literal is found
    by `re`'s literal search."""
    opening = _OPENING_BOUNDARY.match(pattern.pattern)
    if opening is None:
        return None
    rest = (opening.group(1) or "") + pattern.pattern[opening.end() :]
    try:
        if not re._parser.parse(rest, pattern.flags).getwidth()[0]:  # type: ignore[attr-defined]
            return None
        return re.compile(rest, pattern.flags)
    except re.error:
        return None


def _next_match(
    pattern: re.Pattern[str], finder: re.Pattern[str] | None, text: str, position: int
) -> re.Match[str] | None:
    """The first match of `pattern` at or after `position`; with `finder` (`boundary_free`), the
    leftmost place where the rest matches and the boundary holds. A search from a position still sees
    the characters before it (`\b`, lookbehinds), as a search of the whole text does."""
    if finder is None:
        return pattern.search(text, position)
    while (found := finder.search(text, position)) is not None:
        match = pattern.match(text, found.start())  # `\b` here looks at the character before, as search does
        if match is not None:
            return match
        position = found.start() + 1
    return None


#: literal characters in a row that give Hyperscan something to look for first
_LITERAL_RUN = 3


def literal_free(pattern: re.Pattern[str]) -> bool:
    """Whether some match of `pattern` needs no run of `_LITERAL_RUN` literal characters (`[a-f0-9]{40}`)."""
    return not _every_path_has_literal(re._parser.parse(pattern.pattern, pattern.flags))  # type: ignore[attr-defined]


def _every_path_has_literal(items: Any) -> bool:
    constants = re._constants  # type: ignore[attr-defined]
    run = 0
    for op, value in items:
        if op is constants.LITERAL:
            run += 1
            if run >= _LITERAL_RUN:
                return True
            continue
        if op is constants.AT:  # an anchor or a boundary takes no character: the run goes on
            continue
        run = 0
        if op is constants.SUBPATTERN:
            found = _every_path_has_literal(value[-1])
        elif op is constants.BRANCH:
            found = all(_every_path_has_literal(branch) for branch in value[1])
        elif op in (constants.MAX_REPEAT, constants.MIN_REPEAT, constants.POSSESSIVE_REPEAT):
            found = value[0] >= 1 and _every_path_has_literal(value[2])
        elif op is constants.ATOMIC_GROUP:
            found = _every_path_has_literal(value)
        else:  # a class, any character, a lookaround, a back reference
            found = False
        if found:
            return True
    return False


#: `\b` and then literal characters, the first a word character, the last not under a quantifier.
_BOUNDARY_THEN_LITERAL = re.compile(r"\\b([A-Za-z0-9_][A-Za-z0-9_-]*)(?![?*+{])")


def literal_first(pattern: str) -> str:
    """`\\bsk-…` as `sk-(?<!\\wsk-)…`: the same matches, but a pattern that starts with a literal is found
    by `re`'s fast literal search instead of being tried at every position.
    Before a word character, `\\b` means the previous character is not one, which the lookbehind checks."""
    head = _BOUNDARY_THEN_LITERAL.match(pattern)
    if head is None:
        return pattern
    literal = head.group(1)
    return f"{literal}(?<!\\w{literal}){pattern[head.end() :]}"
