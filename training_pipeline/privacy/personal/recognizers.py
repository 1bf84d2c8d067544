"""Recognizers of our own, only where Presidio ships none or one that misses what agents' users write.

- `NameCueRecognizer` (`PERSON`): Presidio finds names only through an NER model. Without one, the cues
  people actually write: "my name is …", "I'm …", a greeting ("Dear …", "Hi …,"), a signature after
  "Regards,", a name field (`"full_name": "…"`, `Name: …`) and a device's owner (`Jane's MacBook Pro`).
- `StreetAddressRecognizer` (`STREET_ADDRESS`): Presidio has no street-address recognizer (its NER gives
  `LOCATION`, which is cities and countries as much as homes). A house number beside a street word in
  the languages of the bundled locales, or a number and words after "I live at", "address:", "ship to".
- `DateOfBirthRecognizer` (`DATE_OF_BIRTH`): Presidio's `DATE_TIME` is every date; a date is personal
  data when it is said to be a birth date ("born on", "DOB:", "Geburtsdatum").
- `PassportRecognizer` (`PASSPORT`): Presidio's passport recognizers are per country and weak without
  context; a number given as a passport's ("passport no. X1234567") is one whatever the country.
- `LabelledSsnRecognizer` (`US_SSN`): Presidio rejects the published example numbers (078-05-1120);
  a number someone calls their SSN is redacted all the same.
- `EthereumRecognizer` (`CRYPTO`): Presidio's crypto recognizer knows Bitcoin's address forms only.
- `PublicIpRecognizer` (`IP_ADDRESS`): Presidio's, keeping global addresses only: loopback, private,
  link-local and the documentation networks identify nobody, and `v1.2.3.4` is a version.
- `PhoneRecognizer` (`PHONE_NUMBER`): libphonenumber per phone-shaped run and region, and per number
  dialled with its country code glued into an id (see the class).
- `OfflineEmailRecognizer` (`EMAIL_ADDRESS`): Presidio's, with the public-suffix list read from the
  copy tldextract ships instead of fetched from the network on first use, and an address glued to a
  counter in an id (`run-jane@example.com-3`) found too.

Each returns a span with a score Presidio's analyzer weighs as it weighs its own.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any, ClassVar

import hyperscan
import regex
import tldextract
from presidio_analyzer import AnalysisExplanation, LocalRecognizer, Pattern, RecognizerResult
from presidio_analyzer.predefined_recognizers import EmailRecognizer, IpRecognizer

from training_pipeline.privacy.personal.cues import (
    ACCESS_LOG_TIME,
    ACCOUNT_COMMAND,
    ACCOUNT_KEY,
    ACCOUNT_ROLE,
    AD_USER_COMMAND,
    ADDRESS_CUE,
    ADDRESS_JOIN,
    AFTER_ROLE,
    ASKED_WHO,
    ASSIGNED_PEOPLE,
    AT_HOST,
    AUTH_LOG_USER,
    BIRTH_CUE,
    BLAME,
    CAPITALS_FIELD,
    CAPITALS_HONORIFIC,
    CAPITALS_NAME,
    CHOWN,
    CLOSING,
    COMMAND_START,
    COMMON_NAME,
    CONNECTION_KEY_AFTER,
    CONNECTION_USER_AFTER_KEY,
    CONNECTION_USER_KEY,
    CONNINFO_KEYS_AFTER,
    CONNINFO_USER,
    DATE,
    DB_URL_USER,
    DEVICE,
    DEVICE_OWNER,
    DIALLED,
    DN_FAMILY_FIRST,
    FAMILY_FIRST,
    FIELD,
    FILE_MODE,
    FILL_CALL,
    FILLED_WITH,
    GERMANIC_STREETS,
    GIT_IDENTITY,
    GITCONFIG_USER,
    GREETING,
    HANDLE_DISPLAY_NAME,
    HONORIFIC,
    HOUSE,
    ID_UID,
    INTRO,
    INTRO_TWO,
    KEY_FINGERPRINT,
    LABEL_JOIN,
    LABELLED_VALUES,
    LABELS,
    LDAP_NEXT,
    LDAP_UID,
    LOG_FIELD_USER,
    LOGGED_IN,
    LOGIN_COMMAND,
    LOGIN_OPTION,
    LOGIN_VARIABLE,
    NAME,
    NAME_BOX,
    NAME_FIELD,
    NAME_TWO,
    NOT_A_USER,
    NOT_NAMES,
    OPEN_FILE,
    ORGANISATION_WORDS,
    PLACEHOLDER_USER,
    PROCESS_OWNER,
    PROMPT_HOST,
    RELATION,
    ROLE,
    ROLE_ACCOUNT_KEY,
    ROLE_HANDLE,
    RUN_AS_OPTION,
    SERVICE_USER,
    SESSION_TTY,
    SHELL_PROMPT,
    SIGNATURE,
    SSH_CONFIG_USER,
    SSH_KEY_COMMENT,
    STAT_UID,
    STREET_NAME_WORD,
    STREET_WORDS_EN,
    STREET_WORDS_OTHER,
    SWITCH_USER,
    TYPED_INTO,
    URL_ACCOUNT,
    URL_DOMAIN,
    URL_PASSWORD_AT,
    VCARD_FN,
    VCARD_N,
)
from training_pipeline.privacy.prefilter import LineGate
from training_pipeline.privacy.profiles import PGPASS_ENTRY

__all__ = [
    "AccountNameRecognizer",
    "DateOfBirthRecognizer",
    "EthereumRecognizer",
    "LabelledSsnRecognizer",
    "LabelledValueRecognizer",
    "NameCueRecognizer",
    "OfflineEmailRecognizer",
    "PassportRecognizer",
    "PhoneRecognizer",
    "PublicIpRecognizer",
    "StreetAddressRecognizer",
    "own_recognizers",
]

_FLAGS = regex.VERSION1 | regex.MULTILINE
#: a letter a case-insensitive `regex` reads as two or more (`ß` as `ss`, `ﬁ` as `fi`, `İ` as `i̇`; all
#: in the Basic Multilingual Plane): a gate that reads a character outside ASCII as one byte cannot
#: tell what a text holding one matches
_FOLDS_TO_MORE = re.compile(
    "[" + "".join(c for c in map(chr, range(0x80, 0x10000)) if len(c.casefold()) > 1) + "]"
)


_STREET_WORD = regex.compile(
    rf"\b(?:{STREET_WORDS_EN})\b|(?i:\b(?:{STREET_WORDS_OTHER})\b)|\p{{Lu}}\p{{L}}*(?i:{GERMANIC_STREETS})",
    _FLAGS,
)


#: a house number standing alone (`IPv4` holds a digit, not a number)
_HOUSE_NUMBER = regex.compile(r"(?<![\p{L}\d.])\d{1,5}[a-zA-Z]?(?![\d.])", _FLAGS)


def _is_name(value: str) -> bool:
    """Whether capitalised words after a cue are a person's name: not a word that follows a cue
    without being one ("I'm Sorry", "Dear Customer"), not a group's name ("Platform Team")."""
    words = value.lower().replace(",", " ").split()
    return bool(words) and words[0] not in NOT_NAMES and ORGANISATION_WORDS.isdisjoint(words)


