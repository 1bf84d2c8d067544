"""What a credential looks like by itself, whatever names it: shared by the rules that find a value by
its key (`keyed`, `passwords`) and a token by the credential word near it (`proximity`)."""

from __future__ import annotations

import re
from functools import lru_cache

from training_pipeline.privacy.credential_rule import REFERENCE, is_placeholder, looks_fake
from training_pipeline.privacy.gitleaks import shannon_entropy

__all__ = ["KEY_WORD", "PLACEHOLDER_VALUE", "WORDS_ONLY", "credential_shaped", "is_reference"]

#: `password_mgr`, `Proxy-Authorization`, `TestSourcePassword`: words, each of two letters or more.
#: Each word is an atomic group: a run of lowercase letters is one word, never split into several,
#: so a long run that fails at its end is given up at once instead of in every possible split
#: (without it, 60 letters and a `!` after a `password:` took hours).
_WORD = r"(?>[A-Z]?[a-z]{2,}|[A-Z]{2,}(?![a-z]))"
WORDS_ONLY = re.compile(rf"^{_WORD}(?:[-_.]?{_WORD})*$")
#: the words of a key (`clientSecret`, `CLIENT_SECRET`, `client-secret`, `db.password`)
KEY_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
#: what a value under a secret's key holds when it holds none: a mask, a template's or a variable's
#: stand-in, an example, a literal of code
PLACEHOLDER_VALUE = re.compile(
    r"x{4,}|\*{3,}|#{4,}|\.{3}|example|your[_.-]|changeme|placeholder|dummy|redacted|^\$|^%|\{\{|<|^null$"
    r"|^none$|^true$|^false$|^undefined$",
    re.IGNORECASE,
)
_RUN = re.compile(r"[A-Za-z0-9]{12}")
#: an alphabet or a counting run, as in documentation and test fixtures (`ABCDEFGHIJ…`)
_SEQUENCE = re.compile(r"abcdefgh|ABCDEFGH|01234567|12345678")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HEX = re.compile(r"[0-9a-fA-F]+")
_DIGITS = re.compile(r"[0-9]")
_NOT_LETTERS = re.compile(r"[^A-Za-z]+")
_FIXTURE_WORDS = re.compile(r"x{4,}|example|your[_.-]|placeholder|dummy|redacted|sample|test[_-]?key", re.I)


def is_reference(value: str) -> bool:
    """`self.password`, `settings.API_KEY`, `win32api.RegEnumKey`: dotted names, short and with few
    digits per part (a token with a dot in it, `s.ZC9Ecf4M5g9o34Q6`, or a JWT, is neither)."""
    return REFERENCE.match(value) is not None and all(
        len(part) <= 32 and sum(c.isdigit() for c in part) <= 2 for part in value.split(".")
    )


@lru_cache(maxsize=8192)
def credential_shaped(token: str, strict: bool = False) -> bool:
    """Whether `token` looks like a credential by itself; `strict`: as one beside only a service's name.
    The cheapest tests first: most long tokens in text are names, which fail the run test. Remembered:
    a trajectory's keys and names (`completionTokens`, a model's) come back in every one."""
    if not 16 <= len(token) <= 512:
        return False
    uuid = _UUID.fullmatch(token) is not None
    if not uuid and _RUN.search(token) is None:
        return False  # `user_id_1234_in_region`: words and numbers, not a key
    digits = len(_DIGITS.findall(token))
    if digits == len(token) or is_reference(token) or token.count("/") > 2:
        return False  # a number, `self.api_token_value`, a path
    if digits <= 2 and WORDS_ONLY.match(_NOT_LETTERS.sub("", token)):
        return False  # `HTTPPasswordMgrWithDefaultRealm`, `stringEndArchive64`: a name, not a key
    if is_placeholder(token) or looks_fake(token) or _FIXTURE_WORDS.search(token) or _SEQUENCE.search(token):
        return False
    entropy = shannon_entropy(token)
    if not digits:
        return len(token) >= 24 and not token.islower() and not token.isupper() and entropy >= 4.0
    if strict:
        return not _HEX.fullmatch(token.replace("-", "")) and entropy >= 3.8
    return entropy >= (3.0 if uuid else 3.3 if len(token) >= 24 else 3.2)
