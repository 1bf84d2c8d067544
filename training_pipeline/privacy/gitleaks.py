"""gitleaks' default rule set as credential rules: the maintained source of the strict profile's
vendor families (1Password to Zendesk), read from a pinned, vendored copy of its config.

`gitleaks/gitleaks.toml` is gitleaks' own `config/gitleaks.toml` (MIT, `gitleaks/LICENSE`), unchanged;
`gitleaks/SOURCE` names the release and commit. Refresh it with

    python -m training_pipeline.privacy.gitleaks refresh [PATH_OR_URL]

which validates the new file (every rule must translate and compile, in Python and in the Hyperscan
gate) before it replaces the old one.

Each rule keeps gitleaks' semantics: its regex (Go RE2, translated: a mid-pattern `(?i)` becomes a
scoped group, `\\z` becomes `\\Z`, `[[:alnum:]]` its class, and `\\w`, `\\b`, `\\d` stay ASCII as in
RE2); its keywords (a rule runs only on text that holds one); its secret group (the configured one, else
the first non-empty group, else the whole match); its entropy floor (a secret must have more Shannon
entropy than that); and its allowlists and the global one (regexes on the secret, the match or the
line; stop words in the secret). Path-only allowlists do not apply to text, and a rule that only
matches file paths (`pkcs12-file`) is left out. The redaction label is the rule's id.
"""

from __future__ import annotations

import math
import re
import sys
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from training_pipeline.privacy.credential_rule import (
    CHARACTER_CLASS,
    REFERENCE,
    CredentialRule,
    Found,
    LazyPattern,
    compiled,
    literal_first,
    literal_free,
    looks_fake,
)
from training_pipeline.privacy.token_run import TokenRun

FOLDER = Path(__file__).with_name("gitleaks")
RULES_FILE = FOLDER / "gitleaks.toml"
UPSTREAM = "https://raw.githubusercontent.com/gitleaks/gitleaks/master/config/gitleaks.toml"


#: a flags group (`(?i)`, `(?s)`): Go's and Rust's apply anywhere, Python's only at the start
_INLINE_FLAGS = re.compile(r"\(\?([ims]+)\)")


def to_python(pattern: str) -> str:
    """A gitleaks (Go RE2) pattern in Python `re` syntax, matching the same texts."""
    pattern = pattern.replace("[[:alnum:]]", "[A-Za-z0-9]").replace("\\z", "\\Z")
    if (
        _INLINE_FLAGS.search(pattern, 1) is None
    ):  # no flag to scope (nine patterns in ten): the same text back
        return pattern
    out: list[str] = []
    # per open group (the first entry: the whole pattern), the scoped-flag groups to close with it
    pending = [0]
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            out.append(pattern[index : index + 2])
            index += 2
        elif char == "[":
            end = _class_end(pattern, index)
            out.append(pattern[index:end])
            index = end
        elif index > 0 and (flags := _INLINE_FLAGS.match(pattern, index)) is not None:
            out.append(f"(?{flags.group(1)}:")  # RE2 applies it to the rest of the enclosing group
            pending[-1] += 1
            index = flags.end()
        else:
            if char == "(":
                pending.append(0)
            elif char == ")" and len(pending) > 1:
                out.append(")" * pending.pop())
            out.append(char)
            index += 1
    return "".join(out) + ")" * pending[0]


def _class_end(pattern: str, start: int) -> int:
    """The index after the `]` that closes the class opened at `start`."""
    index = start + 1
    if index < len(pattern) and pattern[index] == "^":
        index += 1
    if index < len(pattern) and pattern[index] == "]":
        index += 1
    while index < len(pattern):
        if pattern[index] == "\\":
            index += 2
            continue
        if pattern[index] == "]":
            return index + 1
        index += 1
    raise ValueError(f"unterminated character class in {pattern!r}")


@lru_cache(maxsize=4096)  # a leaked key comes back in every call of the agent that holds it
def shannon_entropy(text: str) -> float:
    if not text:
        return 0.0
    counts = Counter(text)
    size = len(text)
    return -sum(count / size * math.log2(count / size) for count in counts.values())