def _result(recognizer: LocalRecognizer, entity: str, start: int, end: int, score: float) -> RecognizerResult:
    """A finding with the explanation Presidio's context enhancer writes its context word into."""
    explanation = AnalysisExplanation(recognizer=recognizer.name, original_score=score)
    return RecognizerResult(entity, start, end, score, analysis_explanation=explanation)


class _Recognizer(LocalRecognizer):
    """A recognizer of spans found by expressions with one group each, or a group named `value` among
    others: (pattern, entity, score)."""

    PATTERNS: tuple[tuple[str, str, float], ...] = ()

    def __init__(self) -> None:
        entities = sorted({entity for _, entity, _ in self.PATTERNS})
        super().__init__(supported_entities=entities, supported_language="en")

    def load(self) -> None:
        self._compiled = [
            (compiled, entity, score, compiled.groupindex.get("value", 1))
            for compiled, entity, score in ((regex.compile(p, _FLAGS), e, s) for p, e, s in self.PATTERNS)
        ]
        self._every = frozenset(range(len(self.PATTERNS)))
        try:
            self._gate: LineGate | None = LineGate([compiled for compiled, *_ in self._compiled])
        except (ValueError, hyperscan.error):
            self._gate = None
        # what the last `could_find` found, for the `analyze` that follows it on the same text
        self._last: tuple[str, tuple[str, ...], list[RecognizerResult]] = ("", (), [])

    def _candidates(self, text: str) -> frozenset[int] | set[int]:
        """The patterns that may match `text`: the gate's (one scan of them all), which reads a letter
        outside ASCII as any, except where full case folding makes one letter two (`ß`, `ﬁ`)."""
        if self._gate is None or _FOLDS_TO_MORE.search(text):
            return self._every
        return self._gate.candidates(text)

    def could_find(self, text: str, entities: list[str]) -> bool:
        """Whether `analyze` finds one of `entities` in `text`. Its findings are its patterns' matches
        whose values it accepts, which need no NLP pass: they are made here and handed to the `analyze`
        that follows on the same text, and a window whose matches are all no one's (a cue's
        `postgres://app:…@`, a greeting to the agent) costs no Presidio analysis."""
        found = self._found(text, entities)
        self._last = (text, tuple(entities), found)
        return bool(found)

    def accept(self, value: str, entity: str) -> bool:
        return True

    def result(self, entity: str, start: int, end: int, score: float) -> RecognizerResult:
        return _result(self, entity, start, end, score)

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[RecognizerResult]:
        last_text, last_entities, found = self._last
        self._last = ("", (), [])  # handed out once: Presidio's context enhancer changes the results
        if last_text == text and last_entities == tuple(entities):
            return found
        return self._found(text, entities)

    def _found(self, text: str, entities: list[str]) -> list[RecognizerResult]:
        results = []
        for index in sorted(self._candidates(text)):
            pattern, entity, score, group = self._compiled[index]
            if entities and entity not in entities:
                continue
            for match in pattern.finditer(text, overlapped=False):
                start, end = match.span(group)
                value = text[start:end].rstrip(" \t.,;:")
                if value and self.accept(value, entity):
                    results.append(self.result(entity, start, start + len(value), score))
        return results


#: between two names a value lists (`"A, B"`, `"A", "B"`, `A and B`), and after the last
_LISTED_SEP = r"(?:[\"']?[ \t]*,[ \t]*[\"']?|[ \t]+and[ \t]+)"
_LISTED_END = r"[\"',<]|[ \t]+<|[ \t]+and[ \t]"


