"""One pass over a text that says which credential rules could match it, so only those run their regex.

Python's `re` runs one pattern at a time, and a pattern that starts with a class, a word boundary or a
lookbehind is tried at every position: the strict profile's 36 rules over every string of a trajectory
cost more than the rest of a build together. Hyperscan compiles all of a profile's rules into one
automaton and scans a text once. It only gates: each rule is compiled in prefilter mode (lookarounds
approximated) with its bounded repeats widened, so it matches a superset of what the Python pattern
matches, and the Python pattern alone decides what is redacted. Text that is not UTF-8 (lone surrogates)
cannot be scanned and gets every rule.

`LineGate` does the same for patterns that are matched line by line (detect-secrets' plugins) with a
single scan of the whole text, and for the personal data recognizers' `regex` patterns over a window.
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import hashlib
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import hyperscan

from training_pipeline.environment import cache_dir
from training_pipeline.privacy.credential_rule import CHARACTER_CLASS

# A class, a `\uXXXX` escape, a letter property (`\p{Lu}`, `\P{L}`), any other escape, a bounded
# repeat, a group's opening with its flags or a lookaround's, or one character of the pattern.
_TOKEN = re.compile(
    rf"({CHARACTER_CLASS})|(\\u[0-9a-fA-F]{{4}})|(\\[pP]\{{\w+\}})|\\.|\{{(\d+),\d+\}}"
    r"|\(\?(?:[a-zA-Z-]*[:)]|<?[=!])|.",
    re.DOTALL,
)
_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})|\\.", re.DOTALL)
_BASE_FLAGS = hyperscan.HS_FLAG_UTF8 | hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_SINGLEMATCH


def _pcre_escapes(text: str) -> str:
    """Python's `\\uXXXX` as PCRE's `\\x{XXXX}`; every other escape unchanged."""
    return _ESCAPE.sub(lambda m: f"\\x{{{m.group(1)}}}" if m.group(1) else m.group(), text)


def gate_expression(pattern: str) -> bytes:
    """`pattern` (Python `re` syntax, as the rules write it) in Hyperscan's syntax, with every `{m,n}`
    outside a class widened to `{m,}`: a superset, and far cheaper to compile than a wide bounded repeat."""
    out: list[str] = []
    for token in _TOKEN.finditer(pattern):
        char_class, escape, _, low = token.groups()
        text = token.group()
        if char_class is not None or escape is not None:
            out.append(_pcre_escapes(text))
        elif low is not None:
            out.append(f"{{{low},}}")
        else:
            out.append(text)
    return "".join(out).encode("utf-8")


#: a stand-in for every character outside ASCII in what `LineGate` scans (a byte no ASCII text holds)
_OTHER = "\x80"


def _stand_in(error: UnicodeError) -> tuple[bytes, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    return b"\x80" * (error.end - error.start), error.end


#: the codec error handler that writes the stand-in (an encoder's handler runs once per run of
#: characters outside ASCII, and a text has few: three times faster than a substitution over the text)
_STAND_IN = "training_pipeline.stand_in"
codecs.register_error(_STAND_IN, _stand_in)
#: where Python's `str.splitlines` ends a line besides `\n` (Hyperscan's multi-line anchors know `\n` only)
_LINE_BREAKS = rf"[\r\x0b\x0c\x1c-\x1e{_OTHER}]"
#: what each escape matches in a line gate: Python's `\d`, `\w` and `\s` also match characters outside
#: ASCII, and its `\s` the separators \x1c-\x1f; `\b` and `\B` are dropped (an assertion left out only
#: widens the match), as a boundary beside a character outside ASCII cannot be told from its stand-in
_LINE_ESCAPES = {
    r"\d": rf"[\d{_OTHER}]",
    r"\w": rf"[\w{_OTHER}]",
    r"\s": rf"[\s\x1c-\x1f{_OTHER}]",
    r"\b": "",
    r"\B": "",
    r"\A": rf"(?:^|{_LINE_BREAKS})",
    r"\Z": rf"(?:$|{_LINE_BREAKS})",
    "^": rf"(?:^|{_LINE_BREAKS})",
    "$": rf"(?:$|{_LINE_BREAKS})",
}
#: letters that Python's case-insensitive matching also finds outside ASCII (İ, ı, ſ and the Kelvin sign)
_FOLDS_OUTSIDE_ASCII = frozenset("iIsSkK")


def line_gate_expression(pattern: str, caseless: bool) -> bytes:
    """`pattern`, matched by Python one line at a time, as a Hyperscan expression over the whole text
    with every character outside ASCII replaced by one stand-in byte (`_OTHER`), matching a superset:
    wherever the pattern can match a character outside ASCII, the expression accepts the stand-in.

    Also the `regex` module's syntax the personal data recognizers write: a letter property
    (`\\p{Lu}`), characters outside ASCII (each the stand-in, or what it folds to), a backreference
    (any text) and a case-insensitive group (`(?i:…)`, read as `caseless`)."""
    if re.search(r"\{,\d", pattern):
        raise ValueError(f"a line gate cannot take {pattern!r}")
    caseless = caseless or "(?i" in pattern
    pattern = re.sub(r"\(\?P<\w+>", "(", pattern)  # a group's name is not matched
    pattern = re.sub(r"\(\?P=\w+\)", r"(?:[\\s\\S]*)", pattern)  # nor what a backreference repeats
    out: list[str] = []
    opened: list[int] = []  # where each open group's opening is in `out`
    tokens = list(_TOKEN.finditer(pattern))
    for number, token in enumerate(tokens):
        char_class, escape, prop, low = token.groups()
        text = token.group()
        if escape is not None:
            raise ValueError(f"a line gate cannot take {pattern!r}")
        if text.startswith("(") and not text.endswith(")"):  # not a flag for the rest (`(?i)`)
            opened.append(len(out))
            # what a lookbehind opening the pattern asserts is text the match follows: matched, it is
            # still a superset (Hyperscan would drop the assertion, and a name's pattern alone matches
            # any two capitalised words)
            out.append("(?:" if text == "(?<=" and not out else text)
        elif text == ")" and opened:
            start = opened.pop()
            if out[start] == "(?=" and number == len(tokens) - 1:  # ... as is a lookahead closing it
                out[start] = "(?:"
            out.append(text)
        elif char_class is not None:
            out.append(_line_class(char_class, caseless))
        elif prop is not None:
            letters = _LETTER_PROPERTIES.get(prop[3:-1])
            if letters is None:
                raise ValueError(f"a line gate cannot take {prop!r}")
            out.append(f"[{letters}{_OTHER}]" if prop[1] == "p" else f"[^{letters}]")
        elif low is not None:
            out.append(f"{{{low},}}")
        elif text in _LINE_ESCAPES:
            out.append(_LINE_ESCAPES[text])
        elif caseless and text in _FOLDS_OUTSIDE_ASCII:
            out.append(f"[{text}{_OTHER}]")
        elif not text.isascii():
            folded = text.casefold()  # `ß` is also `ss` to a case-insensitive `regex`
            out.append(f"(?:{_OTHER}|{re.escape(folded)})" if folded.isascii() else _OTHER)
        else:
            out.append(text)
    return "".join(out).encode("latin-1")


#: the letter properties a line gate reads, as their ASCII letters (outside ASCII, the stand-in)
_LETTER_PROPERTIES = {"L": "A-Za-z", "Lu": "A-Z", "Ll": "a-z"}
#: one item of a character class: a letter property, an escape, or a character
_CLASS_ITEM = re.compile(r"(\\[pP]\{\w+\})|(\\.)|(.)", re.DOTALL)


def _line_class(char_class: str, caseless: bool) -> str:
    negated = char_class.startswith("[^")
    body, outside = _ascii_class_body(char_class[2 if negated else 1 : -1], negated)
    if negated:  # it takes the stand-in already, unless it names a class that holds such characters
        return r"[\s\S]" if re.search(r"\\[WSD]", body) or not body else f"[^{body}]"
    char_class = f"[{body}]" if body else ""
    if outside or re.search(r"\\[dws]", body) or (caseless and re.search(r"[A-Za-z]", body)):
        extra = f"[\\x1c-\\x1f{_OTHER}]" if "\\s" in body else _OTHER
        return f"(?:{char_class}|{extra})" if char_class else extra
    return char_class


def _ascii_class_body(body: str, negated: bool) -> tuple[str, bool]:
    """A class's body with what it holds outside ASCII left out (a letter property as its ASCII
    letters), and whether anything was: the stand-in is then the class's too, unless it is negated."""
    if body.isascii() and "\\p{" not in body and "\\P{" not in body:
        return body, False
    items = [m.group() for m in _CLASS_ITEM.finditer(body)]
    kept: list[str] = []
    outside = False
    index = 0
    while index < len(items):
        item = items[index]
        if index + 2 < len(items) and items[index + 1] == "-" and not item.startswith(("\\p{", "\\P{")):
            low, high = item, items[index + 2]
            index += 3
            if high.isascii():
                kept.append(f"{low}-{high}")
            else:
                outside = True
                if low.isascii():
                    kept.append(f"{low}-\\x7f")
            continue
        index += 1
        if item.startswith(("\\p{", "\\P{")):
            letters = _LETTER_PROPERTIES.get(item[3:-1])
            if letters is None or item[1] == "P":
                raise ValueError(f"a line gate cannot take {item!r} in a class")
            kept.append(letters)
            outside = True
        elif item.isascii():
            kept.append(item)
        else:
            outside = True
    if negated:
        outside = False
    return "".join(kept), outside