@dataclass(frozen=True, slots=True)
class Allowlist:
    """A gitleaks allowlist as it applies to text: `regexes` on the `target` (secret, match or line),
    `stopwords` in the secret; `all_of` (condition AND) needs every check to hold."""

    regexes: tuple[re.Pattern[str] | LazyPattern, ...]
    stopwords: tuple[str, ...]
    target: str = "secret"
    all_of: bool = False

    def allows(self, secret: str, match: str, line: str) -> bool:
        checks = []
        if self.regexes:
            target = {"match": match, "line": line}.get(self.target, secret)
            checks.append(any(compiled(regex).search(target) for regex in self.regexes))
        if self.stopwords:
            lowered = secret.lower()
            checks.append(any(word in lowered for word in self.stopwords))
        return bool(checks) and (all(checks) if self.all_of else any(checks))


@dataclass(frozen=True, slots=True)
class GitleaksRule(CredentialRule):
    entropy: float = 0.0
    allowlists: tuple[Allowlist, ...] = ()
    #: the rule's `secretGroup`; 0: the first non-empty group, or the whole match
    secret_group: int = 0
    #: gitleaks runs a rule only on text holding one of these (lower case), which keeps broad shapes
    #: (40 hex digits) to the texts that name their service
    keywords: tuple[str, ...] = ()
    #: the pattern starts with one of its keywords (`glpat-…`): a text it matches holds the keyword, so
    #: lowering a whole prompt to look for it is wasted
    keyword_in_every_match: bool = False
    whole_token: bool = True
    #: the run of token characters every match holds (`token_run`), looked for before the pattern runs
    token_run: TokenRun | None = None

    def applies(self, text: str) -> bool:
        if self.keywords and not self.keyword_in_every_match:
            keywords = _ascii_keywords(self.keywords)
            if keywords is None:  # a keyword outside ASCII: looked for in the text lowered as a whole
                lowered = text.lower()
                if not any(keyword in lowered for keyword in self.keywords):
                    return False
            elif not any(keyword in _lowered(text) for keyword in keywords):
                return False
        return self.token_run is None or self.token_run.held_by(text)

    def gate(self) -> re.Pattern[str]:
        """The rule's keywords instead of its pattern when the pattern has a way to match without a
        literal (Hyperscan then runs an automaton over every byte: sourcegraph's bare 40 hex digits
        were a third of the strict gate's time) and no keyword is short enough to be common. A text
        without a keyword is one the rule does not run on, so the keywords still name it wherever it
        could redact; a text lowered (`applies`) holds a keyword where the text holds it in any case,
        or with `K` (the Kelvin sign) or `İ` for its k or i."""
        if (
            not self.keywords
            or self.keyword_in_every_match
            or min(map(len, self.keywords)) < _GATED_KEYWORD
            or not literal_free(self.pattern)
        ):
            return self.pattern
        words = ("".join(_KEYWORD_CHAR.get(char, re.escape(char)) for char in word) for word in self.keywords)
        return re.compile("|".join(words), re.IGNORECASE)

    def redact(self, text: str, found: Found | None = None) -> tuple[str, int]:
        if not self.applies(text):
            return text, 0
        return CredentialRule.redact(self, text, found)

    def secrets(self, text: str) -> list[str]:
        """What this rule alone redacts in `text`."""
        if not self.applies(text):
            return []
        return [
            text[a:b] for m in self.finditer(text) if (span := self.secret_span(m, text)) for a, b in [span]
        ]

    def secret_span(self, match: re.Match[str], text: str) -> tuple[int, int] | None:
        """Where the secret of a match is, or None when gitleaks would not report it (low entropy,
        allowlisted, or already a placeholder)."""
        span = self.captured(match)
        secret, whole = text[span[0] : span[1]], match.group()
        line = _line_of(text, match.start(), match.end())  # it holds the match, which holds the secret
        if len(line) > _VERDICT_LINE:  # not remembered: the memo would keep a megabyte line alive
            reported = self._reports(secret, whole, line)
        else:
            key = (id(self), secret, whole, line)
            remembered = _VERDICTS.get(key)
            if remembered is not None and remembered[0] is self:
                reported = remembered[1]
            else:
                reported = self._reports(secret, whole, line)
                if len(_VERDICTS) >= _MAX_VERDICTS:
                    _VERDICTS.clear()
                _VERDICTS[key] = (self, reported)
        return span if reported else None

    def captured(self, match: re.Match[str]) -> tuple[int, int]:
        """Where a match's secret is: the rule's secret group, else its first non-empty group, else all
        of it."""
        group = self._secret_group(match)
        if group and len(match.group(group)) < 8:
            group = 0  # a repeated part (a webhook's `([a-z0-9]{4}-){3}`), not the secret: all of it
        return match.span(group)

    def _reports(self, secret: str, whole: str, line: str) -> bool:
        """Remembered (`_VERDICTS`): a leaked key comes back, on the same line of the history, in every
        later call of the agent that holds it, and the global allowlist alone is a dozen regexes."""
        if "<REDACTED:" in secret or looks_fake(secret):
            return False  # a placeholder, or a match around one: an earlier rule took the secret
        if self.entropy and shannon_entropy(secret) <= self.entropy:
            return False
        return not any(a.allows(secret, whole, line) for a in (*GLOBAL_ALLOWLIST, *self.allowlists))

    def _secret_group(self, match: re.Match[str]) -> int:
        if self.secret_group:
            return self.secret_group
        if match.re.groupindex:  # named groups label parts of a shape (`jwt-base64`): the secret is all of it
            return 0
        for index in range(1, (match.re.groups or 0) + 1):
            if match.group(index):
                return index
        return 0