class NameCueRecognizer(_Recognizer):
    """People's names where they are said to be names; with an NER model configured, `SpacyRecognizer`
    finds the rest."""

    PATTERNS = (
        (rf"{INTRO}[ \t]+[\"'“]?({NAME})", "PERSON", 0.6),
        (rf"{INTRO_TWO}[ \t]+({NAME_TWO})", "PERSON", 0.6),
        # a greeting that opens a text, a sentence or a quoted message (`body="Hi Marcus, …"`)
        (rf"(?:^|[.!?][ \t]+|[\"'“(])[ \t]*{GREETING}[ \t]+({NAME})[ \t]*[,!:\n]", "PERSON", 0.6),
        (rf"{ROLE}[ \t]+({NAME_TWO}){AFTER_ROLE}", "PERSON", 0.6),
        (rf"{RELATION}({NAME})", "PERSON", 0.6),
        (rf"{SIGNATURE}({NAME_TWO})[ \t]*$", "PERSON", 0.7),
        (rf"{HONORIFIC}[ \t]+({NAME})", "PERSON", 0.6),
        # a booking's passenger in capitals (`booked for MR JOHN SMITH`; not GitLab's "MR PIPELINE")
        (
            r"(?i:\b(?:for|to|dear|guest|passenger|traveller|traveler|name)\b)[ \t]*:?[ \t]*"
            rf"{CAPITALS_HONORIFIC}[ \t]+(\p{{Lu}}{{2,}}(?:[ \t]+\p{{Lu}}{{2,}}){{1,2}})\b",
            "PERSON",
            0.6,
        ),
        (
            rf"(?:^|[.!?][ \t]+)[ \t]*{CLOSING}[ \t]*[,!.]?[ \t]*\n[ \t]*[-–—]*[ \t]*({NAME})[ \t]*$",
            "PERSON",
            0.7,
        ),
        # what a browser agent types into a name's box (`{"element": "First name", …, "text": "Jane"}`)
        # or a script fills it with (`page.fill("#firstName", "Jane")`)
        (rf"{NAME_BOX}{TYPED_INTO}({NAME})[\"']", "PERSON", 0.6),
        (rf"{FILL_CALL}{NAME_BOX}{FILLED_WITH}({NAME})[\"']", "PERSON", 0.6),
        # or sends in a URL's query (`?first_name=Jane&last_name=Doe`, `full_name=Jane+Doe`)
        (
            rf"[?&;]{NAME_BOX}=(\p{{Lu}}\p{{Ll}}+(?:(?:\+|%20)\p{{Lu}}\p{{Ll}}+){{0,3}})(?=[&#;\s\"']|$)",
            "PERSON",
            0.6,
        ),
        # a closing with the sender's name after it, ending the line (`Thanks, Priya`)
        (rf"(?:^|[.!?][ \t]+)[ \t]*{CLOSING}[ \t]*,[ \t]*({NAME})[ \t]*[.!]?[ \t]*$", "PERSON", 0.6),
        # a directory's common name (`CN=Jane Doe,OU=…`, `CN=Doe\\, Jane`, `ATTENDEE;CN="Jane Doe":mailto:`)
        (
            rf"{COMMON_NAME}({NAME_TWO}|{DN_FAMILY_FIRST})(?=\"?[ \t]*(?:[,;:/+\n]|$))",
            "PERSON",
            0.7,
        ),
        # a vCard's formatted name, and its structured name's family and given names (`N:Doe;Jane;;;`)
        (rf"{VCARD_FN}[ \t]*({NAME})[ \t]*(?=\r?\n|$)", "PERSON", 0.7),
        (rf"{VCARD_N}(\p{{Lu}}[\p{{L}}'’-]+);", "PERSON", 0.7),
        (rf"{VCARD_N}[^;\n]*;(\p{{Lu}}[\p{{L}}'’-]+)[;\r\n]", "PERSON", 0.7),
        # a name field's family name first (`Name: Müller, Hans`, `Customer: Garcia, Maria (ID 4471)`)
        (
            rf"[\"']?\b(?:{FIELD}|{NAME_FIELD})[\"']?[ \t]*:[ \t]*[\"']?({FAMILY_FIRST})"
            r"(?=[\"'<;\n]|[ \t]*$|[ \t]+[<(])",
            "PERSON",
            0.7,
        ),
        (
            rf"[\"']?\b{CAPITALS_FIELD}[\"']?[ \t]*:[ \t]*[\"']?({CAPITALS_NAME})(?=[\"'<,;\n]|[ \t]*$)",
            "PERSON",
            0.7,
        ),
        (
            # (a relation after it too: `Emergency contact: Tom Baker (brother)`)
            rf"[\"']?\b{FIELD}[\"']?[ \t]*:[ \t]*[\"']?({NAME})(?=[\"'<,;\n]|[ \t]*$|[ \t]+[<(])",
            "PERSON",
            0.7,
        ),
        (
            rf"[\"']?\b{NAME_FIELD}[\"']?[ \t]*:[ \t]*[\"']?({NAME_TWO})(?=[\"'<,;\n]|[ \t]*$|[ \t]+<)",
            "PERSON",
            0.7,
        ),
        # the names after the first in a people's field (`Author: Ben Gertzfield, Barry Warsaw`)
        (
            rf"(?<=[\"']?\b{NAME_FIELD}[\"']?[ \t]*:[ \t]*[\"']?{NAME_TWO}"
            rf"(?:(?:,|[ \t]+and)[ \t]+{NAME_TWO})*(?:,|[ \t]+and)[ \t]+)"
            rf"({NAME_TWO})(?=[\"'<,;\n]|[ \t]*$|[ \t]+<|[ \t]+and[ \t])",
            "PERSON",
            0.7,
        ),
        # a package's people set in code or configuration (`__author__ = "Ka-Ping Yee"`, `authors =
        # ["Jane Doe", "Bob Smith"]`), each of them, and a TOML table's (`{name = "…", email = "…"}`)
        (rf"{ASSIGNED_PEOPLE}({NAME_TWO})(?={_LISTED_END})", "PERSON", 0.7),
        (
            rf"(?<={ASSIGNED_PEOPLE}{NAME_TWO}(?:{_LISTED_SEP}{NAME_TWO})*{_LISTED_SEP})"
            rf"({NAME_TWO})(?={_LISTED_END})",
            "PERSON",
            0.7,
        ),
        (rf"\bname[ \t]*=[ \t]*\"({NAME_TWO})\"[ \t]*,[ \t]*email[ \t]*=", "PERSON", 0.7),
        # each line's author in `git blame`'s output
        (rf"^\^?[0-9a-f]{{7,40}}[ \t]+(?:[^\s(]+[ \t]+)?\(({NAME}){BLAME}", "PERSON", 0.7),
        # the name git's commits are made with (`git config user.name "Jane Doe"`, `GIT_AUTHOR_NAME=…`)
        (rf"(?:{GIT_IDENTITY}|{GITCONFIG_USER})({NAME_TWO})(?=[\"'\s]|$)", "PERSON", 0.7),
        # a display name before its address, as mail headers, git and package metadata write one
        # (`Jane Doe <jane@example.com>`, `"Jane Doe" <…>`), as credits and lists do (`Jane Doe
        # (jane@…)`, `Jane Doe, jane@…`, `Jane Doe - jane@…`; a notice's `Copyright Jane Doe <…>`), or
        # last name first (`"Doe, Jane" <…>`)
        (
            rf"(?:^|[\s\"'(,:=])\"?(?!Copyright\b)({NAME_TWO})\"?"
            r"(?:[ \t]+<|[ \t]+\(<?|,[ \t]+|[ \t]+[-–][ \t]+<?)[\w.+-]+@",
            "PERSON",
            0.7,
        ),
        (rf"(?:^|[\s(,:=])\"({NAME},[ \t]*{NAME})\"[ \t]*<[\w.+-]+@", "PERSON", 0.7),
        # the older form, the name a comment after its address (`jane@example.com (Jane Doe)`), as mail
        # headers, mailing lists' archives and old credits write it
        (rf"[\w.+-]@[\w-]+(?:\.[\w-]+)+[ \t]+\(({NAME_TWO})\)", "PERSON", 0.7),
        # a name in parts, as FHIR's JSON writes one (`"family": "Chalmers", "given": ["Peter", "James"]`):
        # the family name beside a `"given"` of its object, and each given name (a list's, or one)
        (rf"\"family\"[ \t]*:[ \t]*\"({NAME})\"(?=[^{{}}]{{0,200}}\"given\"[ \t]*:)", "PERSON", 0.7),
        (rf"\"given\"[ \t]*:[^{{}}]{{0,200}}?\"family\"[ \t]*:[ \t]*\"({NAME})\"", "PERSON", 0.7),
        (rf"(?<=\"given\"[ \t]*:[ \t]*\[[^\]{{}}]{{0,120}})\"({NAME})\"", "PERSON", 0.7),
        (rf"\"given\"[ \t]*:[ \t]*\"({NAME})\"", "PERSON", 0.7),
        # a device's default name, its owner's (`Jane's MacBook Pro`; as a host, `Janes-MacBook-Pro`)
        (rf"(?<![\w'’-])({DEVICE_OWNER})(?:['’]s[ \t]+|(?<=s)-){DEVICE}(?!\p{{Ll}})", "PERSON", 0.6),
    )

    def accept(self, value: str, entity: str) -> bool:
        return _is_name(value)


