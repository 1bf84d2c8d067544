"""Secrets named by their key: `fooToken = "…"`, `FOO_TOKEN=…`, YAML `api_key: …`, JSON `"secret": "…"`,
subscripts (`os.environ["API_KEY"] = "…"`, `config['secret'] = …`), TOML, URL query strings
(`?access_token=…&`) and HTTP headers (`X-Api-Key: …`), whatever the vendor.

detect-secrets' keyword detector and gitleaks' generic rule look for the same thing; this one covers
the forms both miss (a query string's `&`, a header) and redacts only the value. A value counts when
its key names a secret (token, secret, password, api key, credential, private key, auth, in any case
style: the key's last words decide, so `author`, `tokenizer`, `credentialsId` and `publicToken` do
not), it is long and random enough to be a credential, and it is not a placeholder (`xxxx`,
`<your-key>`, `EXAMPLE`, `${VAR}`, `{{ … }}`), a number, a code reference (`self.password`,
`os.environ[...]`, a call) or a type.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from training_pipeline.privacy.credential_rule import (
    CredentialRule,
    LazyPattern,
    compiled,
    is_placeholder,
)
from training_pipeline.privacy.gitleaks import GLOBAL_ALLOWLIST, shannon_entropy
from training_pipeline.privacy.passwords import chosen_password, password_key
from training_pipeline.privacy.prefilter import stand_in_bytes
from training_pipeline.privacy.token_shape import (
    KEY_WORD,
    PLACEHOLDER_VALUE,
    WORDS_ONLY,
    credential_shaped,
    is_reference,
)

_WORDS = (
    r"token|secret|passw(?:or)?d|passphrase|pwd|api[_.-]?key|apikey|access[_.-]?key|private[_.-]?key"
    r"|credentials?|creds|auth(?:[_.-]?(?:key|token))?|client[_.-]?secret|signing[_.-]?key"
)
#: key, optional closing quote (and bracket: `os.environ["API_KEY"] = …`), separator, optional opening
#: quote, value (compiled where the gate first
#: names the rule, `credential_rule.LazyPattern`: most processes never need it)
_PATTERN = LazyPattern(
    rf"(?<![A-Za-z0-9])(?P<key>[A-Za-z0-9_.-]{{0,40}}?(?:{_WORDS})[A-Za-z0-9_.-]{{0,24}})[\"'`]?\]?"
    r"[ \t]{0,4}(?::=|=>|->|=|:)[ \t]{0,4}(?:(?:bearer|basic|token)[ \t]+)?[\"'`]?"
    r"(?P<value>[^\s\"'`,;<>(){}\[\]\\]{8,256})",
    re.IGNORECASE | re.ASCII,
)
#: the forms with no `=` or `:` between key and value: a shell's `setenv NAME value` (csh) and `set -x NAME
#: value` (fish), a Dockerfile's `ENV NAME value`, a command's `--api-key value`, and prose's `my token
#: is value`. Values there must look like a key by themselves (`KeyedSecretRule.spaced`)
_KEY = rf"[A-Za-z0-9_.-]{{0,40}}?(?:{_WORDS})[A-Za-z0-9_.-]{{0,24}}"
_SPACED_PATTERN = LazyPattern(
    r"(?:(?<![A-Za-z0-9_-])(?:(?:setenv|ENV|set[ \t]{1,8}-[a-zA-Z]{1,3})[ \t]{1,8}|--?)"
    rf"(?P<key>{_KEY})[ \t]+|(?<![A-Za-z0-9])(?P<key2>{_KEY})[ \t]+is[ \t]+)[\"'`]?"
    r"(?P<value>[^\s\"'`,;<>(){}\[\]\\]{8,256})",
    re.IGNORECASE | re.ASCII,
)
#: a key reaches this far before its secret word (`_KEY`'s run of key characters before the word)
_KEY_REACH = 40
#: what the spaced form's `setenv`, `ENV` or `set -x` with their blanks add before a key
_SPACED_LEAD = 23
#: the lower-case opening of each of `_WORDS`' alternatives: wherever one of them matches, one of these
#: begins (`api` for `api_key` and `apikey`, `pass` for `password` and `passphrase`)
_WORD_OPENINGS = (
    b"token",
    b"secret",
    b"pass",
    b"pwd",
    b"api",
    b"access",
    b"private",
    b"cred",
    b"auth",
    b"client",
    b"signing",
)
#: where a match of either pattern can start: a key character with no letter or digit before it
_START = LazyPattern(r"(?<![A-Za-z0-9])[A-Za-z0-9_.-]", re.ASCII)
#: the lowered stand-in's bytes, key characters kept, every other byte a blank: where a key's run begins
_NOT_KEY = bytes(c if chr(c) in "abcdefghijklmnopqrstuvwxyz0123456789_.-" else 32 for c in range(256))
_SECRET_WORDS = {
    "token",
    "secret",
    "password",
    "passwd",
    "pwd",
    "passphrase",
    "apikey",
    "credential",
    "credentials",
    "creds",
    "auth",
    "pass",
    "privatekey",
}
_SECRET_PAIRS = {
    ("api", "key"),
    ("access", "key"),
    ("private", "key"),
    ("signing", "key"),
    ("secret", "key"),
    ("auth", "key"),
    ("encryption", "key"),
    ("master", "key"),
}
#: a key about a secret, not holding one (its id, name, URL, size...), or a public or anti-forgery value
_NOT_SECRET_LAST = {
    "id",
    "ids",
    "name",
    "names",
    "type",
    "types",
    "url",
    "uri",
    "path",
    "file",
    "length",
    "size",
    "count",
    "version",
    "hash",
    "ttl",
    "expiry",
    "expires",
    "expiration",
    "endpoint",
    "header",
    "field",
    "prefix",
    "limit",
    "usage",
    "used",
    "audience",
    "format",
    "policy",
    "scope",
    "scopes",
    "provider",
    "manager",
    "store",
    "storage",
    "mode",
    "source",
    "chars",
    "str",
    "signatures",
    "alphabet",
}
_NOT_SECRET_ANY = {"public", "csrf", "xsrf", "authenticity", "tokenizer", "tokens", "max", "num"}


def names_something_else(key: str) -> bool:
    """Whether a key names something about a secret, not the secret: its id, size, name, a public or
    anti-forgery value (`credentialsId`, `KeySize`, `publicToken`, `authenticity_token`)."""
    words = [w.lower() for w in KEY_WORD.findall(key)]
    return bool(words) and (words[-1] in _NOT_SECRET_LAST or bool(_NOT_SECRET_ANY.intersection(words)))


@lru_cache(maxsize=1024)
def secret_key(key: str) -> bool:
    """Whether a key names a secret, by its words; the secret word must be one of its last two."""
    words = [w.lower() for w in KEY_WORD.findall(key)]
    if not words or words[-1] in _NOT_SECRET_LAST or _NOT_SECRET_ANY.intersection(words):
        return False
    tail = words[-2:]
    return bool(_SECRET_WORDS.intersection(tail)) or tuple(tail) in _SECRET_PAIRS


@dataclass(frozen=True, slots=True)
class KeyedSecretRule(CredentialRule):
    """The value of a secret-named key; `CredentialRule.redact` with the checks above."""

    whole_token: bool = True
    #: a form with no separator between key and value (`_SPACED_PATTERN`): the value must also look like
    #: a key by itself, as words after `token is` are prose
    spaced: bool = False

    def secret_span(self, match: re.Match[str], text: str) -> tuple[int, int] | None:
        start, end = match.span("value")
        if text[match.start() - 1 : match.start()] in ("?", "&"):  # a query string: `&` ends it
            cut = text.find("&", start, end)
            end = end if cut < 0 else cut
        elif (field := _NEXT_FIELD.search(text, start, end)) is not None:  # a form's body
            end = field.start()
        while end > start and text[end - 1] == ".":  # a sentence's full stop, not the value's
            end -= 1
        key = match.group("key") or match.groupdict().get("key2") or ""
        value = text[start:end]
        if value == key or not looks_like_credential(key, value, text, end):
            return None  # `session_auth=session_auth`: code passing a variable on
        if self.spaced and not _key_shaped(value):
            return None
        return start, end

    def searcher(self, text: str) -> Callable[[int], re.Match[str] | None]:
        """The pattern's first match at or after a position, as `re`'s search finds it, without trying
        the pattern at every position (its lazy key makes each try cost forty). A match holds a secret
        word inside a run of key characters that begins at most `_KEY_REACH` before the word (and the
        spaced form's lead, `_SPACED_LEAD`, before that run): so the first word at or after the position
        bounds where the first match can start, and only the places in that stretch where a key can
        start are tried; past that word, the next one. Words are found by `bytes.find` in the text's
        ASCII stand-in (one byte per character: positions agree), each word's next place remembered."""
        pattern, start = compiled(self.pattern), compiled(_START)
        lowered = stand_in_bytes(text).lower()
        runs = lowered.translate(_NOT_KEY)
        lead = _SPACED_LEAD if self.spaced else 0
        #: each opening's next place at or after `since`, as (since, place); -1: none after it
        next_of = {opening: (0, lowered.find(opening)) for opening in _WORD_OPENINGS}

        def first_word(position: int) -> int:
            first = -1
            for opening, (since, place) in next_of.items():
                if (place != -1 and place < position) or since > position:
                    place = lowered.find(opening, position)
                    next_of[opening] = (position, place)
                if place != -1 and (first == -1 or place < first):
                    first = place
            return first

        def next_match(position: int) -> re.Match[str] | None:
            while (word := first_word(position)) != -1:
                run = runs.rfind(b" ", max(0, word - _KEY_REACH), word) + 1 or word - _KEY_REACH
                for candidate in start.finditer(text, max(position, run - lead), word + 1):
                    match = pattern.match(text, candidate.start())
                    if match is not None:
                        return match
                position = word + 1
            return None

        return next_match


#: the next field of a form's body (`password=…&user=bob`, OAuth's `client_secret=…&scope=read`)
_NEXT_FIELD = re.compile(r"&[A-Za-z_][A-Za-z0-9_.-]{0,40}=")
#: a value as the keyed rule takes one (`_PATTERN`'s `value`)
_VALUE = re.compile(r"[^\s\"'`,;<>(){}\[\]\\]{8,256}")


def secret_under(key: str, value: str) -> bool:
    """Whether `value`, held under `key` in an object (a config in a tool's result, `{"api_key": "…"}`),
    is a secret by the rule's tests: the text form (`"api_key": "…"`) is what the rule reads in a text,
    and a trajectory's own objects are walked string by string. A password's field is read as one
    whatever it holds (`chosen_password`), as the text's password rules read it."""
    if password_key(key) and chosen_password(value):
        return True
    return secret_key(key) and _VALUE.fullmatch(value) is not None and _credential_value(value)


def looks_like_credential(key: str, value: str, text: str, end: int) -> bool:
    if text[end : end + 1] in ("(", "[") or not secret_key(key):
        return False
    return _credential_value(value)


@lru_cache(maxsize=4096)  # a leaked key comes back in every call of the agent that holds it
def _credential_value(value: str) -> bool:
    """Whether a value under a secret's key is long and random enough to be one, and not a placeholder,
    a number, a reference in code or an allowlisted value."""
    if len(value) < 10 or is_placeholder(value) or PLACEHOLDER_VALUE.search(value):
        return False
    if value.isdigit() or is_reference(value):
        return False
    if any(allow.allows(value, value, value) for allow in GLOBAL_ALLOWLIST):
        return False
    if not any(c.isdigit() for c in value):
        # letters only: words (`password_mgr`, `Proxy-Authorization`) unless long, mixed and random
        if WORDS_ONLY.match(value) or len(value) < 16:
            return False
        return shannon_entropy(value) >= 3.8
    return shannon_entropy(value) >= (3.0 if len(value) >= 20 else 2.8)


@lru_cache(maxsize=4096)
def _key_shaped(value: str) -> bool:
    """A value that is a key whatever precedes it (`token_shape.credential_shaped`), or one of 12 or more
    characters with letters and three digits, or a digit with a symbol or both cases (`cyk0m5igf5811p9`,
    a password `dB2yF6@qL9vZm1P#4J`), random enough: never lower-case words with a number
    (`stored_in_vault_v2`)."""
    if credential_shaped(value):
        return True
    digits = sum(c.isdigit() for c in value)
    # a password's rules: a symbol, or both cases, beside a digit (`sug5XpdpaoxtOH`, `CleartextPassword1`)
    mixed = any(not c.isalnum() and c not in "_-." for c in value) or (
        any(c.isupper() for c in value) and any(c.islower() for c in value)
    )
    return (
        len(value) >= 12
        and any(c.isalpha() for c in value)
        and (digits >= 3 or (digits > 0 and mixed))
        and shannon_entropy(value) >= 3.0
    )


KEYED_SECRET = KeyedSecretRule("keyed-secret", _PATTERN, group=2)
#: the same label: a reader of a dataset sees a keyed value either way
KEYED_SPACED = KeyedSecretRule("keyed-secret", _SPACED_PATTERN, spaced=True)
