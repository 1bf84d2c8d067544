"""Which of many values a long text may hold: what a trajectory's redaction found (secrets, personal
data), looked for again in every text of the trajectory (`filter._replace_found`, `Pseudonyms.spread`).

Looked for one at a time, each value costs a search through the whole text: the time grows with the
text's length times the number of values, and a tool's log of 50,000 rows holds thousands of ids or
tokens, each found and then looked for again. A long text is scanned once for all of them instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar

import hyperscan

from training_pipeline.privacy.prefilter import PatternDatabase

__all__ = ["Literals"]

T = TypeVar("T")

#: a text shorter than this is searched for each value in turn: a literal database costs more to
#: compile than a search of such a text per value
LONG_TEXT = 1 << 16
#: ... as are fewer values than this, in a text of any length
MANY_VALUES = 16


class Literals(Generic[T]):
    """`pairs` of a value and what it is replaced by, in the order the caller replaces them (longest
    first); for a long text, those it holds, from one Hyperscan scan of a literal database compiled
    the first time one is asked. The database is compiled in memory and never written to a file: the
    values are secrets and personal data."""

    def __init__(self, pairs: Sequence[tuple[str, T]]) -> None:
        self.pairs = pairs
        # a database holds one expression at least; the binding reads a literal up to its first NUL,
        # so one holding a NUL would be another (or none)
        self._scannable = bool(pairs) and all(value and "\0" not in value for value, _ in pairs)
        self._database: PatternDatabase | None = None

    def __bool__(self) -> bool:
        return bool(self.pairs)

    def held_by(self, text: str) -> Sequence[tuple[str, T]]:
        """The pairs whose value `text` may hold, in order: all of them where looking for each is as
        cheap as a scan (the caller looks), else those whose value the text holds."""
        if len(text) < LONG_TEXT or len(self.pairs) < MANY_VALUES or not self._scannable:
            return self.pairs
        if self._database is None:
            values = [value.encode("utf-8", "surrogatepass") for value, _ in self.pairs]
            flags = [hyperscan.HS_FLAG_SINGLEMATCH] * len(values)
            self._database = PatternDatabase(values, flags, literal=True, cached=False)
        # UTF-8 is self-synchronising: a value's bytes are found in the text's only where the value is
        held = self._database.matching(text.encode("utf-8", "surrogatepass"))
        return [self.pairs[index] for index in sorted(held)]