class StreetAddressRecognizer(_Recognizer):
    PATTERNS = (
        # 12 Baker Street, 1600 Amphitheatre Pkwy Apt. 4
        (
            rf"\b({HOUSE}[ \t]+(?:{STREET_NAME_WORD}[ \t]+){{1,4}}(?:{STREET_WORDS_EN})\b\.?"
            r"(?:,?[ \t]+(?:Apt|Suite|Ste|Unit|Flat|Floor|#)\.?[ \t]*#?\w+)?)",
            "STREET_ADDRESS",
            0.6,
        ),
        # Hauptstraße 5, Kerkstraat 12a, Långgatan 3, Bahnhofstr. 7
        (
            rf"\b(\p{{Lu}}[\p{{L}}-]*(?:{GERMANIC_STREETS})[ \t]+{HOUSE})\b",
            "STREET_ADDRESS",
            0.6,
        ),
        # Via Roma 10, Calle Mayor 5, ul. Długa 12, Rua das Flores 40, rue Victor Hugo 3
        (
            rf"(?i:\b)((?i:{STREET_WORDS_OTHER})\.?[ \t]+(?:{STREET_NAME_WORD}[ \t]+){{0,4}}"
            rf"\p{{Lu}}[\p{{L}}'’.-]*,?[ \t]+(?:n[º°o.]?[ \t]*)?{HOUSE})\b",
            "STREET_ADDRESS",
            0.6,
        ),
        # 12, rue de Martin; 8 avenue des Champs
        (
            rf"\b({HOUSE},?[ \t]+(?i:{STREET_WORDS_OTHER})\.?[ \t]+(?:{STREET_NAME_WORD}[ \t]+){{0,4}}"
            r"\p{Lu}[\p{L}'’-]*)",
            "STREET_ADDRESS",
            0.6,
        ),
        # after a cue, a house number and the words of the line up to a comma or its end
        (
            rf"{ADDRESS_CUE}[ \t]*[\"']?({HOUSE}[ \t]+(?:[\p{{L}}'’-]+[ \t]+){{0,4}}[\p{{L}}'’-]+)",
            "STREET_ADDRESS",
            0.6,
        ),
    )


class DateOfBirthRecognizer(_Recognizer):
    PATTERNS = (
        (
            rf"{BIRTH_CUE}[\"']?[ \t]*(?:is|was|to|:|=|-)?[ \t]*[\"']?({DATE})",
            "DATE_OF_BIRTH",
            0.85,
        ),
        # typed into a birth date's box by a browser agent, or filled in by a call
        (rf"{BIRTH_CUE}{TYPED_INTO}({DATE})[\"']", "DATE_OF_BIRTH", 0.85),
        (rf"{FILL_CALL}{BIRTH_CUE}{FILLED_WITH}({DATE})[\"']", "DATE_OF_BIRTH", 0.85),
    )