class LineGate:
    """Which of `patterns` may match some line of a text, from one scan of the whole text; never leaves
    out one that does (the patterns are matched per line with Python's `re`, as detect-secrets matches
    them, or over the whole text with the `regex` module, `^` and `$` at each line). The text is
    scanned as bytes, each character outside ASCII as one stand-in byte, so nothing depends on
    Hyperscan's reading of Unicode classes or case folding."""

    def __init__(self, patterns: Sequence[re.Pattern[str]]) -> None:
        expressions = [line_gate_expression(p.pattern, bool(p.flags & re.IGNORECASE)) for p in patterns]
        base = hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_SINGLEMATCH | hyperscan.HS_FLAG_MULTILINE
        flags = [base | (hyperscan.HS_FLAG_CASELESS if p.flags & re.IGNORECASE else 0) for p in patterns]
        self._scanner = PatternDatabase(expressions, flags)

    def candidates(self, text: str) -> set[int]:
        return self._scanner.matching(stand_in_bytes(text))


#: UTF-8's lead bytes as the stand-in, its continuation bytes dropped (`stand_in_bytes`)
_LEAD_TO_OTHER = bytes(byte if byte < 0xC0 else ord(_OTHER) for byte in range(256))
_CONTINUATION = bytes(range(0x80, 0xC0))


