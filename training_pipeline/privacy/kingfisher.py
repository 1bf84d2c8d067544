"""Kingfisher's rule set as credential rules: the strict profile's second maintained source, for the
hundreds of services whose keys have no prefix of their own and are told by the service's name nearby
(`airbrake … key = …40 characters…`), and for connection strings, netrc and the like.

`kingfisher/rules/*.yml` (and two `*.yaml`) are Kingfisher's own `data/rules` (MongoDB, Apache-2.0,
`kingfisher/LICENSE`), unchanged; `kingfisher/SOURCE` names the release and commit.
`kingfisher/rules.json` is what a process reads: the rules the strict profile takes, each with its
pattern in Python's syntax, made from the YAML by

    python -m training_pipeline.privacy.kingfisher refresh KINGFISHER_CHECKOUT_OR_RULES_FOLDER

which copies the rule files and replaces the old ones only once every rule taken compiles, in Python
and in the Hyperscan gate; it names the published examples a rule does not match (upstream's mistakes,
left out of `rules.json`). A test checks that `rules.json` is what the vendored YAML makes. Reading the
639 YAML files is a third of a second; the JSON is read in milliseconds, and no cache is kept anywhere.

Which rules: those Kingfisher reports by default (confidence medium or high) and shows (`visible: false`
marks a value that only helps validate another rule's, such as an application id). Each keeps
Kingfisher's semantics: its pattern (Rust syntax, translated: verbose mode compacted, leading flags as
Python flags, mid-pattern flags scoped, `(?<name>` named groups), its entropy floor, and the global
allowlist of gitleaks' set. What a match redacts is from its first captured group to its last (the
whole match when it captures nothing), so a rule that captures a user and a password redacts both. The
redaction label is the rule's name in kebab case (with its number where two rules share a name).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from training_pipeline.atomic import atomic_write_text
from training_pipeline.privacy.credential_rule import (
    CHARACTER_CLASS,
    CREDENTIAL_NAME,
    LazyPattern,
    literal_first,
)
from training_pipeline.privacy.gitleaks import Allowlist, GitleaksRule, _alternation_outside_groups, to_python
from training_pipeline.privacy.token_run import TokenRun

FOLDER = Path(__file__).with_name("kingfisher")
RULES_FOLDER = FOLDER / "rules"
RULES_FILE = FOLDER / "rules.json"

__all__ = [
    "KingfisherRule",
    "examples",
    "load_rules",
    "refresh",
    "rule_ids",
    "rules_from_yaml",
    "to_python_pattern",
]


@dataclass(frozen=True, slots=True)
class KingfisherRule(GitleaksRule):
    """A Kingfisher rule: gitleaks' semantics (entropy, global allowlist, whole tokens, no keywords),
    its secret spanning its captured groups, and a gate with every repeat loosened."""

    #: what the Hyperscan gate looks for (`gate_source`): a superset of the pattern's matches that
    #: compiles fast. Kingfisher's patterns are built for Hyperscan, but their exact repeats
    #: (`[a-z0-9]{40}` after a service's name) made the strict gate's one-time compile 14 times longer
    gate_pattern: re.Pattern[str] | LazyPattern | None = None

    def gate(self) -> re.Pattern[str] | LazyPattern:  # type: ignore[override]
        return self.gate_pattern or self.pattern

    def captured(self, match: re.Match[str]) -> tuple[int, int]:
        spans = [match.span(index) for index in range(1, (match.re.groups or 0) + 1) if match.group(index)]
        if not spans:
            return match.span()
        return min(start for start, _ in spans), max(end for _, end in spans)


def to_python_pattern(pattern: str) -> tuple[str, int]:
    """A Kingfisher (Rust `regex`) pattern as Python `re` text and flags, matching the same texts (ASCII
    classes, as gitleaks' translation keeps them)."""
    pattern = re.sub(r"\(\?#[^)]*\)", "", pattern)
    leading = re.match(r"\s*((?:\(\?[a-z]+\)\s*)*)", pattern)
    letters = set("".join(re.findall(r"\(\?([a-z]+)\)", leading.group(1))))
    body = pattern[leading.end() :]
    if "x" in letters:
        body = _compacted(body)
    body = re.sub(r"\(\?<([A-Za-z_]\w*)>", r"(?P<\1>", to_python(body.strip()))
    flags = re.ASCII
    for letter, flag in (("i", re.IGNORECASE), ("s", re.DOTALL), ("m", re.MULTILINE)):
        if letter in letters:
            flags |= flag
    return body, flags


def _compacted(body: str) -> str:
    """A verbose pattern without its layout: Rust ignores whitespace everywhere in verbose mode, in
    classes too, and a `#` not escaped starts a comment that runs to the line's end."""
    out: list[str] = []
    index, in_class = 0, False
    while index < len(body):
        char = body[index]
        if char == "\\":
            escaped = body[index + 1 : index + 2]
            out.append(escaped if escaped in ("#", " ") else body[index : index + 2])
            index += 2
        elif char.isspace():
            index += 1
        elif char == "#":
            stop = body.find("\n", index)
            index = len(body) if stop < 0 else stop
        else:
            if char == "[" and not in_class:
                in_class = True
                out.append(char)
                index += 1
                for opening in ("^", "]"):  # a class's leading `^` and a `]` right after it are its own
                    if body[index : index + 1] == opening:
                        out.append(opening)
                        index += 1
                continue
            if char == "]" and in_class:
                in_class = False
            out.append(char)
            index += 1
    return "".join(out)


#: a bounded repeat outside a class: `{n}`, `{n,}` or `{n,m}`
_REPEAT = re.compile(rf"\\.|{CHARACTER_CLASS}|\{{(\d+)(?:,\d*)?\}}", re.DOTALL)


def loosened(pattern: str) -> str:
    """`pattern` with every bounded repeat as `+` (at least one) or `*`: it matches a superset."""
    return _REPEAT.sub(
        lambda m: m.group() if m.group(1) is None else ("+" if int(m.group(1)) else "*"), pattern
    )


#: a pattern's literal head: after an optional `\b`, letters, digits, `_`, `-` and escaped punctuation
_HEAD = re.compile(r"(?:\\b)?((?:[A-Za-z0-9_-]|\\[^A-Za-z0-9])+)")


def gate_source(pattern: str) -> str:
    """What the gate looks for in place of `pattern`: its literal head where every match starts with one
    of four characters or more (`airbrake` in `\bairbrake(?:.|[\n\r]){0,16}?…`: four rules in five),
    else the pattern `loosened`. Either matches wherever the pattern does; literals compile in a
    fraction of the time."""
    head = _HEAD.match(pattern)
    if head is not None and not _alternation_outside_groups(pattern):
        rest = pattern[head.end() :]
        literal = head.group(1)
        if rest[:1] in ("?", "*", "{", "+"):  # the head's last character is under a quantifier
            literal = literal[:-2] if literal[-2:-1] == "\\" else literal[:-1]
        if len(re.sub(r"\\(.)", r"\1", literal)) >= 4:
            return literal
    return loosened(pattern)


def _label(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _rule_files(folder: Path) -> list[Path]:
    """Kingfisher's rule files: it reads both spellings (`mysql.yaml` beside `airbrake.yml`)."""
    return sorted([*folder.glob("*.yml"), *folder.glob("*.yaml")])


def rules_from_yaml(folder: Path) -> list[dict[str, Any]]:
    """The rules the strict profile takes from Kingfisher's rule files in `folder`, as `rules.json`
    holds them."""
    import yaml  # only here: a process reads rules.json

    specs = []
    for path in _rule_files(folder):
        for spec in yaml.safe_load(path.read_text(encoding="utf-8")).get("rules") or ():
            if spec.get("visible", True) is False or spec.get("confidence", "medium") == "low":
                continue
            pattern, flags = to_python_pattern(spec["pattern"])
            specs.append(
                {
                    "id": spec["id"],
                    "name": spec["name"],
                    "pattern": pattern,
                    "flags": flags,
                    "min_entropy": float(spec.get("min_entropy", 0.0)),
                    "examples": [str(example) for example in spec.get("examples") or ()],
                }
            )
    names: dict[str, int] = {}
    for spec in specs:
        names[_label(spec["name"])] = names.get(_label(spec["name"]), 0) + 1
    for spec in specs:
        label = _label(spec["name"])
        spec["label"] = label if names[label] == 1 else f"{label}-{spec['id'].rsplit('.', 1)[-1]}"
    return specs


#: Ours, on top of Kingfisher's rules: a URL whose password is a stand-in (`https://user:changeme@…`,
#: `…:secret_key@…`) holds no credential, as the `url-password` rule reads it; Kingfisher's rule takes the
#: URL whole, so without this it took more of a documentation's example than the URL's own rule does
EXTRA_ALLOWLISTS: dict[str, tuple[Allowlist, ...]] = {
    "kingfisher.uri.1": (
        Allowlist(
            (LazyPattern(rf"^https?://[^:@/\s]*:(?:changeme|{CREDENTIAL_NAME})@", re.ASCII | re.IGNORECASE),),
            (),
            "match",
        ),
    ),
}


def _rule(spec: dict[str, Any]) -> KingfisherRule:
    flags = int(spec["flags"])
    pattern = LazyPattern(literal_first(spec["pattern"]), flags)
    return KingfisherRule(
        spec["label"],
        pattern,
        entropy=float(spec["min_entropy"]),
        allowlists=EXTRA_ALLOWLISTS.get(spec["id"], ()),
        # the gate is often a service's name alone, a common word for some (`line`, `client`)
        token_run=TokenRun(pattern.pattern, pattern.flags),
        gate_pattern=LazyPattern(gate_source(spec["pattern"]), flags),
    )


@cache
def _specs(path: Path) -> tuple[dict[str, Any], ...]:
    return tuple(json.loads(path.read_bytes())["rules"])


def load_rules(path: Path | None = None) -> tuple[KingfisherRule, ...]:
    """The rules of the vendored set (or of the `rules.json` at `path`), the catch-all shapes last."""
    rules = [_rule(spec) for spec in _specs(path or RULES_FILE)]
    return tuple(sorted(rules, key=lambda rule: rule.label.startswith("generic-")))


def rule_ids(path: Path | None = None) -> tuple[str, ...]:
    """Kingfisher's ids of the rules taken (`kingfisher.airbrake.1`): they name the services."""
    return tuple(spec["id"] for spec in _specs(path or RULES_FILE))


def examples(path: Path | None = None) -> dict[str, tuple[str, ...]]:
    """Each rule's own examples, by label: what the coverage corpus plants."""
    return {spec["label"]: tuple(spec["examples"]) for spec in _specs(path or RULES_FILE)}


def refresh(source: Path, target: Path = FOLDER) -> tuple[int, list[str]]:
    """Replace the vendored rules with those of a Kingfisher checkout (or its `data/rules` folder) once
    every rule taken compiles, in Python and into the gate; returns how many rules are taken and the
    examples their own rule does not match (upstream's mistakes: left out of `rules.json`, so the
    coverage corpus never counts them). A set that does not compile is refused and the old one stays."""
    from training_pipeline.privacy.prefilter import RuleGate

    folder = source / "data" / "rules" if (source / "data" / "rules").is_dir() else source
    if not _rule_files(folder):
        raise ValueError(f"no Kingfisher rule files (*.yml, *.yaml) in {folder}")
    specs = rules_from_yaml(folder)
    rules = [_rule(spec) for spec in specs]
    unmatched: list[str] = []
    for spec, rule in zip(specs, rules, strict=True):
        compiled = rule.pattern.compiled()  # type: ignore[union-attr]
        unmatched += [f"{spec['id']}: {e[:80]!r}" for e in spec["examples"] if compiled.search(e) is None]
        spec["examples"] = [example for example in spec["examples"] if compiled.search(example)]
    RuleGate(lambda: [rule.gate() for rule in rules], len(rules))
    staged = target / "rules.new"
    if staged.exists():
        shutil.rmtree(staged)
    shutil.copytree(folder, staged)
    (target / "rules").exists() and shutil.rmtree(target / "rules")
    staged.rename(target / "rules")
    atomic_write_text(target / "rules.json", json.dumps({"rules": specs}, indent=1, sort_keys=True) + "\n")
    _specs.cache_clear()
    return len(specs), unmatched


if __name__ == "__main__":
    if sys.argv[1:2] != ["refresh"] or len(sys.argv) != 3:
        raise SystemExit("usage: python -m training_pipeline.privacy.kingfisher refresh KINGFISHER_CHECKOUT")
    try:
        count, unmatched = refresh(Path(sys.argv[2]))
    except (OSError, ValueError, re.error) as error:
        raise SystemExit(f"error: {error}") from None
    for example in unmatched:
        print(f"left out, its rule does not match it: {example}")
    print(f"{count} rules; now record the release and commit in {FOLDER / 'SOURCE'}")