class PassportRecognizer(_Recognizer):
    PATTERNS = (
        (
            r"(?i:passport|reisepass|pass(?:nummer)?|passeport|pasaporte|passaporto|paszport|paspoort|"
            r"passaporte)(?i:[ \t]*(?:no\.?|number|num\.?|nr\.?|n[º°o]\.?|#|numéro|número|numero|"
            r"numer|nummer))?[\"']?[ \t]*(?:is|:|=|-)?[ \t]*[\"']?"
            r"((?=[A-Z0-9]*\d)[A-Z0-9]{6,10})\b",
            "PASSPORT",
            0.85,
        ),
    )


class LabelledSsnRecognizer(_Recognizer):
    PATTERNS = (
        (
            r"(?i:\bssn|social\s+security(?:\s+number|\s+no\.?|\s+#)?)[\"']?[ \t]*(?:is|:|=|#)?[ \t]*"
            r"[\"']?(\d{3}[- ]?\d{2}[- ]?\d{4})\b",
            "US_SSN",
            0.85,
        ),
    )


class LabelledValueRecognizer(_Recognizer):
    """A value given as a kind's ("my IBAN is …", `"phone": "…"`, "Card: …") when it has the kind's shape,
    whether or not its checksum holds: a mistyped card number is still someone's."""

    PATTERNS = tuple(
        (
            rf"(?i:(?<![\p{{L}}\d])(?:{LABELS[kind]})(?![\p{{L}}\d]))"
            rf"(?-i:{ADDRESS_JOIN if kind == 'STREET_ADDRESS' else LABEL_JOIN})"
            rf"({LABELLED_VALUES[kind]})(?![\p{{L}}\d])",
            kind,
            0.8,
        )
        for kind in LABELS
    )

    def accept(self, value: str, entity: str) -> bool:
        # an address given as one has a house number or a street word: "the address is unspecified" has
        # neither, and `address: 10.0.0.1` is no home
        if entity != "STREET_ADDRESS":
            return True
        first = value[0]
        if not (first.isdigit() or first.isupper() or _STREET_WORD.match(value)):
            return False  # "the address is reserved per RFC 4291", "… is a loopback"
        return any(c.isalpha() for c in value.replace("0x", "")) and (
            _HOUSE_NUMBER.search(value) is not None or _STREET_WORD.search(value) is not None
        )


