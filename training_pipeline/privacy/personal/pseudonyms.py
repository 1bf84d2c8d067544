"""Typed placeholders, one number per distinct value within a trajectory.

A multi-turn conversation stays coherent when the same customer's email is `<PII:EMAIL_ADDRESS:1>` in
every message and another's is `<PII:EMAIL_ADDRESS:2>`: a model still learns that the agent repeated
the address it was given. The numbers are handed out in the order values are met and say nothing of the
value; the values are held in memory for one trajectory and never written anywhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from training_pipeline.privacy.literals import Literals
from training_pipeline.privacy.personal.kinds import placeholder

__all__ = ["Pseudonyms"]

#: a value found once is redacted wherever else the trajectory holds it, when it is at least this long
#: (a two-letter name part could be a word of any text)
_SPREAD_LENGTH = 4


def _key(kind: str, value: str) -> str:
    """What makes two writings of a value one value: digits alone for numbers (`+1 415-555-0132` is
    `14155550132`), letters and digits without case for the rest."""
    digits = "".join(c for c in value if c.isdigit())
    if kind in (
        "EMAIL_ADDRESS",
        "PERSON",
        "STREET_ADDRESS",
        "DATE_OF_BIRTH",
        "CRYPTO",
        "IP_ADDRESS",
        "USERNAME",
    ):
        return " ".join(value.casefold().split())
    return digits or value.casefold()


class Pseudonyms:
    """The placeholders of one trajectory (or of one stored text)."""

    def __init__(self) -> None:
        self._numbers: dict[tuple[str, str], int] = {}
        self._per_kind: dict[str, int] = {}
        #: value as written -> its placeholder, for `spread`
        self._found: dict[str, str] = {}
        self._literals: Literals[tuple[str, re.Pattern[str]]] | None = None

    def placeholder(self, kind: str, value: str) -> str:
        key = (kind, _key(kind, value))
        number = self._numbers.get(key)
        if number is None:
            number = self._numbers[key] = self._per_kind.get(kind, 0) + 1
            self._per_kind[kind] = number
        made = placeholder(kind, number)
        if len(value) >= _SPREAD_LENGTH:
            self._found.setdefault(value, made)
        return made

    def replace(self, text: str, spans: Iterable[tuple[int, int, str]], counts: dict[str, int]) -> str:
        """`text` with each span (start, end, kind; in order, none overlapping) replaced, each counted
        under `PII:<kind>`."""
        parts: list[str] = []
        last = 0
        for start, end, kind in spans:
            parts.append(text[last:start])
            parts.append(self.placeholder(kind, text[start:end]))
            label = f"PII:{kind}"
            counts[label] = counts.get(label, 0) + 1
            last = end
        parts.append(text[last:])
        return "".join(parts)

    @property
    def found_any(self) -> bool:
        return bool(self._found)

    def _spreading(self) -> Literals[tuple[str, re.Pattern[str]]]:
        """The values found so far, each with its placeholder and the search for it as a whole word,
        longest first (a name holding another is replaced whole): made again only when a value has
        been found since, not for each text."""
        if self._literals is None or len(self._literals.pairs) != len(self._found):
            self._literals = Literals(
                [
                    (value, (made, _whole_word(value)))
                    for value, made in sorted(self._found.items(), key=lambda item: -len(item[0]))
                ]
            )
        return self._literals

    def spread(self, text: str, counts: dict[str, int]) -> str:
        """`text` with every value found so far (in any text of the trajectory) replaced wherever it
        stands as a whole word: a name said once with a cue ("I'm Jane Doe") is the same person when
        the agent writes "Thanks, Jane Doe" three calls later."""
        for value, (made, pattern) in self._spreading().held_by(text):
            if value not in text:
                continue
            text, hits = pattern.subn(made, text)
            if hits:
                label = f"PII:{made.split(':')[1]}"
                counts[label] = counts.get(label, 0) + hits
        return text


def _whole_word(value: str) -> re.Pattern[str]:
    """A search for `value` not inside a word, an address or a number (nothing of `\\w@.+-` before it,
    nothing of `\\w@` after). The value comes first and what precedes it is looked behind from its
    end: a pattern opening with a lookbehind is tried at every character of the text, one opening with
    a literal is found by the regex engine's fast search for it."""
    escaped = re.escape(value)
    return re.compile(rf"{escaped}(?<![\w@.+-]{escaped})(?![\w@])")
