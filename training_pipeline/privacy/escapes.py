"""What an escaped text reads as: URLs and form bodies write people's addresses and numbers, and tokens,
with percent-escapes (`?email=jane.doe%40example.com`, `tel:%2B14155550123`,
`redirect_uri=https%3A%2F%2Fapp%2Fcb%3Fcode%3Dsk_live_…`), and web pages, which a browsing agent's tools
return, write them with character references (`jane&#64;example.com`, `jane&commat;example&period;com`),
where no rule or recognizer reads them. A text quoting a string as code or JSON writes it escaped
(a traceback's `'C:\\\\Users\\\\jdoe\\\\data.csv'`, PHP's `"https:\\/\\/…"`, `"jdoe\\u0040…"`), and a
contact page spells an address out (`jdoe [at] example [dot] com`; without brackets only whole,
`jdoe at example dot com`). The finder and the filter read such
a text as it reads, then map what they find back onto it."""

from __future__ import annotations

import re

__all__ = ["may_be_escaped", "unescaped"]

#: a percent-escape of a printable ASCII character, an HTML character reference (decimal, hex, named),
#: a backslash-escape of a backslash, a slash, a quote or a printable ASCII character (`\\u0040`), or
#: an address's `@` and `.` written as words in brackets, as a web page hides it from harvesters
#: (`jdoe [at] example [dot] com`, `jdoe(at)example(dot)com`)
_ESCAPE = re.compile(
    r"%([2-7][0-9A-Fa-f])|&#([0-9]{2,3});|&#[xX]([0-9A-Fa-f]{2});|&([A-Za-z]{2,6});"
    r"|\\(?:([\\/\"])|u00([2-7][0-9A-Fa-f]))|[ \t]?[\[({]((?i:at|dot))[\])}][ \t]?"
)
_SPELT = {"at": "@", "dot": "."}
#: an address spelt out with no brackets (`jdoe at example dot com`, `j.doe AT mail DOT example DOT org`):
#: only whole, ending in a common top-level domain, and not after a word prose says a site is with ("we
#: are at example dot com", "look at", "find us at")
_SPELT_ADDRESS = re.compile(
    r"(?<![\w.%+-])"
    r"(?!(?i:are|is|am|was|were|be|been|us|we|me|you|him|her|them|it|look|looking|looked|find|found|visit|"
    r"located|available|online|live|hosted|here|there|now|also|only|site|website|page|blog|home)[ \t])"
    r"[A-Za-z0-9._%+-]+[ \t]+(?:at|AT|At)[ \t]+[A-Za-z0-9-]+"
    r"(?:[ \t]+(?:dot|DOT|Dot)[ \t]+[A-Za-z0-9-]+)*[ \t]+(?:dot|DOT|Dot)[ \t]+"
    r"(?i:com|org|net|edu|gov|mil|int|io|co|ai|dev|app|me|info|biz|us|uk|ca|au|de|fr|es|it|nl|se|no|fi|dk|"
    r"ch|at|be|pl|cz|ru|jp|cn|in|br|mx|nz|ie|il|kr|tw|sg|hk|za)(?![\w.-])"
)
_SPELT_WORD = re.compile(r"[ \t]+(at|AT|At|dot|DOT|Dot)[ \t]+")
#: the named references of the characters addresses, numbers and tokens are written with
_NAMED = {
    "commat": "@",
    "period": ".",
    "plus": "+",
    "lowbar": "_",
    "hyphen": "-",
    "dash": "-",
    "colon": ":",
    "sol": "/",
    "equals": "=",
    "quest": "?",
    "num": "#",
    "amp": "&",
    "quot": '"',
    "apos": "'",
}
#: where a character reference, a backslash-escape or a bracketed word may begin: each branch opens
#: with its own literal, so `re` looks only at the places those characters stand (a class opening a
#: branch has it try every position: three times the time on prose)
_REFERENCE = re.compile(
    r"&#|&[A-Za-z]{2,6};|\\[\\/\"u]|\[(?i:at|dot)[\])}]|\((?i:at|dot)[\])}]|\{(?i:at|dot)[\])}]"
)


def may_be_escaped(text: str) -> bool:
    """Whether `text` may hold an escape `unescaped` reads: a scan of it as written may miss what it
    holds. Asked of most texts a day holds, so the characters each escape needs are looked for first,
    one literal at a time, a single character before two (`t)` ends a bracketed word, and a log of
    ordinary lines has no bracket to look for it after): most texts have none, and no pattern is run."""
    if "%" in text:
        return True
    if _says_dot(text) and _SPELT_ADDRESS.search(text) is not None:
        return True
    if not (
        "&" in text
        or "\\" in text
        or (
            (")" in text or "]" in text or "}" in text)
            and ("t)" in text or "t]" in text or "t}" in text or "T)" in text or "T]" in text or "T}" in text)
        )
    ):
        return False
    return _REFERENCE.search(text) is not None


def _says_dot(text: str) -> bool:
    """Whether `text` may spell an address in words (`_SPELT_ADDRESS`): it says "dot", looked for
    before the pattern runs."""
    return "dot " in text or "DOT " in text or "Dot " in text


def _read(match: re.Match[str]) -> str | None:
    """The printable ASCII character an escape stands for; None for any other (`%C3`, `&nbsp;`)."""
    percent, decimal, hexadecimal, name, backslashed, unicode, spelt = match.groups()
    if name is not None:
        return _NAMED.get(name.lower())
    if backslashed is not None:
        return backslashed
    if spelt is not None:
        return _SPELT[spelt.lower()]
    code = int(decimal) if decimal is not None else int(percent or hexadecimal or unicode, 16)
    return chr(code) if 32 <= code < 127 else None


def _escapes(text: str) -> list[tuple[int, int, str]]:
    """Each escape `text` holds that stands for a printable ASCII character: where, and which."""
    found = [
        (match.start(), match.end(), character)
        for match in _ESCAPE.finditer(text)
        if (character := _read(match)) is not None
    ]
    if _says_dot(text):
        for address in _SPELT_ADDRESS.finditer(text):
            for word in _SPELT_WORD.finditer(text, address.start(), address.end()):
                found.append((word.start(), word.end(), _SPELT[word.group(1).lower()]))
    return found


def unescaped(text: str) -> tuple[str, list[int]] | None:
    """`text` with its escapes of printable ASCII read, and where each of its characters starts in `text`
    (and its length, last); None when it has none. Other escapes (a UTF-8 sequence's, `&nbsp;`) are left
    as written: one escape, one character, so every span of the one maps onto the other."""
    if not may_be_escaped(text):
        return None
    parts: list[str] = []
    starts: list[int] = []
    position = 0
    for start, end, character in sorted(_escapes(text)):
        if start < position:
            continue  # inside an escape read already
        parts += (text[position:start], character)
        starts += (*range(position, start), start)
        position = end
    if not parts:
        return None
    parts.append(text[position:])
    starts += (*range(position, len(text)), len(text))
    return "".join(parts), starts
