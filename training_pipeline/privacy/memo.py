"""What a redaction or a search found in a text, remembered: a day's texts repeat.

A trajectory repeats its strings in every LLM call (model names, step kinds, the agent's name, its
system prompt, often kilobytes), the next trajectory repeats most of them, and the datasets' checks read
again what the filter wrote. What is remembered depends on the text alone, so it is replayed; the memo
is bounded in entries and in characters (it keeps the texts alive), and cleared when full.
"""

from __future__ import annotations

from typing import Generic, TypeVar

__all__ = ["MEMO_MAX_CHARS", "TextMemo"]

Value = TypeVar("Value")

#: texts up to this long are remembered, at most `_MAX_ENTRIES` at a time and `_BUDGET_CHARS` in all
MEMO_MAX_CHARS = 64 * 1024
_MAX_ENTRIES = 8192
_BUDGET_CHARS = 4 * 1024 * 1024


class TextMemo(dict[str, Value], Generic[Value]):
    """text -> what was found in it, for texts up to `MEMO_MAX_CHARS` (the caller does not ask of longer
    ones: a text seen once that long costs more to keep than to read again). A dict, so looking a text
    up (`get`, `in`) is the dict's own: it is asked of every string of every trajectory."""

    __slots__ = ("_chars",)

    def __init__(self) -> None:
        super().__init__()
        self._chars = 0

    def remember(self, text: str, value: Value) -> None:
        if len(self) >= _MAX_ENTRIES or self._chars + len(text) > _BUDGET_CHARS:
            self.clear()
            self._chars = 0
        self[text] = value
        self._chars += len(text)