class AccountNameRecognizer(_Recognizer):
    """An account's name where a coding agent's commands and tools write one: a home folder's path
    (`/Users/janedoe/…`, `/home/jdoe/…`, `C:\\Users\\Jane Doe\\…`), an SSH key's comment
    (`ssh-ed25519 AAAA… jdoe@laptop`), a login to a host (`ssh jdoe@10.0.0.5`, `scp f jdoe@build:`)
    an IAM user's ARN (`arn:aws:iam::123456789012:user/jdoe`), the account a CLI says it is logged in
    with (`Logged in to github.com account jdoe`), a file's owner in `ls -l`'s listing, `id`'s
    `uid=501(jdoe)`, the environment's `USER=jdoe`, an account's field (`"login": "jdoe"`), a shell's
    prompt (`jdoe@host:~/src$`), a web server's access log's account (`… - jdoe [10/Oct/2026:…`). An
    account's name is someone's identifier, as Sentry's `@userpath` scrubbing rule treats it. Service
    and system accounts (`runner`, `ubuntu`, `root`, `deploy`, `git`…), placeholders (`$USER`, `<you>`)
    and a URL's path (`example.com/home/about`) are nobody's."""

    PATTERNS = (
        # the folder starts a path (a file URL's too), or it is under a root systems keep homes in
        # (WSL's `/mnt/c/Users/…`, FreeBSD's `/usr/home`, Fedora Atomic's `/var/home`, Solaris'
        # `/export/home`, macOS' `/System/Volumes/Data/Users`, a cluster's `/nfs/home`): not inside a web
        # URL's or another path's (`/srv/home/…`, a web app's `src/home/…`)
        (
            r"(?:(?<![\w.~/-])|(?<=file://))"
            r"(?:/mnt/[a-z]|/usr|/var|/export|/System/Volumes/Data|/mnt|/nfs|/gpfs)?"
            r"(?:/home|/Users)/([\w.-]+)(?=/|[\s\"'`),;:\]]|$)",
            "USERNAME",
            0.7,
        ),
        # (PowerShell's prompt ends at its `>`)
        (
            r"(?<!\w)[A-Za-z]:[\\/](?i:users|documents and settings)[\\/]"
            r"([^\\/:*?\"<>|\r\n]+?)(?=[\\/]|[\"'`),;\]>]|$)",
            "USERNAME",
            0.7,
        ),
        # a home folder named by its account (`~jdoe/src`): a path, not code's `~mask`
        (r"(?<![\w~/.$-])~([a-z_][\w.-]{0,31})/(?=[A-Za-z._]|[\s\"'`]|$)", "USERNAME", 0.7),
        # a public key's comment, which `ssh-keygen` writes as the account and host that made it
        (rf"{SSH_KEY_COMMENT}([a-z_][\w.-]{{0,31}})@[\w.-]+", "USERNAME", 0.7),
        # the account a command logs in to a host as (an address after it is an email's, found apart;
        # not a URL's password: `scp://user:secret@host`)
        (rf"{LOGIN_COMMAND}(?<![\w.@/:-])([a-z_][\w.-]{{0,31}})@(?=[\w-])", "USERNAME", 0.7),
        (rf"{LOGIN_OPTION}[\"']?([A-Za-z_][\w.-]{{0,63}})(?![\w@])", "USERNAME", 0.7),
        # the account a command runs as, switches to, makes or changes, or gives a file to; SSH's
        # account at an address or asked for its password
        (rf"(?<![\w.$-]){RUN_AS_OPTION}[\"']?([a-z_][\w.-]{{0,31}})(?![\w@])", "USERNAME", 0.7),
        (rf"{SWITCH_USER}([a-z_][\w.-]{{0,31}})(?=[ \t]*(?:\r?\n|$|[;&|]))", "USERNAME", 0.7),
        (rf"{ACCOUNT_COMMAND}([a-z_][\w.-]{{0,31}})[ \t]*(?=\r?\n|$|[;&|])", "USERNAME", 0.7),
        (rf"(?<![\w.$-]){CHOWN}([a-z_][\w.-]{{0,31}})(?=:[\w.-]*[ \t])", "USERNAME", 0.7),
        (rf"{COMMAND_START}{CHOWN}([a-z_][\w.-]{{0,31}})(?=[ \t])", "USERNAME", 0.7),
        (rf"(?<![\w.@/:-])([a-z_][\w.-]{{0,31}})(?={AT_HOST}(?![\w.]))", "USERNAME", 0.7),
        # `whoami`'s answer in a transcript (Windows' after its machine: `desktop-7k2l9q\jsmith`)
        (rf"{ASKED_WHO}([A-Za-z_][\w.-]{{0,31}})[ \t]*(?=\r?\n|$)", "USERNAME", 0.7),
        (r"\barn:aws[\w-]*:iam::\d{12}:user/(?:[\w+=,.@-]+/)*([\w+=,.@-]+)", "USERNAME", 0.7),
        # a Windows command's account (`net use … /user:CORP\\jdoe`, `runas /user:jdoe`), a PostgreSQL
        # password file's (`db:5432:app:jdoe:…`)
        (r"(?<![\w-])/(?i:user):(?:[\w.-]+\\)?([A-Za-z_][\w.-]{0,63})(?=[\s\"']|$)", "USERNAME", 0.7),
        (rf"{PGPASS_ENTRY}([A-Za-z_][\w.-]{{0,62}}):\S", "USERNAME", 0.7),
        # an LDAP entry's account (`uid=jdoe,ou=people,dc=example,dc=com`)
        (rf"{LDAP_UID}([a-z_][\w.-]{{0,31}})(?={LDAP_NEXT})", "USERNAME", 0.7),
        # a person's profile by its address: LinkedIn's `/in/` is a member's (a company's is `/company/`)
        (r"\blinkedin\.com/(?:in|pub)/([\w%.-]{2,100})", "USERNAME", 0.7),
        (rf"{LOGGED_IN}([A-Za-z0-9][\w.-]{{0,38}})(?![\w@.-])", "USERNAME", 0.7),
        # a file's owner in `ls -l`'s listing (its group is the owner's own, found by spreading, or a
        # shared one: `staff`), `id`'s user, and the environment's account (`USER=jdoe`)
        (
            rf"(?<![\w-]){FILE_MODE}([A-Za-z_][\w.-]{{0,31}})[ \t]+[A-Za-z_][\w.-]{{0,31}}[ \t]+\d",
            "USERNAME",
            0.7,
        ),
        (rf"{ID_UID}([A-Za-z_][\w.-]{{0,31}})\)", "USERNAME", 0.7),
        (rf"{AD_USER_COMMAND}[\"']?([A-Za-z_][\w.-]{{0,19}})(?![\w@-])", "USERNAME", 0.7),
        # `ps aux`'s, `lsof`'s and `stat`'s owner, `ssh-add -l`'s key comment, an SSH config's `User`
        (rf"^([a-z_][\w.-]{{0,31}}){PROCESS_OWNER}", "USERNAME", 0.7),
        (rf"^([a-z_][\w.-]{{0,31}}){SESSION_TTY}", "USERNAME", 0.7),
        # an access log's authenticated account, after the client and its `identd` account
        (rf"^[^\s]+[ \t]+[^\s]+[ \t]+([A-Za-z_][\w.-]{{0,63}}){ACCESS_LOG_TIME}", "USERNAME", 0.7),
        (rf"^[^\s]+[ \t]+\d+[ \t]+([a-z_][\w.-]{{0,31}}){OPEN_FILE}", "USERNAME", 0.7),
        (rf"{STAT_UID}([A-Za-z_][\w.-]{{0,31}})\)", "USERNAME", 0.7),
        (rf"{KEY_FINGERPRINT}([a-z_][\w.-]{{0,31}})@[\w.-]+", "USERNAME", 0.7),
        (rf"{SSH_CONFIG_USER}([A-Za-z_][\w.-]{{0,31}})[ \t]*(?=\r?\n|$)", "USERNAME", 0.7),
        (rf"{LOGIN_VARIABLE}([A-Za-z_][\w.-]{{0,38}})(?=[\"'\s,;}}]|$)", "USERNAME", 0.7),
        # a database connection's account: a libpq connection string's, and a database URL's query's
        (rf"{CONNINFO_USER}([A-Za-z_][\w.-]{{0,62}})(?=[\"'\s]|$)", "USERNAME", 0.7),
        (
            rf"(?<![\w.-])user='?([A-Za-z_][\w.-]{{0,62}}){CONNINFO_KEYS_AFTER}",
            "USERNAME",
            0.7,
        ),
        (rf"{DB_URL_USER}([A-Za-z_][\w.-]{{0,62}})(?=[&#\s\"']|$)", "USERNAME", 0.7),
        # a URL's account, with its password or without (a dotted host's `user@host` is an address too),
        # after its domain if it has one
        (rf"{URL_ACCOUNT}{URL_DOMAIN}([A-Za-z_][\w.+-]{{0,62}})(?={URL_PASSWORD_AT})", "USERNAME", 0.7),
        (
            rf"{CONNECTION_USER_AFTER_KEY}([A-Za-z_][\w.\\@-]{{0,62}})(?=[ \t]*(?:;|[\"']|$))",
            "USERNAME",
            0.7,
        ),
        (
            rf"(?<![\w.-]){CONNECTION_USER_KEY}([A-Za-z_][\w.\\@-]{{0,62}});(?={CONNECTION_KEY_AFTER})",
            "USERNAME",
            0.7,
        ),
        # a field holding an account's name: quoted (GitHub's `"login": "jdoe"`), or a config's line
        # (`username: jdoe`, `user_name = "jdoe"`) that ends with it; not a type (`username: str`,
        # `login: String!`), code's variable (`username = self.username`), a log's "Login: failed for"
        (rf"[\"']{ACCOUNT_KEY}[\"'][ \t]*[:=][ \t]*[\"']([A-Za-z0-9_][\w.-]{{0,38}})[\"']", "USERNAME", 0.7),
        (
            r"^[ \t]*(?:-[ \t]+)?(?:login|[uU]ser[ _]?[nN]ame|screen[ _]?name|(?i:sam[ _]?account[ _]?name))"
            r"(?:[ \t]*:[ \t]*[\"']?|[ \t]*=[ \t]*[\"'])([A-Za-z0-9_][\w.-]{0,38})(?=[\"',;}]|[ \t]*$)",
            "USERNAME",
            0.7,
        ),
        # the account of a person in a role, or of the user an event is for: quoted (`"assignee": "jdoe"`,
        # `"actor": "octocat"`, `"user": "jdoe"`), or a role's line (`created_by: jdoe`, a table's cell
        # read after its header); a name in words is `NameCueRecognizer`'s
        (rf"[\"']{ROLE_ACCOUNT_KEY}[\"'][ \t]*:[ \t]*[\"']({ROLE_HANDLE})[\"']", "USERNAME", 0.7),
        (rf"^[ \t]*(?:-[ \t]+)?{ACCOUNT_ROLE}[ \t]*:[ \t]*({ROLE_HANDLE})[ \t]*$", "USERNAME", 0.7),
        # (`username=jdoe` alone on its line, as git's credential helper and an `.env` file write it; not
        # code's `username=self.username,`)
        (r"^[ \t]*(?i:login|user[ _]?name)=([A-Za-z0-9_][\w-]{0,38})[ \t]*$", "USERNAME", 0.7),
        (rf"{HANDLE_DISPLAY_NAME}([a-z0-9_][\w.-]{{0,79}})(?=[\"']|[ \t]*$)", "USERNAME", 0.7),
        # an authentication log's account (sshd's, PAM's)
        (rf"{AUTH_LOG_USER}([A-Za-z_][\w.-]{{0,31}})(?=[ \t(]|$)", "USERNAME", 0.7),
        # a structured log's account field among the line's other fields (`ts=… user=jdoe msg=…`), and a
        # URL query's (`?user=jdoe&page=2`); not code's `user=user,`
        (
            rf"(?<=[\w.]=[^\s=]{{0,200}}[ \t]|[?&])(?<![\w.-]){LOG_FIELD_USER}\"?([A-Za-z_][\w.-]{{0,38}})"
            r"\"?(?=[ \t&#]|$)",
            "USERNAME",
            0.7,
        ),
        (
            rf"(?<![\w.-]){LOG_FIELD_USER}\"?([A-Za-z_][\w.-]{{0,38}})\"?[ \t]+[\w.]+=",
            "USERNAME",
            0.7,
        ),
        # a login given with its password on one line (`Login: jdoe42 Password: …`)
        (
            rf"\b{ACCOUNT_KEY}[ \t]*:[ \t]*([A-Za-z0-9_][\w.-]{{0,38}})"
            r"[ \t]+(?i:password|passwd|pass)[ \t]*:",
            "USERNAME",
            0.7,
        ),
        # a shell's prompt (`jdoe@host:~/src$`, `jdoe@Host ~ %`, `[jdoe@host src]$`), and a host named
        # after its account, as Ubuntu's installer names one (`jdoe@jdoe-ThinkPad-X1:~$`)
        (rf"(?<![\w.@/:-])([A-Za-z_][\w.-]{{0,31}})@{PROMPT_HOST}{SHELL_PROMPT}", "USERNAME", 0.7),
        (
            rf"(?<![\w.@/:-])(?P<account>[A-Za-z_][\w.]{{0,31}})@(?P<value>(?P=account))-{PROMPT_HOST}"
            rf"{SHELL_PROMPT}",
            "USERNAME",
            0.7,
        ),
    )

    def accept(self, value: str, entity: str) -> bool:
        value = value.strip()
        return (
            len(value) >= 2
            and any(c.isalpha() for c in value)
            and value.casefold() not in NOT_A_USER
            and not PLACEHOLDER_USER.search(value)
            and not SERVICE_USER.search(value)
        )