def stand_in_bytes(text: str) -> bytes:
    """`text` as ASCII, each character outside it one stand-in byte (`_OTHER`).

    Outside ASCII, from the text's UTF-8 with each lead byte turned into the stand-in and the
    continuation bytes dropped: one byte per character, as the codec error handler writes, cheaper
    where CPython keeps the text's UTF-8 already (orjson had it made, serialising the example this
    inspects). A lone surrogate has no UTF-8: such text goes through the handler."""
    if text.isascii():
        return text.encode("ascii")
    try:
        return text.encode("utf-8").translate(_LEAD_TO_OTHER, _CONTINUATION)
    except UnicodeEncodeError:
        return text.encode("ascii", _STAND_IN)


class RuleGate:
    """Which of `patterns` may match a text; never leaves out one that does.

    Compiling a few hundred rules takes Hyperscan about two seconds, so the compiled database is kept
    in the user's cache folder (`$XDG_CACHE_HOME/training_pipeline`), named by a hash of what was
    compiled and the Hyperscan version: every later process, a worker or a Dagster step, loads it in
    milliseconds. A cache that cannot be read or written is only slower. `patterns` are asked for when
    the gate is made, once."""

    def __init__(self, patterns: Callable[[], Sequence[re.Pattern[str]]], count: int) -> None:
        self._patterns = functools.cache(patterns)
        self._everything = frozenset(range(count))
        self._scanner = self._scanner_for()

    def candidates(self, text: str) -> frozenset[int] | set[int]:
        """Indices of the patterns that may match `text` (all of them if it is not valid UTF-8)."""
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            return self._everything
        return self._scanner.matching(data)

    def candidates_in(self, data: bytes) -> set[int]:
        """`candidates` of a text given as its UTF-8."""
        return self._scanner.matching(data)

    def _scanner_for(self) -> PatternDatabase:
        patterns = self._patterns()
        if len(patterns) != len(self._everything):
            raise ValueError(f"{len(patterns)} patterns for a gate of {len(self._everything)}")
        expressions = [gate_expression(p.pattern) for p in patterns]
        return PatternDatabase(expressions, [_gate_flags(p.flags) for p in patterns])


