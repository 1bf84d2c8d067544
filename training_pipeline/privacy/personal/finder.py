"""Where a text holds personal data: Presidio's analyzer, run only where something could be.

Presidio runs each of some sixty recognizers' expressions over the whole text it is given, and
tokenises it first: milliseconds a text, where a day holds hundreds of thousands of texts and nearly
all of their characters are nobody's. One Hyperscan scan (`_gate`) finds what every recognizer's
finding needs (a digit run, an `@`, a street word, a cue or a label); candidates that are plainly
nobody's (a date, a piece of an id, hash, URL or longer number, a reference, a count, code) are set
aside, and Presidio is given only the windows around the rest, with room before each for its context
words, at most `_WIDEST` characters each. A recognizer can only match where its family's expression
matched, so the windows find what the whole text would, save a context word more than a window away and
what was set aside. A process imports Presidio (seconds) only when a text first leaves a window.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import cache, cached_property, lru_cache
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import hyperscan

from training_pipeline.privacy import escapes
from training_pipeline.privacy.escapes import unescaped
from training_pipeline.privacy.memo import MEMO_MAX_CHARS, TextMemo
from training_pipeline.privacy.personal import cues
from training_pipeline.privacy.personal.kinds import DEFAULT_KINDS, NUMBERS
from training_pipeline.privacy.personal.tables import cued_cells
from training_pipeline.privacy.prefilter import PatternDatabase

if TYPE_CHECKING:
    from presidio_analyzer import AnalyzerEngine

    from training_pipeline.privacy.personal.engine import ContextNeed

__all__ = ["PersonalDataFinder", "Span", "finder_digest", "key_cue", "role_account_key"]

#: (start, end, kind) of one finding in a text
Span = tuple[int, int, str]
#: a finding before the overlaps between findings are settled: start, end, kind and Presidio's score
Finding = tuple[int, int, str, float]

#: what a family of recognizers' findings needs, the kinds it finds, and the room a window leaves after a
#: match (the value a cue introduces): (expression, kinds, room). A text
#: with none of these holds nothing of theirs, and each recognizer is run only on the windows around
#: its family's matches. (Hyperscan's syntax: PCRE's, `\p{Lu}` a capital in any script.)
_UPPER = r"\p{Lu}"
#: the words a key or a table's header is read as a cue by (`key_cue`; the gate finds them in any case)
_CUE_WORDS = (
    rf"{cues.FIELD}|{cues.NAME_FIELD}|{cues.BIRTH_CUE}|{cues.ACCOUNT_KEY}|"
    rf"(?i:{'|'.join(cues.LABELS.values())})"
)
#: what ends a run of digits: a character that is none, or the text's end. Hyperscan reports every end
#: of a match, and a run of n digits is n - 6 phone numbers' and n - 7 numbers' ends, each a Python call
#: (an id's `traj-1793496109124-002874` was 25): a match that must end a run is reported at its end
#: only, and at the separators inside it (`_windows` takes the character off)
_RUN_END = r"(?:[^0-9]|\z)"
_FAMILIES: tuple[tuple[str, tuple[str, ...], int], ...] = (
    # an address, and the display name before it (`Jane Doe <jane@…>`: `NameCueRecognizer`)
    (r"[\w.+-]@[\w-]", ("EMAIL_ADDRESS", "PERSON"), 64),
    # phone numbers: seven digits or more, in groups (`_looks_dialled` reads each before Presidio does);
    # this family and the next end with what ends a run of digits (`_RUN_END`)
    (rf"[+(]?\d(?:[ \t().\-/]{{0,2}}\d){{6,14}}{_RUN_END}", ("PHONE_NUMBER",), 2),
    # card, account and id numbers: eight digits or more (shorter ids hold letters too, and are the
    # next family's; a birth date is said to be one, and is the birth cue's family's)
    (
        rf"\d(?:[ \t./-]{{0,3}}\d){{7,}}{_RUN_END}",
        tuple(k for k in NUMBERS if k != "PHONE_NUMBER"),
        8,
    ),
    (r"\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b|\b[0-9a-fA-F]{1,4}:[0-9a-fA-F]{0,4}:", ("IP_ADDRESS",), 40),
    # ids of capitals and digits with fewer digits in a row (IN_PAN, IT_FISCAL_CODE, passports)
    (r"\b[A-Z][A-Z0-9]{4,}\d", tuple(k for k in NUMBERS if k != "PHONE_NUMBER"), 16),
    (r"\b(?:bc1|[13])[a-zA-HJ-NP-Z0-9]{25}|\b0x[0-9a-fA-F]{40}", ("CRYPTO",), 64),
    # a cue, then a capitalised word: names (`NameCueRecognizer`)
    (
        rf"(?:{cues.INTRO}|{cues.INTRO_TWO}|{cues.GREETING}|{cues.HONORIFIC}|{cues.ROLE}|{cues.RELATION}|{cues.SIGNATURE}|"
        rf"(?:{cues.FIELD}|{cues.NAME_FIELD})[\"']?[ \t]*:|{cues.ASSIGNED_PEOPLE}|{cues.GIT_IDENTITY})"
        r"[ \t]*[\"']?"
        rf"(?:{cues.LOWER_TITLE}\.?[ \t]+)?{_UPPER}|\[user\]|(?:['’]s[ \t]|s-){cues.DEVICE}|{cues.NAME_BOX}|"
        rf"\({_UPPER}[^()\n]{{1,80}}{cues.BLAME}|"
        # (a name in parts, as FHIR's JSON writes one: `"given": ["Peter"]`)
        rf"\"given\"[ \t]*:[ \t]*\[?[ \t]*\"{_UPPER}|"
        # (a directory's common name and a vCard's name: `CN=Jane Doe`, `FN:Jane Doe`, `N:Doe;Jane;;;`)
        rf"\b(?i:cn)[ \t]*=[ \t]*\"?{_UPPER}|(?:^|\n)(?:FN|N)(?:;[^:\n]{{0,80}})?:[ \t]*{_UPPER}",
        ("PERSON",),
        80,
    ),
    (
        rf"{cues.CLOSING}[ \t]*(?:[,!.]?[ \t]*\n[ \t]*[-–—]*[ \t]*(?:{cues.LOWER_TITLE}\.?[ \t]+)?|,[ \t]*)"
        rf"{_UPPER}|{cues.CAPITALS_FIELD}[\"']?[ \t]*:[ \t]*[\"']?{_UPPER}{{2}}|"
        rf"{cues.CAPITALS_HONORIFIC}[ \t]+{_UPPER}{{2}}",
        ("PERSON",),
        80,
    ),
    # a street word beside a capitalised word or a number: addresses (`StreetAddressRecognizer`)
    (cues.ADDRESS_GATE, ("STREET_ADDRESS",), 96),
    # a value given as a kind's: `my IBAN is`, `"address": "`, `Card:` (`LabelledValueRecognizer`)
    (
        rf"(?:^|[^A-Za-z0-9])(?i:{'|'.join(cues.LABELS.values())})(?:[^A-Za-z0-9]|$)",
        tuple(cues.LABELS),
        96,
    ),
    # written-out birth dates (numeric ones are in the numbers' family), and one typed into a birth
    # date's box (`"element": "Date of birth", …, "text": …`; as far as the line goes: a bounded repeat
    # after the cue's alternatives takes Hyperscan ten seconds to compile)
    (
        rf"{cues.BIRTH_CUE}[^\n]{{0,24}}?\d|{cues.BIRTH_CUE}[^\n]*?[\"'](?:text|value)[\"']",
        ("DATE_OF_BIRTH",),
        40,
    ),
    # an account's name: a home folder, an SSH key's comment, a login, an IAM user, a shell's prompt, a
    # file's owner, the environment's (`AccountNameRecognizer`)
    (
        r"/home/|/Users/|[A-Za-z]:[\\/](?i:users|documents and settings)[\\/]|"
        rf"{cues.SSH_KEY_COMMENT}|{cues.LOGIN_COMMAND}@|{cues.LOGIN_OPTION}|\barn:aws[\w-]*:iam::\d{{12}}:user/|{cues.LOGGED_IN}|"
        r"\blinkedin\.com/(?:in|pub)/|(?i:uid)=[A-Za-z_][\w.-]*,(?i:ou|dc|cn|o)=|/(?i:user):[A-Za-z_]|"
        r":(?:\d{1,5}|\*):[^:\s]+:[A-Za-z_][\w.-]*:\S|"
        rf"{cues.RUN_AS_OPTION}|{cues.SWITCH_USER}|{cues.ACCOUNT_COMMAND}|{cues.CHOWN}|{cues.AT_HOST}|~[a-z_][\w.-]*/|"
        r"@[\w.-]+(?::[~/]|[ \t]+[~\w.-]+[ \t]+%|[ \t]+[~\w./-]+\][$#]|[ \t]+(?:MINGW|MSYS|UCRT64|CLANG64))|"
        # (`whoami`'s line by its command alone: the prompts `ASKED_WHO` allows before it slow the scan)
        rf"{cues.WHO_COMMAND}[ \t]*\r?\n|"
        rf"{cues.PROCESS_OWNER}|{cues.SESSION_TTY}|{cues.ACCESS_LOG_TIME}|{cues.OPEN_FILE}|{cues.STAT_UID}|{cues.KEY_FINGERPRINT}[\w.-]+@|"
        r"\n[ \t]*User[ \t]+[A-Za-z_]|"
        rf"{cues.FILE_MODE}[A-Za-z_]|{cues.ID_UID}|{cues.LOGIN_VARIABLE}|{cues.ACCOUNT_KEY}[\"']?[ \t]*[:=]|"
        rf"[\"']{cues.ROLE_ACCOUNT_KEY}[\"'][ \t]*:[ \t]*[\"'][A-Za-z0-9_]|"
        rf"{cues.AUTH_LOG_USER}[A-Za-z_]|{cues.LOG_FIELD_USER}\"?[A-Za-z_]|"
        rf"(?:^|\n)[ \t]*(?:-[ \t]+)?{cues.ACCOUNT_ROLE}[ \t]*:[ \t]*[a-zA-Z0-9_]|"
        rf"{cues.AD_USER_COMMAND}[\"']?[A-Za-z_]|"
        rf"{cues.CONNINFO_USER}|\buser='?[A-Za-z_][^\s,]*{cues.CONNINFO_KEYS_AFTER}|"
        rf"{cues.URL_ACCOUNT}{cues.URL_DOMAIN}[A-Za-z_][\w.+-]*{cues.URL_PASSWORD_AT}|"
        rf"{cues.DB_URL_USER}|\bdisplay[_ ]?name[\"']?[ \t]*:[ \t]*[\"']?[a-z0-9_]|"
        rf"{cues.CONNECTION_USER_AFTER_KEY}|{cues.CONNECTION_USER_KEY}[^;\n]*;{cues.CONNECTION_KEY_AFTER}",
        ("USERNAME",),
        64,
    ),
    # a table's header naming a column by a cue (`name,email,phone`, `| Full Name | Home Phone |`), the
    # cue ending a cell: its cells are read as the header says (`tables`), not in a window
    (
        rf"(?i:(?:{_CUE_WORDS})\"?[ \t]*(?:[,;\t|]|\r?\n))",
        tuple(sorted(DEFAULT_KINDS)),
        0,
    ),
)
#: the tables' family (the last)
_TABLES = len(_FAMILIES) - 1


#: the families whose matches' starts Hyperscan reports (the cue families' automata are too large for
#: it: their windows start `_CUE_LENGTH` before the match's end)
_WITH_START = 6
#: the wallets' family: their addresses are long hexadecimal or base-58 runs, as hashes and ids are
_CRYPTO = 5
_CUE_LENGTH = 64


def finder_digest() -> str:
    """What decides the findings besides the settings: this package's code, the escapes it reads
    (`escapes`) and Presidio's version (an inspection made by another stands for this one only when they
    agree)."""
    return _finder_digest()


@cache
def _finder_digest() -> str:
    digest = hashlib.sha256(metadata.version("presidio-analyzer").encode())
    # this package's modules, and the one outside it that decides what the finder reads (`escapes`)
    for path in [*sorted(Path(__file__).parent.glob("*.py")), Path(escapes.__file__)]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@cache
def _gate() -> PatternDatabase:
    flags = [
        hyperscan.HS_FLAG_UTF8 | (hyperscan.HS_FLAG_SOM_LEFTMOST if index < _WITH_START else 0)
        for index in range(len(_FAMILIES))
    ]
    return PatternDatabase([expression.encode() for expression, _, _ in _FAMILIES], flags)


#: (kinds, NER model) -> what finders of that configuration found in each text (`PersonalDataFinder.spans`)
_MEMOS: dict[tuple[frozenset[str], str | None], TextMemo[list[Span]]] = {}

#: room before a gate's match for Presidio's context words (five tokens) and a cue; after it, each
#: family says how much (the value a cue introduces)
_BEFORE = 48
#: the widest a window grows by merging: a text made of candidates (`1234567890:` over and over) is
#: read a window at a time, not handed to Presidio whole
_WIDEST = 512
#: how far a window's edge moves to reach a space
_WORD_REACH = 48
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
#: what the filter leaves where it redacted: nothing inside one is anyone's data
_LEFT_BY_A_REDACTION = re.compile(r"<(?:REDACTED|PII|entity|MASKED):[^<>]*>")


#: the module that imports Presidio and spaCy (`engine`): most of what finding personal data costs a
#: process to start, in memory and CPU, so a pool's fork server imports it once for all its workers
ANALYZER_MODULE = "training_pipeline.privacy.personal.engine"


@dataclass(frozen=True)
class PersonalDataFinder:
    """Finds the `kinds` of personal data in texts; names anywhere too when `ner_model` is set."""

    kinds: frozenset[str] = DEFAULT_KINDS
    ner_model: str | None = None

    @cached_property
    def _analyzer(self) -> AnalyzerEngine:
        from training_pipeline.privacy.personal.engine import analyzer

        return analyzer(self.kinds)

    @cached_property
    def _ner(self) -> AnalyzerEngine | None:
        if not self._ner_wanted:
            return None
        from training_pipeline.privacy.personal.engine import ner_analyzer

        return ner_analyzer(self.ner_model)

    @cached_property
    def _family_kinds(self) -> list[frozenset[str]]:
        return [self.kinds & frozenset(kinds) for _, kinds, _ in _FAMILIES]

    def load(self) -> None:
        """Build the analyzers now: before a pool's workers are forked from this process, which then
        use these (`engine.analyzer` keeps one per process)."""
        if self.kinds:
            _ = self._analyzer, self._ner

    @property
    def _ner_wanted(self) -> bool:
        return bool(self.ner_model) and "PERSON" in self.kinds

    def spans(self, text: str) -> list[Span]:
        """The findings in `text`, in order, none overlapping another or a redaction already there;
        read with its escapes read (`escapes.unescaped`), each finding then spanning its escapes.
        Remembered for every finder of this process that finds the same (`_memo`): the filter's and the
        datasets' checks' read the same texts. The list is shared: not to be changed."""
        if not self.kinds or len(text) < 5:
            return []
        if len(text) > MEMO_MAX_CHARS:
            return self._read(text)
        memo = self._memo
        found = memo.get(text)
        if found is None:
            found = self._read(text)
            memo.remember(text, found)
        return found

    @cached_property
    def _memo(self) -> TextMemo[list[Span]]:
        """This process's memo of what a finder like this one found: one with the same kinds, and the same
        NER model or none."""
        key = (self.kinds, self.ner_model if self._ner_wanted else None)
        memo = _MEMOS.get(key)
        if memo is None:
            memo = _MEMOS[key] = TextMemo()
        return memo

    def _read(self, text: str) -> list[Span]:
        read = unescaped(text)
        if read is None:
            return self._spans(text)
        plain, starts = read
        return [(starts[start], starts[end], kind) for start, end, kind in self._spans(plain)]

    def _spans(self, text: str, tables: bool = True) -> list[Span]:
        # a lone surrogate (JSON allows `\ud800`) is no character to spaCy or Hyperscan: it is read as
        # U+FFFD, one character for one, so every offset holds in the text itself
        if not text.isascii():
            text = _LONE_SURROGATE.sub("\ufffd", text)
        windows, table = self._windows(text)
        found = self._analysed(text, windows)
        cells = self._cells(text) if table and tables else []
        if not found and not cells:
            return []
        taken = _Disjoint()
        for redaction in _LEFT_BY_A_REDACTION.finditer(text):
            taken.add(*redaction.span())
        chosen: list[Span] = []
        # a cell's findings first: judged as its header says, not as the text around the table reads
        for start, end, kind in cells:
            if not taken.overlaps(start, end):
                taken.add(start, end)
                chosen.append((start, end, kind))
        # the widest first, then the surest: a card number is not also three phone numbers
        for start, end, kind, score in sorted(found, key=lambda f: (f[0] - f[1], -f[3], f[0])):
            if start >= end or taken.overlaps(start, end):
                continue
            if not _someones(text, start, end, kind, score):
                continue
            taken.add(start, end)
            chosen.append((start, end, kind))
        return sorted(chosen)

    def _analysed(self, text: str, windows: list[tuple[int, int, frozenset[str]]]) -> list[Finding]:
        """What Presidio finds in the windows worth its analysis (`_wanted`, `_could_find`), and the
        NER model in the whole text, with nothing of it kept in spaCy's vocabularies (`analysing`)."""
        asked = []
        for start, end, kinds in windows:
            window = text[start:end]
            entities = self._wanted(window, kinds)
            if entities and self._could_find(window, entities):
                asked.append((start, window, entities))
        if not asked and self._ner is None:
            return []
        from training_pipeline.privacy.personal.engine import analysing

        found: list[Finding] = []
        engines = (self._analyzer,) if self._ner is None else (self._analyzer, self._ner)
        with analysing(*engines):
            for start, window, entities in asked:
                for result in self._analyzer.analyze(window, language="en", entities=entities):
                    found.append((start + result.start, start + result.end, result.entity_type, result.score))
            if self._ner is not None:
                for result in self._ner.analyze(text, language="en", entities=["PERSON"]):
                    found.append((result.start, result.end, result.entity_type, result.score))
        return found

    def _cells(self, text: str) -> list[Span]:
        """What is found in the cells of `text`'s tables, each read after its column's header
        (`tables.cued_cells`), as a value is read after its key: `phone: 4155550123`. A column's cells
        are read as one text, a line each, so a table of a thousand rows is a few windows' analyses and
        not a thousand; not for tables in turn (a cell holds none)."""
        columns: dict[str, list[tuple[int, int]]] = {}
        for cell_start, cell_end, cue in cued_cells(text, key_cue):
            columns.setdefault(cue, []).append((cell_start, cell_end))
        found: list[Span] = []
        for cue, cells in columns.items():
            said = f"{cue}: "
            starts = []  # where each cell starts in the column's text
            position = len(said)
            for cell_start, cell_end in cells:
                starts.append(position)
                position += cell_end - cell_start + 1 + len(said)
            column = "\n".join(said + text[cell_start:cell_end] for cell_start, cell_end in cells)
            for start, end, kind in self._spans(column, tables=False):
                row = bisect_right(starts, start) - 1
                if row < 0:
                    continue
                cell_start, cell_end = cells[row]
                if end - starts[row] <= cell_end - cell_start:  # inside the cell, not its cue
                    found.append((cell_start + start - starts[row], cell_start + end - starts[row], kind))
        return found

    def _wanted(self, window: str, kinds: frozenset[str]) -> list[str]:
        """`kinds`, less those whose findings in `window` would all fall under the threshold: the
        window meets none of their needs (`engine.context_needs`). What Presidio finds is the same."""
        needs = self._context_needs
        lowered: str | None = None
        wanted = []
        for kind in sorted(kinds):
            kind_needs = needs.get(kind)
            if kind_needs is not None:
                if lowered is None:
                    lowered = window.lower().replace("ς", "σ")
                if not any(need.met_in(window, lowered) for need in kind_needs):
                    continue
            wanted.append(kind)
        return wanted

    @cached_property
    def _context_needs(self) -> dict[str, tuple[ContextNeed, ...]]:
        from training_pipeline.privacy.personal.engine import context_needs

        return context_needs(self._analyzer)

    def _could_find(self, window: str, entities: list[str]) -> bool:
        """Whether Presidio's analysis of `window` could find one of `entities`: not when each of their
        recognizers can tell it could find none there (ours: `could_find`, none of its patterns
        matches). The analysis costs a spaCy pass over the window, several pattern searches' worth, and
        most windows a cue opens (`hey Eliza`, `thanks all`) hold no one's name."""
        recognizers = self._recognizers_of.get(tuple(entities))
        if recognizers is None:
            recognizers = self._recognizers_of[tuple(entities)] = tuple(
                self._analyzer.registry.get_recognizers(language="en", entities=entities)
            )
        return any(
            not hasattr(recognizer, "could_find") or recognizer.could_find(window, entities)
            for recognizer in recognizers
        )

    @cached_property
    def _recognizers_of(self) -> dict[tuple[str, ...], tuple[Any, ...]]:
        return {}

    def _windows(self, text: str) -> tuple[list[tuple[int, int, frozenset[str]]], bool]:
        """The windows around the gate's matches, each widened to whole words, with the kinds its
        family finds; a family's overlapping windows merged. And whether `text` may hold a table whose
        header names a column by a cue (`_cells`)."""
        data = text.encode("utf-8")
        matches = _gate().matches(data)
        if not matches:
            return [], False
        table = False
        ascii_only = len(data) == len(text)
        by_family: dict[int, list[tuple[int, int]]] = {}
        family_kinds = self._family_kinds
        # Hyperscan reports each longer match from one start too: the longest is the candidate
        longest: dict[tuple[int, int], int] = {}
        for family, byte_start, byte_end in matches:
            if family == _TABLES:
                table = True
            elif family_kinds[family]:
                if family >= _WITH_START:
                    byte_start = max(0, byte_end - _CUE_LENGTH)
                key = (family, byte_start)
                longest[key] = max(byte_end, longest.get(key, 0))
        reached: dict[int, int] = {}  # family -> where its last candidate ended (bytes)
        # a redaction's placeholder holds words a cue is made of (`<PII:USERNAME:1>`, `EMAIL_ADDRESS`)
        # and no one's data: a match ending inside one opens no window
        left = [match.span() for match in _LEFT_BY_A_REDACTION.finditer(text)] if "<" in text else []
        for (family, byte_start), byte_end in sorted(longest.items(), key=lambda item: item[0][1]):
            last = reached.get(family, -1)
            if byte_end <= last or (family < _WITH_START and byte_start < last):
                # inside the last candidate, or a later start of its run: the earliest start's holds it
                # (a cue family's start is only its end less `_CUE_LENGTH`: a cue ending past the last
                # is its own, as the second line of `ls -l`'s listing is)
                continue
            reached[family] = byte_end
            if ascii_only:
                start, end = byte_start, byte_end
            else:
                start = len(data[:byte_start].decode("utf-8", "ignore"))
                end = start + len(data[byte_start:byte_end].decode("utf-8", "ignore"))
            if family in (_PHONES, _NUMBERS) and end > start and not text[end - 1].isdigit():
                end -= 1  # the character that ended the run (`_RUN_END`)
            if left and _ends_inside(left, end):
                continue
            if not _worth_reading(text, start, end, family):
                continue
            start = max(0, start - _BEFORE)
            end = min(len(text), end + _FAMILIES[family][2])
            # to whole words, as far as a word goes (a text with no space is cut where it is)
            floor, ceiling = max(0, start - _WORD_REACH), min(len(text), end + _WORD_REACH)
            while start > floor and not text[start - 1].isspace():
                start -= 1
            while end < ceiling and not text[end].isspace():
                end += 1
            spans = by_family.setdefault(family, [])
            if spans and start <= spans[-1][1] and end - spans[-1][0] <= _WIDEST:
                spans[-1] = (min(start, spans[-1][0]), max(end, spans[-1][1]))
            else:
                spans.append((start, end))
        windows = [
            (start, end, family_kinds[family]) for family, spans in by_family.items() for start, end in spans
        ]
        return windows, table