class PhoneRecognizer(LocalRecognizer):
    """Phone numbers read by `phonenumbers` (Google's libphonenumber, which Presidio's own recognizer
    also uses): each phone-shaped run is parsed as it is written, with its `+` country code, or as a
    number of each region in turn, and counts when one region finds it valid. Presidio's recognizer
    runs libphonenumber's matcher over the whole text once per region instead: the slowest part of a
    day's redaction, on texts full of numbers (a table of cards took it seconds).

    A number dialled with its country code and glued into an id (`cues.DIALLED`: `conv_+447911123456`,
    `session-+14155550123-2`, which the phone-shaped run would take with its counter) is parsed on its
    own too."""

    CONTEXT = ("phone", "telephone", "tel", "cell", "cellphone", "mobile", "call", "number", "contact")
    _SHAPE = regex.compile(r"(?<![\w+])\+?\(?\d[\d \t().\-/]{5,20}\d(?![\w])")
    _DIALLED = regex.compile(DIALLED)
    #: a calendar date (`7/18/2023`, `2023.7.18`), which some regions' numbering plans also allow
    _DATE = regex.compile(r"\d{1,2}([/.-])\d{1,2}\1(?:19|20)\d\d|(?:19|20)\d\d([/.-])\d{1,2}\2\d{1,2}")

    def __init__(self, regions: tuple[str, ...]) -> None:
        self.regions = regions
        super().__init__(
            supported_entities=["PHONE_NUMBER"], supported_language="en", context=list(self.CONTEXT)
        )

    def load(self) -> None:
        import phonenumbers

        self._phonenumbers = phonenumbers

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[RecognizerResult]:
        results = []
        found: set[int] = set()  # where the runs found start
        for match in self._SHAPE.finditer(text):
            value = match.group()
            digits = sum(c.isdigit() for c in value)
            if self._DATE.fullmatch(value):
                continue
            if 7 <= digits <= 15 and self._valid(value, (None,) if value.startswith("+") else self.regions):
                results.append(_result(self, "PHONE_NUMBER", match.start(), match.end(), 0.4))
                found.add(match.start())
        for match in self._DIALLED.finditer(text):
            if match.start() not in found and self._valid(match.group(), (None,)):
                results.append(_result(self, "PHONE_NUMBER", match.start(), match.end(), 0.4))
        return results

    def _valid(self, value: str, regions: tuple[str | None, ...]) -> bool:
        """Whether one of `regions` (None: the number's own `+` code) finds `value` a valid number."""
        phonenumbers = self._phonenumbers
        for region in regions:
            try:
                number = phonenumbers.parse(value, region)
            except phonenumbers.NumberParseException:
                continue
            if phonenumbers.is_valid_number(number):
                return True
        return False


