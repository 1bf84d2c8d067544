"""JavaScript string semantics that the elizaOS export contract depends on.

elizaOS is JavaScript: `trim()` and `\\s` use ECMAScript's whitespace set (which includes U+FEFF but not
U+001C-U+001F or U+0085, unlike Python's `str.isspace`), lengths are UTF-16 code units, `/i` without the
`u` flag folds ASCII letters only, and `JSON.stringify` escapes lone surrogates. Everything that must
agree byte-for-byte with the reference goes through these helpers.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

#: ECMAScript WhiteSpace + LineTerminator (ECMA-262 §12.2, §12.3), as `trim()` and `\s` see them.
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
#: The same set as a regex character class body, for patterns that port JavaScript's `\s`.
JS_WS_CLASS = r"\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
#: What `^` matches after under the `m` flag.
JS_LINE_TERMINATORS = "\n\r\u2028\u2029"

_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def js_trim(value: str) -> str:
    return value.strip(JS_WHITESPACE)


def utf16_len(value: str) -> int:
    """Length as JavaScript's `String.length` counts it (astral characters count twice)."""
    if value.isascii():
        return len(value)
    return len(value) + sum(1 for ch in value if ord(ch) > 0xFFFF)


def utf16_prefix(value: str, limit: int) -> str:
    """`value.slice(0, limit)` in UTF-16 units; a cut through a surrogate pair keeps the high half."""
    if len(value) <= limit // 2 or utf16_len(value) <= limit:
        return value
    units = 0
    for index, ch in enumerate(value):
        width = 2 if ord(ch) > 0xFFFF else 1
        if units + width > limit:
            if units < limit:  # half of a pair fits: JavaScript keeps the lone high surrogate
                high = 0xD800 + ((ord(ch) - 0x10000) >> 10)
                return value[:index] + chr(high)
            return value[:index]
        units += width
    return value


def loads(text: str | bytes) -> Any:
    """Parse JSON as `JSON.parse` would; orjson first, stdlib for the lone-surrogate escapes it rejects.
    Raises ValueError for anything `JSON.parse` rejects (`NaN`, `Infinity`), and for nesting deeper than
    the parsers go (orjson stops at 1,024 levels, the standard library near 1,000). An integer beyond
    64 bits comes back as the double `JSON.parse` makes of it (orjson's way; the stdlib's too, here)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        try:
            return json.loads(text, parse_constant=_not_json, parse_int=parsed_int)
        except RecursionError:
            raise ValueError("nested too deeply to parse (more than about 1,000 levels)") from None


def parsed_int(digits: str) -> int | float:
    """A JSON integer as `loads` gives it: exact within 64 bits, else the nearest double."""
    value = int(digits)
    return value if -(1 << 63) <= value < (1 << 64) else float(value)


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def dumps(value: Any) -> str:
    """Serialise exactly as `JSON.stringify(value)` does for plain JSON data (dicts, lists, str, numbers)."""
    return dumpb(value).decode("utf-8")


def dumpb(value: Any) -> bytes:
    """`dumps` as UTF-8 bytes, for writers of binary files (no decoding and re-encoding on the way)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        try:
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        except RecursionError:
            raise ValueError("nested too deeply to serialise") from None
        return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")