def _ends_inside(spans: list[tuple[int, int]], end: int) -> bool:
    """Whether a match ending at `end` ends inside one of `spans` (in order, none overlapping)."""
    index = bisect_right(spans, (end,)) - 1
    return index >= 0 and spans[index][0] < end <= spans[index][1]


class _Disjoint:
    """Spans that overlap none of each other, kept in order: whether another overlaps one is a look at
    its two neighbours (a table's thousands of findings, each checked against all the others, took
    seconds)."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []

    def overlaps(self, start: int, end: int) -> bool:
        before = bisect_right(self._starts, start) - 1
        if before >= 0 and self._ends[before] > start:
            return True
        return before + 1 < len(self._starts) and self._starts[before + 1] < end

    def add(self, start: int, end: int) -> None:
        at = bisect_right(self._starts, start)
        self._starts.insert(at, start)
        self._ends.insert(at, end)


#: a whole token a finding may not be part of: a UUID, a hash or hexadecimal id
_NOT_A_VALUE_TOKEN = re.compile(r"(?=[0-9a-fA-F]*[a-fA-F])(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{16,}")
#: inside a token, what makes it no one's data: a UUID, a URL or path, an identifier glued with `-` or `_`
_NOT_A_VALUE_INSIDE = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    r"|\w+://\S+|(?:^|/)[\w.-]+/\S+|[A-Za-z]{2,}[-_]\w*\d|\d\w*[-_][A-Za-z]{2,}"
)
#: the characters of one token in a text (not spaces, quotes, brackets or punctuation)
_TOKEN = re.compile(r"[^\s\"'`()\[\]{}<>,;]*")
#: how far a token is followed to either side
_TOKEN_REACH = 256


def _stands_alone(text: str, start: int, end: int) -> bool:
    """Whether a finding is a value of its own and not a piece of an id, hash, URL or path around it."""
    # the token's part before the finding, read backwards (a search for `…*$` would retry every start)
    before = _TOKEN.match(text[max(0, start - _TOKEN_REACH) : start][::-1])
    after = _TOKEN.match(text, end, end + _TOKEN_REACH)
    left = start - (before.end() if before else 0)
    right = after.end() if after else end
    if (left, right) == (start, end) or _query_value(text, start, end):
        return True
    token = text[left:right].rstrip("?!.:")
    if "@" in token or _valid_iban(token):
        return True
    return _NOT_A_VALUE_TOKEN.fullmatch(token) is None and _NOT_A_VALUE_INSIDE.search(token) is None


#: a URL query's key right before a value (`?phone=`, `&email=`)
_QUERY_KEY = re.compile(r"[?&;]([A-Za-z][\w.-]{0,39})=$")


def _query_value(text: str, start: int, end: int) -> bool:
    """Whether a finding is a URL query's whole value under a key that says what it holds
    (`?phone=4155550123&`): a value of its own inside the URL, as a form sends it."""
    key = _QUERY_KEY.search(text, max(0, start - 41), start)
    return (
        key is not None
        and (end == len(text) or text[end] in "&#;\"' \t\r\n")
        and key_cue(key.group(1)) is not None
    )


#: a click-to-chat link's host and path up to the number it opens a chat with (`wa.me/14155550123`)
_CHAT_LINK = re.compile(r"(?<![\w.-])wa\.me/\+?$")


def _chat_link(text: str, start: int, end: int) -> bool:
    """Whether a finding is the number a click-to-chat link opens a chat with: WhatsApp's `wa.me/` takes
    only a phone number as its path (`?text=…` may follow)."""
    return _CHAT_LINK.search(text, max(0, start - 7), start) is not None and (
        end == len(text) or text[end] in "/?#\"' \t\r\n)>"
    )


def _valid_iban(token: str) -> bool:
    """An IBAN by its ISO 13616 check digits (hexadecimal-looking ones, `DE72…`, are not hashes)."""
    # ASCII letters and digits only (`isalnum` is true of `é` and `²`, which no base-36 digit is)
    if not (
        15 <= len(token) <= 34
        and token.isascii()
        and token[:2].isalpha()
        and token[2:4].isdigit()
        and token.isalnum()
    ):
        return False
    moved = token[4:] + token[:4]
    return int("".join(str(int(c, 36)) for c in moved.upper())) % 97 == 1


_NUMBER_KINDS = frozenset(NUMBERS)
_COUNTING = "01234567890123456789 98765432109876543210"
#: the kinds that are one token, which a longer id, hash, URL or path may hold by chance
_TOKEN_KINDS = _NUMBER_KINDS | {"EMAIL_ADDRESS", "IP_ADDRESS"}
#: a number given as an order's, a ticket's, an invoice's, or a count, a size, a time (by its key)
_REFERENCE = re.compile(
    r"(?:(?i:order|ticket|invoice|case|ref(?:erence)?|tracking|build|job|run|pr|issue|request|txn|"
    r"transaction|shipment|booking|confirmation|sku|item|version|release|backfill|partition|batch|"
    r"chunk|attempt|page|step)(?:[ \t]*(?i:no\.?|number|id))?"
    r"|#|(?i:(?<![A-Za-z])(?:ts|time|timestamp|created|updated|epoch|ms|seq|offset|count|total|size|bytes|tokens|"
    r"duration|latency|elapsed|id|uid|pid))[\"']?[ \t]*[:=]?)[ \t:#=\"']{0,4}$"
)
#: code around a number: a call's argument, an index, an operand
_CODE_BEFORE = re.compile(r"(?:\w\(|\[|[*%/^]\s*|\s[+-]\s)$")
_CODE_AFTER = re.compile(
    r"^(?:\)|\]|\s*[*%/^]|\s[+-]\s|\s?(?:ms|s|sec|MB|GB|KB|kB|MiB|GiB|TB|tokens|bytes|px|km|kg|rows)\b)"
)


def _glued(text: str, start: int, end: int) -> bool:
    """A piece of a longer run of digits or letters (eleven digits of a thirteen-digit timestamp), of a
    decimal number (`1.38435736E+12`, a time in seconds `"createdAt": 1541462410.595`), of a time of
    day, a counting run (`"0123456789"`) or a binary one (`11111111110`)."""
    if (start > 0 and text[start - 1].isalnum()) or (end < len(text) and text[end].isalnum()):
        return True
    if start > 1 and text[start - 1] in ".,:" and text[start - 2].isdigit():
        return True  # (after a colon: a time's seconds, fraction and offset, `11:32:38.034000-06:00`)
    if end + 1 < len(text) and text[end] == "." and text[end + 1].isdigit():
        return True
    if start > 1 and text[start - 1] in "._/" and text[start - 2].isalnum():
        return True  # a part of a name: `sr_CS.CP1251`
    digits = "".join(c for c in text[start:end] if c.isdigit())
    return digits in _COUNTING or len(set(digits)) == 1 or set(digits) <= {"0", "1"}


def _a_reference_or_code(text: str, start: int, end: int) -> bool:
    """A number said to be a reference, a count or a time, or one in code, is nobody's data."""
    return (
        _REFERENCE.search(text, max(0, start - 32), start) is not None
        or _CODE_BEFORE.search(text, max(0, start - 8), start) is not None
        or _CODE_AFTER.match(text[end : end + 8]) is not None
    )