class EthereumRecognizer(_Recognizer):
    PATTERNS = ((r"\b(0x[0-9a-fA-F]{40})\b", "CRYPTO", 0.6),)


class PublicIpRecognizer(IpRecognizer):
    """Presidio's IP recognizer, for addresses on the public internet only."""

    #: what a version follows: its word, or a requirement's comparison (`pycurl>=7.43.0.5`, `<7.45.4`)
    _VERSION = regex.compile(r"(?i:v|ver\.?|version|release|build|rev\.?)[ \t]*$|[<>=!~]=$|[\w\]][<>]$")

    def invalidate_result(self, pattern_text: str) -> bool:
        if super().invalidate_result(pattern_text) or "/" in pattern_text:
            return True  # a network (`F000::/5`, `10.0.0.0/8`) is nobody's address
        try:
            address = ipaddress.ip_address(pattern_text.strip())
        except ValueError:
            return True
        if address.version == 4 and all(int(part) < 10 for part in str(address).split(".")):
            return True  # `3.1.1.6`, `2.7.2.2`: a version or a section number, written as one
        if address.version == 6 and len([g for g in pattern_text.split(":") if g]) < 4:
            return True  # `[4-1::-1]`, `1::`: a slice, or an address too short to be a host's
        return not address.is_global or str(address).count("ffff") >= 4

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None, regex_flags: Any = None):
        return [
            result
            for result in super().analyze(text, entities, nlp_artifacts, regex_flags)
            if not self._VERSION.search(text, max(0, result.start - 12), result.start)
        ]


#: a URL's scheme and account, up to its password (`http://user:`)
_URL_USER = regex.compile(r"[A-Za-z][\w+.-]*://[^\s/?#@:]*:$")
#: the public-suffix list tldextract ships, never fetched (no network at run time, nothing cached)
_SUFFIXES = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


class OfflineEmailRecognizer(EmailRecognizer):
    #: Presidio's pattern takes `jane@example.com-3` whole, and its domain then fails the suffix list:
    #: an address glued to a counter or a name in an id (`run-jane@example.com-3`, `…com_2`) is found by
    #: this one, which ends at the last letters-only label before the glue (and starts only where the
    #: address's characters start: from every `\b` inside `a.b.c…@` it was quadratic)
    PATTERNS: ClassVar[list[Pattern]] = [
        *EmailRecognizer.PATTERNS,
        Pattern(
            "Email glued to a suffix",
            r"(?<![\w.%+'-])[\w.%+'-]*\w@\w+(?:-+\w+)*(?:\.\w+(?:-+\w+)*)*\.[A-Za-z]{2,}(?=[-_:]\w)",
            EmailRecognizer.PATTERNS[0].score,
        ),
    ]

    def validate_result(self, pattern_text: str) -> bool:
        return _SUFFIXES(pattern_text.rsplit("@", 1)[-1]).fqdn != ""

    def analyze(
        self, text: str, entities: list[str], nlp_artifacts: Any = None, regex_flags: int | None = None
    ) -> list[RecognizerResult]:
        """Presidio's findings, each starting after the last `/`, `?`, `=`, `&` or `#` before its `@`:
        the RFC lets an address's name hold them, nobody's does, and a URL's path and query do, so
        `…/contacts/jane@example.com` and `?email=jane@example.com` are the address alone. `git@host`
        is a repository's remote (`git@github.com:org/repo.git`), and a URL's password left as a
        placeholder before its host (`http://user:pass@example.org`) is no address, nobody's mailbox."""
        kept = []
        for result in super().analyze(text, entities, nlp_artifacts, regex_flags):
            at = text.rfind("@", result.start, result.end)
            cut = max(text.rfind(mark, result.start, at) for mark in "/?=&#")
            if cut >= 0:
                result.start = cut + 1
            if text[result.start - 1 : result.start] == ":" and _URL_USER.search(
                text, max(0, result.start - 256), result.start
            ):
                continue
            if result.start < at and text[result.start : at] != "git":
                kept.append(result)
        return kept


def own_recognizers(phone_regions: tuple[str, ...]) -> list[LocalRecognizer]:
    return [
        PhoneRecognizer(phone_regions),
        NameCueRecognizer(),
        StreetAddressRecognizer(),
        AccountNameRecognizer(),
        DateOfBirthRecognizer(),
        PassportRecognizer(),
        LabelledSsnRecognizer(),
        LabelledValueRecognizer(),
        EthereumRecognizer(),
        PublicIpRecognizer(),
        OfflineEmailRecognizer(),
    ]
