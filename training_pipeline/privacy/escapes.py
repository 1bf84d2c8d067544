"""What a percent-escaped text reads as: URLs and form bodies write people's addresses and numbers, and
tokens, with escapes (`?email=jane.doe%40example.com`, `tel:%2B14155550123`,
`redirect_uri=https%3A%2F%2Fapp%2Fcb%3Fcode%3Dsk_live_…`), where no rule or recognizer reads them.
The finder and the filter read such a text as it reads, then map what they find back onto it."""

from __future__ import annotations

import re

__all__ = ["unescaped"]

#: a percent-escape of a printable ASCII character
_ESCAPE = re.compile(r"%([2-7][0-9A-Fa-f])")


def unescaped(text: str) -> tuple[str, list[int]] | None:
    """`text` with its percent-escapes of printable ASCII read, and where each of its characters starts
    in `text` (and its length, last); None when it has none. Other escapes (a UTF-8 sequence's) are left
    as written: one escape, one character, so every span of the one maps onto the other."""
    if "%" not in text:
        return None
    parts: list[str] = []
    starts: list[int] = []
    position = 0
    for match in _ESCAPE.finditer(text):
        parts += (text[position : match.start()], chr(int(match.group(1), 16)))
        starts += (*range(position, match.start()), match.start())
        position = match.end()
    if not parts:
        return None
    parts.append(text[position:])
    starts += (*range(position, len(text)), len(text))
    return "".join(parts), starts