#: (the rule's id, secret, match, line) -> (the rule, whether gitleaks reports the secret there); the rule
#: is kept with its verdict, so an id is never another rule's while its entries last
_VERDICTS: dict[tuple[int, str, str, str], tuple[GitleaksRule, bool]] = {}
#: verdicts remembered before the memo starts again, and the longest line one is remembered for: at most
#: a few megabytes whatever the text
_MAX_VERDICTS = 2048
_VERDICT_LINE = 1024
#: keywords shorter than this are common in text (`sk`, `s.`): a rule with one is gated on its pattern
_GATED_KEYWORD = 4
#: the characters outside ASCII that lower into an ASCII letter
_KEYWORD_CHAR = {"k": "[k\\u212a]", "i": "[i\\u0130]"}


#: The last text lowered, and its lowered UTF-8: the rules a text's gate names check their keywords in turn.
_LAST_LOWERED: tuple[str, bytes] = ("", b"")
#: the only characters outside ASCII whose lower case holds an ASCII letter (İ to `i̇`, the Kelvin sign to
#: `k`); every other one lowers to characters outside ASCII, one for one
_LOWER_TO_ASCII = ("\u0130", "\u212a")


@lru_cache(maxsize=1024)
def _ascii_keywords(keywords: tuple[str, ...]) -> tuple[bytes, ...] | None:
    """The keywords as bytes to look for in `_lowered`'s, or None when one is not ASCII."""
    return tuple(word.encode("ascii") for word in keywords) if all(map(str.isascii, keywords)) else None


def _lowered(text: str) -> bytes:
    """The UTF-8 of `text.lower()` as far as ASCII keywords can tell: an ASCII word is in it exactly
    where it is in the text lowered. Outside ASCII only two characters lower into ASCII letters, and every
    other one lowers to characters outside ASCII, whose UTF-8 bytes are no ASCII letter: so a text without
    those two is lowered as its UTF-8 bytes (ASCII letters only), not as Unicode, which is slower."""
    global _LAST_LOWERED
    last = _LAST_LOWERED  # one read: another thread may replace it, never half of it
    if last[0] is text:
        return last[1]
    if text.isascii() or not any(char in text for char in _LOWER_TO_ASCII):
        lowered = text.encode("utf-8", "surrogatepass").lower()
    else:
        lowered = text.lower().encode("utf-8", "surrogatepass")
    _LAST_LOWERED = (text, lowered)
    return lowered


def _line_of(text: str, start: int, end: int) -> str:
    return text[text.rfind("\n", 0, start) + 1 : (len(text) if (stop := text.find("\n", end)) < 0 else stop)]