_PHONES = 1
_NUMBERS = 2
#: what a phone number's digits and separators also write: a decimal, a span of years, a date
_NOT_A_PHONE = re.compile(
    r"[-+]?\d+\.\d+|(?:19|20)\d\d[ \t]?[-–/][ \t]?(?:19|20)\d\d"
    r"|\d{4}[-/.]\d\d[-/.]\d\d|\d\d[-/.]\d\d[-/.]\d{4}"
    # an IP address or network, a version (`3.5.2`): dotted groups a phone number never writes
    r"|\d{1,3}(?:\.\d{1,3}){3}(?:/\d+)?|.*\d\.\d\..*|.*\.\d\b.*"
)
#: words that say a number is a phone's, as Presidio's phone recognizer's context words and our labels
_PHONE_WORD = re.compile(rf"(?i:{cues.LABELS['PHONE_NUMBER']}|call|ring|text|sms|dial|number|contact)")
#: a date or a time, which a run of digits in groups also is
_DATE_OR_TIME = re.compile(
    r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}:\d{2}"
    # a compact day heading a run (`20261124-0001`, a backfill's, a build's)
    r"|(?<!\d)(?:19|20)\d\d(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])(?=[-_T]|$)"
)


def _could_be_a_number_of_someone(text: str, start: int, end: int) -> bool:
    """Whether a run of eight digits or more could be a card's, an account's or an id, before Presidio
    reads it: not a date or a time (a log line's `2026-11-24` would otherwise bring Presidio into every
    process that logs), not a piece of a longer run, a reference, a count or code."""
    return (
        _DATE_OR_TIME.search(text, start, end) is None
        and not _glued(text, start, end)
        and not _a_reference_or_code(text, start, end)
    )


