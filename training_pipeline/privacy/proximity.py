"""Keys told by what is near them: a token of credential shape (long, mixed, random) a few words after a
credential word (`token`, `secret`, `api key`…) or a service's name, however the two are joined.

The rule sets and the keyed rule need a separator they know between a key's name and its value
(`airbrake_key = …`, `"token": …`). People also write `my smartsheet token is MVE7zmdx…`, `use
easyinsight key 987ahjjd… for the export`, or put `# smartsheet credentials` on the line above
`sheet_id := "MVE7…"`: this rule looks for the token first (credential-shaped tokens are rare in text,
words before them are not), then for a credential word or a service's name in the few dozen characters
before it, on its line or the nearest line above it that is not blank.

What counts as credential-shaped (`credential_shaped`): 16 to 512 characters of letters, digits and
`_+/=.-`; letters and digits both (or, letters only, mixed case at 24 or more); a run of 12 letters and
digits in it or a UUID's shape; no alphabet or counting run (`ABCDEFGH`, a fixture's); random enough
(Shannon entropy); and not a placeholder, a code reference (`self.api_token_value`), a path, or a name
of words with a number or two (`HTTPPasswordMgrWithDefaultRealm`, `stringEndArchive64`). A service's
name alone asks more: not only hexadecimal (a commit or an object id beside `github` is no secret),
more entropy, and the name outside a URL (an id in a link to the service is the link's). A key the
text assigns it to decides where its words say it names something else (`credentialsId`, `publicToken`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from training_pipeline.privacy.credential_rule import (
    CredentialRule,
    LazyPattern,
    compiled,
)
from training_pipeline.privacy.keyed import names_something_else
from training_pipeline.privacy.prefilter import stand_in_bytes
from training_pipeline.privacy.token_shape import credential_shaped

__all__ = ["KEYWORD_PROXIMITY", "ProximityRule", "service_names"]

#: words that name a credential, looked for in the text before a token (lower case, as substrings:
#: `sheetApiKey`, `AIRBRAKE_TOKEN` and `api-key` all hold one)
CREDENTIAL_WORDS = (
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "credential",
    "creds",
    "auth",
    "bearer",
    "signature",
    "login",
)
#: credential words that are too common inside other words (`bypass`, `compass`): counted as words only
_WHOLE_WORDS = frozenset({"pass", "pw"})
#: how far before a token its credential word or service name may be, in characters, and in lines
_WINDOW = 48
_TOKEN_CHARS = r"A-Za-z0-9_+/.~\-"
#: `=` as a token's padding, or before a checksum (`…ew=366BFE3A`); after `=` a token starts (`KEY=…`)
_TOKEN = LazyPattern(
    rf"(?<![{_TOKEN_CHARS}])[A-Za-z0-9_+\-][{_TOKEN_CHARS}]{{15,511}}(?:=[A-Za-z0-9]{{8,64}})?={{0,3}}"
    rf"(?![{_TOKEN_CHARS}=])",
    re.ASCII,
)
#: a text's characters as `a` where a token may hold them and a space elsewhere, one byte each (from
#: `prefilter.stand_in_bytes`): where `_TOKEN` can start is found by `bytes.find`, not tried by `re` at
#: every position of a long prompt
_TOKEN_MARKS = bytes(
    ord("a") if chr(byte) in "+/.~-_" or (chr(byte).isascii() and chr(byte).isalnum()) else ord(" ")
    for byte in range(256)
)
_LONG_RUN = b"a" * 16
#: the key a token is assigned to, where the text before it ends with one (`credentialsId: '`,
#: `"kms_key_id": "`, `<UserSecretsId>`)
_KEY_BEFORE = re.compile(
    r"([A-Za-z_][A-Za-z0-9_.-]*)"
    r"(?:[\"'`\]>]+[ \t]*(?::=|=>|->|=|:|,)?|[ \t]*(?::=|=>|->|=|:|,))[ \t]*[\"'`(\[<]*$"
)
#: a URL: a service's name in one is where it links (`github.com/…/issues/1#issuecomment-6948…`,
#: `youtube.com/playlist?list=PLhQ…`), not what the token after it is
_URL = re.compile(r"[a-z][a-z0-9+.-]*://\S*")
#: how far before the window a URL reaching into it is looked for
_URL_BEFORE = 256
#: what ends a URL as text writes one
_URL_ENDS = " \t\r\n\"'<>()[]`"
#: what separates a URL's parts; in a URL only the part just before a token names it: its query's key
#: (`?access_token=…`) or the segment a fragment follows (`/reset-password#…`), and a credential word
#: elsewhere in the URL names something else (a repository's `detect-secrets` in
#: `github.com/Yelp/detect-secrets/issues/272#issuecomment-…`)
_URL_PARTS = "/?&#;"
#: words in the text before a token that say it is an anti-forgery value, not a credential
_NOT_CREDENTIAL = ("csrf", "xsrf", "authenticity")
_WORD = re.compile(r"[a-z][a-z0-9]+")
#: a service's name shorter than this is a common word too often (`box`, `close`)
_SERVICE_LENGTH = 5


@cache
def service_names() -> frozenset[str]:
    """The services Kingfisher's rules name (`kingfisher.airbrake.1` -> `airbrake`), lower case."""
    from training_pipeline.privacy import kingfisher

    return frozenset(
        name
        for name in (label_id.split(".")[1] for label_id in kingfisher.rule_ids())
        if len(name) >= _SERVICE_LENGTH and name.isalpha()
    )