def _allowlist(spec: dict[str, Any]) -> Allowlist | None:
    if not spec.get("regexes") and not spec.get("stopwords"):
        return None  # paths or commits only: nothing to check in text
    all_of = spec.get("condition", "OR").upper() == "AND"
    if all_of and spec.get("paths"):
        return None  # needs a file path to hold, and text has none
    return Allowlist(
        # compiled where a rule's match is first checked: most of the dozens a rule set holds are never
        # needed, and every strict process (each worker of a pool) would compile them all
        tuple(LazyPattern(to_python(r), re.ASCII) for r in spec.get("regexes", ())),
        tuple(word.lower() for word in spec.get("stopwords", ())),
        spec.get("regexTarget", "secret"),
        all_of,
    )


#: Ours, on top of gitleaks' own allowlists: in code, the value of `thing = module.attribute` is a
#: reference, not a secret (the one line of the standard library gitleaks' generic rule flagged).
_CODE_REFERENCE = Allowlist((REFERENCE,), ())
#: Ours: gitleaks' generic rule takes `,` for an assignment (`"token", "…"`), so in a list of names in
#: code a name holding a keyword joins the next one (`import AutoTokenizer, Llama4ForConditionalGeneration`).
#: Two bare names, the second of words with a digit or two, are a list, not a key and its value.
_LISTED_NAMES = Allowlist(
    (
        LazyPattern(
            r"^[\w.-]+[ \t]*,[ \t]*(?!(?:[^0-9]*[0-9]){3})(?>[A-Z]?[a-z]{2,}|[A-Z]{2,}(?![a-z])|[0-9])+\s?$",
            re.ASCII,
        ),
    ),
    (),
    "match",
)
#: A Secret's own `type: kubernetes.io/…`, which gitleaks' Kubernetes rule reads as a data entry of ten
#: base64 letters (`kubernetes`) once the entry before it is redacted: a redacted manifest filtered
#: again (a stored day's subset) must come out the same.
_SECRET_TYPE = Allowlist((LazyPattern(r"(?i)^type:[ \t]*[\"']?kubernetes$", re.ASCII),), ())
EXTRA_ALLOWLISTS: dict[str, tuple[Allowlist, ...]] = {
    "generic-api-key": (_CODE_REFERENCE, _LISTED_NAMES),
    "kubernetes-secret-yaml": (_SECRET_TYPE,),
}


def _config(path: Path) -> dict[str, Any]:
    return _parsed(path.read_text(encoding="utf-8"))


def _parsed(text: str) -> dict[str, Any]:
    import tomllib

    return tomllib.loads(text)


#: The vendored rule set, read once: its rules (`load_rules`) and its global allowlist come from it.
_VENDORED = _config(RULES_FILE)


#: gitleaks ends most vendor patterns where a token ends in code: a quote, a space, `;`, an escaped line
#: break, the end. People also end a key with a sentence or a file name (`sk_live_….`, `….cache`,
#: `(….)`): those count as the token's end too, so the key is redacted there as well.
_END_OF_TOKEN = ("(?:[\\x60'\"\\s;]|\\\\[nr]|$)", "(?:[\\x60'\"\\s;.,:!?)\\]}>]|\\\\[nr]|$)")


#: gitleaks opens most vendor patterns with `\b`, which `_` before the key defeats: a key glued to a
#: name in snake case (`stripe_sk_live_…`, `t_glpat-…`) is a key all the same. The opening becomes "no
#: letter or digit before" (a letter before still ends it: `EURASIA…` holds no AWS key).
_OPENING_BOUNDARY = re.compile(r"^((?:\(\?[a-z]+\))?)\\b(?![?*+{])")
#: spelt apart from other lookbehinds, so `credential_rule.boundary_free` knows it opens the pattern
#: as `\b` did
_AFTER_UNDERSCORE = r"\1(?<![^\\W_])"  # a replacement template: `\\W` is the pattern's `\W`