#: a key that says what its value is: a name field's, a kind's label, a birth date's cue
_CUE_KEY = re.compile(rf"(?<![A-Za-z0-9])(?:{_CUE_WORDS})(?![A-Za-z0-9])")
_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@lru_cache(maxsize=4096)  # bounded: a day's objects may be keyed by ids or addresses, each new
def key_cue(key: str) -> str | None:
    """What an object's key says its value is, written as a text says it (`phoneNumber` as `phone
    number`), when that is a cue of a kind this package finds (`"full_name"`, `"phone_number"`,
    `"dob"`); None for any other key. A value under such a key is read after it (`key_cue: value`):
    alone, `"Jane Doe"` or `"4155550123"` is no one's."""
    said = _said(key)
    said = _SAID_AS.get(said, said)
    return said if said is not None and _CUE_KEY.search(said) else None


@lru_cache(maxsize=4096)  # as `key_cue`
def role_account_key(key: str) -> str | None:
    """An object's key as a text says it (`createdBy` as `created by`) where it names the account of a
    person in a role or of the user an event is for (`cues.ROLE_ACCOUNT_KEY`: `"assignee"`, `"actor"`,
    `"user"`); None for any other key."""
    said = _said(key)
    return said if said is not None and _ROLE_ACCOUNT_KEY.fullmatch(said) else None