def _credential_word_in(lowered: str) -> bool:
    return any(word in lowered for word in CREDENTIAL_WORDS)


@dataclass(frozen=True, slots=True)
class ProximityRule(CredentialRule):
    """A credential-shaped token after a credential word or a service's name (see the module)."""

    whole_token: bool = True
    skip_placeholders: bool = True

    @cache  # noqa: B019 (one rule, made once)
    def gate(self) -> LazyPattern:
        """A credential word or a service's name, then somewhere after it what every credential-shaped
        token holds: 12 letters and digits in a row, or a UUID's head."""
        names = service_names()
        singular = {name[:-1] for name in names if name.endswith("s")}
        words = "|".join(sorted({*CREDENTIAL_WORDS, *_WHOLE_WORDS, *names, *singular}))
        return LazyPattern(
            rf"(?:{words})[\s\S]*(?:[A-Za-z0-9]{{12}}|[0-9a-fA-F]{{8}}-[0-9a-fA-F]{{4}}-)",
            re.ASCII | re.IGNORECASE,
        )

    def searcher(self, text: str) -> Callable[[int], re.Match[str] | None]:
        """`_TOKEN`'s first match at or after a position, as `re`'s search finds it. A match starts where
        16 token characters follow a character that is not one (or the text's start): so only the first
        place of each such run (at or after the position) is tried, and a run where the pattern fails
        there holds no match."""
        pattern = compiled(self.pattern)
        marks = stand_in_bytes(text).translate(_TOKEN_MARKS)

        def next_match(position: int) -> re.Match[str] | None:
            while (start := marks.find(_LONG_RUN, position)) != -1:
                match = pattern.match(text, start)
                if match is not None:
                    return match
                position = marks.find(b" ", start)
                if position == -1:
                    return None
            return None

        return next_match

    def secret_span(self, match: re.Match[str], text: str) -> tuple[int, int] | None:
        token = match.group().rstrip(".")  # a full stop after it is the sentence's
        if not credential_shaped(token) or not self._named_before(text, match.start(), token):
            return None
        return match.start(), match.start() + len(token)

    def _named_before(self, text: str, start: int, token: str) -> bool:
        """Whether a credential word, or a service's name with a token `credential_shaped` strictly,
        is in the `_WINDOW` characters before `start`, on its line or the one above."""
        window = _window(text, start)
        if "ENC[" in window:
            return False  # a value SOPS encrypted: its parts are random, and no secret
        named = _KEY_BEFORE.search(window)
        key = named.group(1) if named is not None else ""
        if _credential_word_in(key.lower()) and names_something_else(key):
            return False  # the key names something about a secret: `credentialsId`, `publicToken`
        lowered = window.lower()
        if any(word in lowered for word in _NOT_CREDENTIAL):
            return False
        link = _link_start(text, start)
        if link is not None:  # in a URL: what is before the URL, and the part naming the token
            lowered = f"{_window(text, link)} {_part_before(text, link, start)}".lower()
        words = _WORD.findall(lowered)
        if _credential_word_in(lowered) or any(word in _WHOLE_WORDS for word in words):
            return True
        if not credential_shaped(token, strict=True):
            return False
        names = service_names()
        # URLs read whole: one may start before the window (`https://` cut off)
        context = text[max(0, start - _WINDOW - _URL_BEFORE) : start].lower()
        unlinked = _URL.sub(lambda url: " " * len(url.group()), context)
        words = _WORD.findall(_window(unlinked, len(unlinked)))
        return any(
            word in names or f"{word}s" in names or (word.endswith("s") and word[:-1] in names)
            for word in words
        )


def _link_start(text: str, start: int) -> int | None:
    """Where the URL that the token at `start` stands in starts, or None when it stands in none (found
    by `rfind`: a pattern searched backwards from every position is quadratic in a long run)."""
    floor = max(0, start - _URL_BEFORE * 8)
    scheme = text.rfind("://", floor, start)
    if scheme < 0:  # most tokens: no URL before them at all
        return None
    run = max(floor, *(text.rfind(mark, scheme, start) + 1 for mark in _URL_ENDS))
    return None if run > scheme else max(floor, *(text.rfind(mark, floor, scheme) + 1 for mark in _URL_ENDS))


def _part_before(text: str, link: int, start: int) -> str:
    """The URL's part just before the token at `start`, with the separators after it (`token=`)."""
    end = start
    while end > link and text[end - 1] in _URL_PARTS + "=":
        end -= 1
    return text[max(link, *(text.rfind(mark, link, end) + 1 for mark in _URL_PARTS)) : start]


def _window(text: str, start: int) -> str:
    """The `_WINDOW` characters before `start`, of its line and the nearest line above it not blank."""
    window = text[max(0, start - _WINDOW) : start]
    if window.count("\n") > 1:
        lines = window.split("\n")
        above = next((line for line in reversed(lines[:-1]) if line.strip()), "")
        window = f"{above}\n{lines[-1]}"
    return window


KEYWORD_PROXIMITY = ProximityRule("keyword-proximity", _TOKEN)