def _gate_flags(flags: int) -> int:
    """Hyperscan's flags for a pattern compiled with `re`'s `flags`: its case, its `.` across lines and
    its `^` and `$` at each line are the pattern's own (a rule for a config file's lines is
    multi-line), so what `re` matches Hyperscan does too."""
    return (
        _BASE_FLAGS
        | (hyperscan.HS_FLAG_MULTILINE if flags & re.MULTILINE else 0)
        | (hyperscan.HS_FLAG_DOTALL if flags & re.DOTALL else 0)
        | (hyperscan.HS_FLAG_CASELESS if flags & re.IGNORECASE else 0)
    )


class PatternDatabase:
    """A compiled database (`_cached_database`) and a scratch space per thread (one scan at a time each).
    Also what the export's case-insensitive word tests use (`datasets.training_tasks`), and the privacy
    filter's test for the environment's secret values (`literal`, not `cached`)."""

    def __init__(
        self, expressions: list[bytes], flags: list[int], literal: bool = False, cached: bool = True
    ) -> None:
        """`literal`: the expressions are bytes to find as they are (Hyperscan's literal compiler).
        `cached`: False for expressions that must never reach a file (secret values): compiled in
        memory, as a few literals compile in a millisecond."""
        self._database = (
            _cached_database(_database_key(expressions, flags, literal), expressions, flags, literal)
            if cached
            else _compiled(expressions, flags, literal)
        )
        self._local = threading.local()

    def matching(self, data: bytes) -> set[int]:
        """The ids of the expressions that match somewhere in `data`."""
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = hyperscan.Scratch(self._database)
        found: set[int] = set()
        self._database.scan(data, match_event_handler=_collect, context=found, scratch=scratch)
        return found

    def matches(self, data: bytes) -> list[tuple[int, int, int]]:
        """(expression id, start, end) in bytes of every match in `data`, in order of end (the start is
        the leftmost where the expressions were compiled with `HS_FLAG_SOM_LEFTMOST`, else 0)."""
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = hyperscan.Scratch(self._database)
        found: list[tuple[int, int, int]] = []
        self._database.scan(data, match_event_handler=_collect_match, context=found, scratch=scratch)
        return found


def _database_key(expressions: list[bytes], flags: list[int], literal: bool = False) -> str:
    compiled = (hyperscan.__version__, expressions, flags, *(("literal",) if literal else ()))
    return hashlib.sha256(repr(compiled).encode()).hexdigest()[:32]


def _cached_database(
    key: str, expressions: list[bytes], flags: list[int], literal: bool = False
) -> hyperscan.Database:
    with contextlib.suppress(OSError, hyperscan.error):
        return _load_database(key)
    database = _compiled(expressions, flags, literal)
    with contextlib.suppress(OSError):
        from training_pipeline.atomic import atomic_open

        with atomic_open(_database_path(key), "wb") as handle:
            handle.write(hyperscan.dumpb(database))
    return database


def _database_path(key: str) -> Path:
    return cache_dir() / f"gate-{key}.hsdb"


def _load_database(key: str) -> hyperscan.Database:
    return hyperscan.loadb(_database_path(key).read_bytes(), mode=hyperscan.HS_MODE_BLOCK)


def _compiled(expressions: list[bytes], flags: list[int], literal: bool = False) -> hyperscan.Database:
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(expressions=expressions, ids=list(range(len(expressions))), flags=flags, literal=literal)
    return database


def _collect(index: int, start: int, end: int, flags: int, found: set[int]) -> None:
    found.add(index)


def _collect_match(index: int, start: int, end: int, flags: int, found: list[tuple[int, int, int]]) -> None:
    found.append((index, start, end))