def _said(key: str) -> str | None:
    """An object's key as a text says it (`phoneNumber` as `phone number`); None for one too long to be
    a field's name (a day's objects may be keyed by whole texts)."""
    said = _HUMP.sub(" ", key).lower()
    return said if len(said) <= 64 else None


_ROLE_ACCOUNT_KEY = re.compile(cues.ROLE_ACCOUNT_KEY)


#: keys whose words say something else than they mean: WhatsApp's `wa_id` is the user's number, not an
#: id (which `_REFERENCE` takes a number after `id:` to be)
_SAID_AS = {"wa_id": "whatsapp number"}


def _worth_reading(text: str, start: int, end: int, family: int) -> bool:
    """Whether a gate's match of `family` could be someone's data, before Presidio reads around it."""
    if family == _PHONES and (_DIALLED.match(text, start) or _chat_link(text, start, end)):
        return True  # `_dialled_whole`, whatever it is glued into
    if family < _CRYPTO and not _stands_alone(text, start, end):
        return False
    if family == _PHONES:
        return _looks_dialled(text, start, end)
    return family != _NUMBERS or _could_be_a_number_of_someone(text, start, end)


def _someones(text: str, start: int, end: int, kind: str, score: float) -> bool:
    """Whether a finding of Presidio's is someone's data, not a piece of an id, a reference or code."""
    if kind == "PHONE_NUMBER" and (_dialled_whole(text, start, end) or _chat_link(text, start, end)):
        return True  # dialled with its country code, or a chat link's: a phone number whatever it is in
    if kind in _TOKEN_KINDS and not _stands_alone(text, start, end):
        return False
    if kind == "CREDIT_CARD" and _a_timestamp(text[start:end]):
        return False
    if kind in _NUMBER_KINDS and (
        _glued(text, start, end) or (kind != "NATIONAL_ID" and _a_reference_or_code(text, start, end))
    ):
        return False  # (a `NATIONAL_ID` is found only after its label: "Tax ID:" is no reference's `id:`)
    return kind != "PHONE_NUMBER" or _dialled(text, start, end, score)


