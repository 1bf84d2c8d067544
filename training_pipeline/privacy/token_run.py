"""The run of token characters every match of a rule's pattern holds, looked for before the pattern runs.

A rule set's gate names a rule for text holding what starts its matches: Kingfisher's rules are gated
on a service's name (LINE's `\\bline(?:.|[\\n\\r]){0,32}?(?:SECRET|…)…\\b([a-zA-Z0-9+/]{171,172})` on
`line`), since their exact repeats compiled into Hyperscan take too long. Where the name is a
common word (`line`, `client`, `column`, `https`), the pattern then runs on most of a log or a prompt,
trying its gaps at every occurrence of the word, for a token the text does not hold: a run of 171
base64 characters. Finding the longest such run the pattern requires takes a translation of the text and
one `bytes.find`; a text without it cannot match.

A run counts only where every match must hold it: a character class (or `\\w`, `\\d`, `\\s` and their
opposites) repeated at least `MIN_RUN` times, in no group that is optional, repeated from zero, a
lookaround, or a branch of an alternation. Any pattern this reading does not follow has no run, and its
rule runs as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from training_pipeline.privacy.credential_rule import CHARACTER_CLASS
from training_pipeline.privacy.prefilter import stand_in_bytes

__all__ = ["MIN_RUN", "TokenRun", "required_run"]

#: a shorter run is in most texts a rule is named for: looking for it would save nothing
MIN_RUN = 12
#: a quantifier after an item: `{n}`, `{n,}`, `{n,m}`, `{,m}`, `*`, `+` or `?`, lazy or not
_QUANTIFIER = re.compile(r"\{(\d*)(?:,\d*)?\}\??|([*+?])\??")
#: class escapes outside brackets that stand for a class of characters
_CLASS_ESCAPES = frozenset("wWdDsS")
_CLASS = re.compile(CHARACTER_CLASS, re.DOTALL)
#: opening a group whose content every match holds when the group is not optional: plain, `(?:`, named
_PLAIN_GROUP = re.compile(r"\((?:\?:|\?P<[A-Za-z_]\w*>|(?!\?))")


@dataclass
class _Group:
    #: a `|` at this group's own level: none of its items is in every match
    alternation: bool = False
    #: optional, repeated from zero, a lookaround or a group this reading does not follow
    optional: bool = False


def required_run(pattern: str) -> tuple[str, int] | None:
    """The character class (as pattern text: `[a-zA-Z0-9+/]`, `\\w`) and how many of it in a row every
    match of `pattern` holds, the longest such requirement; None when the pattern has none of
    `MIN_RUN` or more that this reading can prove."""
    root = _Group()
    stack = [root]
    runs: list[tuple[str, int, tuple[_Group, ...]]] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "(":
            group = _Group()
            plain = _PLAIN_GROUP.match(pattern, index)
            if plain is None:  # a lookaround, a scoped flag, a conditional, a comment: not followed
                group.optional = True
                index += 2
            else:
                index = plain.end()
            stack.append(group)
            continue
        if char == ")":
            if len(stack) == 1:
                return None  # unbalanced: not a pattern this reading follows
            group = stack.pop()
            quantifier = _QUANTIFIER.match(pattern, index + 1)
            if quantifier is not None:
                group.optional = group.optional or _least(quantifier) == 0
                index = quantifier.end()
            else:
                index += 1
            continue
        if char == "|":
            stack[-1].alternation = True
            index += 1
            continue
        if char == "[":
            bracketed = _CLASS.match(pattern, index)
            if bracketed is None:
                return None
            end = bracketed.end()
        elif char == "\\":
            end = index + 2
        else:
            end = index + 1
        item = pattern[index:end]
        quantifier = _QUANTIFIER.match(pattern, end)
        least = 1 if quantifier is None else _least(quantifier)
        if item[0] == "[" or (item[0] == "\\" and item[1:] in _CLASS_ESCAPES):
            runs.append((item, least, tuple(stack)))
        index = end if quantifier is None else quantifier.end()
    if len(stack) != 1:
        return None
    required = [
        (item, least)
        for item, least, groups in runs
        if least >= MIN_RUN and not any(group.alternation or group.optional for group in groups)
    ]
    return max(required, key=lambda run: run[1]) if required else None


def _least(quantifier: re.Match[str]) -> int:
    if quantifier.group(1) is not None:  # `{,n}` and `{}` read as from zero
        return int(quantifier.group(1) or 0)
    return 1 if quantifier.group(2) == "+" else 0


class TokenRun:
    """Whether a text holds the run every match of a pattern holds (`required_run`), read from the
    pattern when first asked (a rule set of hundreds runs few of its rules in a process)."""

    __slots__ = ("_flags", "_pattern", "_run")

    def __init__(self, pattern: str, flags: int) -> None:
        self._pattern = pattern
        self._flags = flags
        self._run: tuple[bytes, bytes] | bool | None = False  # False: not read yet

    def held_by(self, text: str) -> bool:
        """False only when `text` cannot hold a match of the pattern for want of its run."""
        run = self._run
        if run is False:
            run = self._run = _marks(self._pattern, self._flags)
        if run is None:
            return True
        table, needle = run  # type: ignore[misc]
        return len(text) >= len(needle) and stand_in_bytes(text).translate(table).find(needle) != -1


def _marks(pattern: str, flags: int) -> tuple[bytes, bytes] | None:
    run = None if flags & re.VERBOSE else required_run(pattern)  # verbose layout is not read
    if run is None:
        return None
    item, least = run
    return _table(item, flags), b"a" * least


@cache
def _table(item: str, flags: int) -> bytes:
    """Each byte of a text's stand-in (`stand_in_bytes`) as `a` where the class may hold that character,
    a space elsewhere. Every character outside ASCII is one stand-in byte: it is `a` unless the class is
    sure to hold none of them (an ASCII pattern's class of ASCII characters, not negated)."""
    one = re.compile(item, flags)
    marks = bytearray(ord("a") if one.fullmatch(chr(byte)) else ord(" ") for byte in range(128))
    ascii_only = bool(flags & re.ASCII) and (
        (item[0] == "\\" and item[1] in _CLASS_ESCAPES and item[1].islower())
        or (item[:2] != "[^" and item.isascii() and not re.search(r"\\[xuUN0-7pPWDS]", item))
    )
    marks += (b" " if ascii_only else b"a") * 128
    return bytes(marks)
