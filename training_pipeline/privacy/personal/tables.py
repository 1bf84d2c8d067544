"""The cells of the tables a text holds, under the columns their headers name: a CSV file an agent read,
a tool's tab-separated output, a Markdown table. Alone, a cell (`Maria Garcia`, `4155550123`) is no
one's; under a `name` or a `phone` column it is read as its header says, as an object's value is read
after its key (`key_cue`: `"phone": "4155550123"`)."""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["cued_cells"]

#: a header's cell is a column's name: short, a few words at most (a line of prose is no header)
_HEADER_CELL_CHARS = 40
_HEADER_CELL_WORDS = 4
#: Markdown's rule under a table's header (`|---|:--:|`)
_RULE = re.compile(r"[ \t]*\|?(?:[ \t]*:?-{3,}:?[ \t]*\|)+(?:[ \t]*:?-{3,}:?[ \t]*)?[ \t]*")

_NEWLINE = re.compile(r"\r?\n")
_MAIL = re.compile(r"(?i)e-?mail")

Cell = tuple[int, int]


def cued_cells(text: str, cue_of: Callable[[str], str | None]) -> list[tuple[int, int, str]]:
    """(start, end, cue) of every cell of `text`'s tables under a column whose header `cue_of` reads as
    a cue. A table is a header line of two cells or more, one of them a cue, and the lines right after
    it with as many cells, split by the header's delimiter (`|`, a tab, `,` or `;`; a CSV cell may be
    quoted, `"Garcia, Maria"`)."""
    lines = _lines(text)
    found: list[tuple[int, int, str]] = []
    index = 0
    while index < len(lines) - 1:
        header = _header(text, lines[index], cue_of)
        index += 1
        if header is None:
            continue
        delimiter, cues = header
        if delimiter == "|" and _RULE.fullmatch(text, *lines[index]):
            index += 1
        while index < len(lines):
            cells = _cells(text, lines[index], delimiter)
            if cells is None or len(cells) != len(cues):
                break
            found += [
                (start, end, cue)
                for (start, end), cue in zip(cells, cues, strict=True)
                if cue and start < end
            ]
            index += 1
    return found


def _lines(text: str) -> list[Cell]:
    lines = []
    start = 0
    for newline in _NEWLINE.finditer(text):
        lines.append((start, newline.start()))
        start = newline.end()
    lines.append((start, len(text)))
    return lines


def _header(
    text: str, line: Cell, cue_of: Callable[[str], str | None]
) -> tuple[str, list[str | None]] | None:
    """The line's delimiter and each column's cue, when the line is a table's header naming one."""
    start, end = line
    written = text[start:end]
    # Markdown's pipes, else the first of a tab, a comma or a semicolon the line holds
    delimiter = "|" if written.lstrip().startswith("|") else next((d for d in "\t,;" if d in written), "")
    if not delimiter:
        return None
    cells = _cells(text, line, delimiter)
    if cells is None or len(cells) < 2:
        return None
    names = [text[s:e] for s, e in cells]
    if any(
        not name or len(name) > _HEADER_CELL_CHARS or len(name.split()) > _HEADER_CELL_WORDS for name in names
    ):
        return None
    cues = [cue_of(name) for name in names]
    # a column called `name` alone names things as often as people (a table of tools, of error codes):
    # a person's beside another column of a person's, or an address's
    if all(cue in (None, "name") for cue in cues) and not any(_MAIL.search(name) for name in names):
        return None
    return delimiter, cues


def _cells(text: str, line: Cell, delimiter: str) -> list[Cell] | None:
    """Where each cell of a line is, without the spaces around it or a CSV cell's quotes; None when a
    quote is left open or anything but the delimiter follows it."""
    position, end = line
    if delimiter == "|":  # Markdown's outer pipes are no cells' edges
        while position < end and text[position] in " \t":
            position += 1
        position += text.startswith("|", position)
        while end > position and text[end - 1] in " \t":
            end -= 1
        end -= end > position and text[end - 1] == "|"
    cells: list[Cell] = []
    while True:
        while position < end and text[position] in " \t":
            position += 1
        if delimiter != "|" and text.startswith('"', position):
            close = position + 1
            while True:
                close = text.find('"', close, end)
                if close == -1:
                    return None
                if not text.startswith('""', close):
                    break
                close += 2
            cells.append((position + 1, close))
            position = close + 1
            while position < end and text[position] in " \t":
                position += 1
            if position == end:
                return cells
            if text[position] != delimiter:  # `"key": "value",` is JSON's, not a CSV cell
                return None
        else:
            stop = text.find(delimiter, position, end)
            last = end if stop == -1 else stop
            cell_end = last
            while cell_end > position and text[cell_end - 1] in " \t":
                cell_end -= 1
            cells.append((position, cell_end))
            position = stop
        if position == -1:
            return cells
        position += 1