def load_rules(path: Path | None = None) -> tuple[GitleaksRule, ...]:
    """The rules of the vendored set, or of the config at `path` (a candidate `refresh` checks)."""
    config = _VENDORED if path is None else _config(path)
    rules = []
    for spec in config["rules"]:
        if "regex" not in spec:
            continue  # a file-path rule: no text to match
        allowlists = tuple(a for a in map(_allowlist, spec.get("allowlists", ())) if a is not None)
        allowlists += EXTRA_ALLOWLISTS.get(spec["id"], ())
        text = _OPENING_BOUNDARY.sub(_AFTER_UNDERSCORE, to_python(spec["regex"]).replace(*_END_OF_TOKEN), 1)
        pattern = LazyPattern(literal_first(text), re.ASCII)
        keywords = tuple(keyword.lower() for keyword in spec.get("keywords", ()))
        head = _literal_head(pattern)
        rules.append(
            GitleaksRule(
                spec["id"],
                pattern,
                entropy=float(spec.get("entropy", 0.0)),
                allowlists=allowlists,
                secret_group=int(spec.get("secretGroup", 0)),
                keywords=keywords,
                keyword_in_every_match=any(keyword in head for keyword in keywords),
                token_run=TokenRun(pattern.pattern, pattern.flags),
            )
        )
    # the catch-all shapes last, so a vendor's own rule names its key
    return tuple(sorted(rules, key=lambda rule: rule.label.startswith("generic-")))


#: a pattern's leading flags group, then its plain characters (escaped punctuation included)
_HEAD = re.compile(r"(?:\(\?[aiLmsu]+\))?((?:[^\\\[\](){}|?*+.^$]|\\[^A-Za-z0-9])*)([?*+{]?)")
#: what may hide a `|`: an escaped character, or a class
_NOT_ALTERNATION = re.compile(rf"\\.|{CHARACTER_CLASS}", re.DOTALL)


def _literal_head(pattern: re.Pattern[str]) -> str:
    """The characters every match of `pattern` starts with, in lower case ('' when it starts otherwise:
    a class, a group, an alternation). Read off the pattern's text: parsing each of the rule set's
    patterns would be paid at every process's start. What this misses (a `{` that is no repeat, a prefix
    common to a group's alternatives) only shortens the head, which is safe: the rule then checks its
    keywords (`keyword_in_every_match` stays False)."""
    if pattern.flags & re.VERBOSE or _alternation_outside_groups(pattern.pattern):
        return ""
    found = _HEAD.match(pattern.pattern)
    head = re.sub(r"\\(.)", r"\1", found.group(1))
    if found.group(2):  # the last character is under a quantifier: not in every match
        head = head[:-1]
    return head.lower()


def _alternation_outside_groups(pattern: str) -> bool:
    depth = 0
    for char in _NOT_ALTERNATION.sub("", pattern):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            return True
    return False


def _global_allowlist(config: dict[str, Any]) -> tuple[Allowlist, ...]:
    found = _allowlist(config.get("allowlist") or {})
    return (found,) if found else ()


GLOBAL_ALLOWLIST = _global_allowlist(_VENDORED)


def refresh(source: str, target: Path = RULES_FILE) -> int:
    """Replace the vendored config with `source` (a path or URL) once every rule of it loads and
    compiles into the gate; returns how many rules it holds. A config that does not is refused and the
    old one stays."""
    import urllib.request

    from training_pipeline.privacy.prefilter import RuleGate

    if "://" in source:
        with urllib.request.urlopen(source, timeout=60) as answer:
            text = answer.read().decode("utf-8")
    else:
        text = Path(source).read_text(encoding="utf-8")
    candidate = target.with_suffix(".new")
    candidate.write_text(text, encoding="utf-8")
    try:
        rules = load_rules(candidate)
        for rule in rules:
            rule.pattern.compiled()  # type: ignore[union-attr]
        RuleGate(lambda: [rule.pattern for rule in rules], len(rules))
    except Exception:
        candidate.unlink()
        raise
    candidate.replace(target)
    return len(rules)


if __name__ == "__main__":
    if sys.argv[1:2] != ["refresh"] or len(sys.argv) > 3:
        raise SystemExit("usage: python -m training_pipeline.privacy.gitleaks refresh [PATH_OR_URL]")
    import hyperscan

    source = sys.argv[2] if len(sys.argv) > 2 else UPSTREAM
    try:
        count = refresh(source)
    # offline or a missing file (URLError is an OSError), a broken TOML (a ValueError), a rule that
    # does not compile here or in the gate
    except (OSError, ValueError, KeyError, re.error, hyperscan.error) as error:
        raise SystemExit(
            f"error: cannot refresh from {source}: {error}; the vendored rules are unchanged"
        ) from None
    print(f"{count} rules; now record the release and commit in {FOLDER / 'SOURCE'}")