def _a_timestamp(value: str) -> bool:
    """A time since the epoch in milliseconds, microseconds or nanoseconds (13, 16 or 19 digits that read
    as 2001 to 2039: a trace's or a log's `start_us=1733600100780963`), one in ten of which pass a card's
    checksum. No card network issues numbers that start so: a card of 16 digits starts with 2221 or
    more, or with 3 to 6."""
    return value.isdigit() and len(value) in (13, 16, 19) and 1_000_000_000 <= int(value[:10]) < 2_200_000_000


_DIALLED = re.compile(cues.DIALLED)


def _dialled_whole(text: str, start: int, end: int) -> bool:
    """Whether a finding is a number dialled with its country code, written without spaces
    (`cues.DIALLED`)."""
    match = _DIALLED.match(text, start)
    return match is not None and match.end() == end


def _looks_dialled(text: str, start: int, end: int) -> bool:
    """Whether a run of digits could be a phone number, before Presidio reads it (its matcher tries
    every region's formats: the slowest of the recognizers): a number of its own, not a date or a time,
    not given as a reference."""
    value = text[start:end]
    if value.isdigit() and _PHONE_WORD.search(text, max(0, start - 32), start) is None:
        return False  # bare digits are a phone number only where the text says so (`_dialled`)
    return (
        _stands_alone(text, start, end)
        and _DATE_OR_TIME.search(value) is None
        and not _a_reference_or_code(text, start, end)
    )


def _dialled(text: str, start: int, end: int, score: float) -> bool:
    """A phone number is said to be one (its context raised its score), dialled with its `+`, or written
    in a phone number's groups; never a decimal, a span of years, a date, an address or a version."""
    value = text[start:end]
    if _NOT_A_PHONE.fullmatch(value):
        return False
    if score > 0.4 or value.startswith("+"):
        return True  # said to be a phone's, or dialled with its country code
    # else written as one: three groups or more, none of one digit but the first (`1 415 555 0132`,
    # `06 56 31 70 66`); `854-1987` and `1 2 3 13 14 15` are not
    groups = re.findall(r"\d+", value)
    return len(groups) >= 3 and all(len(group) > 1 for group in groups[1:])
