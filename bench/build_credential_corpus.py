"""Builds the corpora `credential_coverage.py` measures recall and over-redaction on, from what the two
maintained rule sets publish with their rules.

    python bench/build_credential_corpus.py gitleaks GITLEAKS_GIT_DIR_OR_CHECKOUT
    python bench/build_credential_corpus.py kingfisher
    python bench/build_credential_corpus.py replant

`replant` plants the gitleaks corpus's secrets again in today's contexts (after a context is added),
keeping its published and sampled rows, without a checkout.

`gitleaks` writes `bench/data/credential_corpus.jsonl` from the true and false positives in each rule's
generator (`cmd/generate/config/rules/*.go`), read from a gitleaks checkout. For every rule it keeps the
published examples as they are (`published` context), takes the secret each one carries (what the rule
alone marks, with gitleaks' secret-group and entropy semantics), and plants that secret in the
contexts below, each named after the rule's keyword. Rules whose generator only makes random examples
get secrets sampled from the rule's own regex (seeded, so the corpus is stable). Negatives are the
published false positives, plus placeholders in the same contexts.

`kingfisher` writes `bench/data/kingfisher_corpus.jsonl` from the examples vendored with Kingfisher's
rules. Its examples are mostly toys (`abcdefghijklmnopqrstuvwxyz123456`) that Kingfisher's own entropy
floor rejects, so each secret is planted as a real key would be: every character replaced by a random
one of its kind (a digit by a digit, a hex letter by a hex letter, punctuation kept), seeded. A sample is
kept where the rule itself reports the secret: its published form (`published`), and each context whose
wording the rule's pattern takes (a rule that needs `https://…` before its key fits no env line).
"""

from __future__ import annotations

import ast
import json
import random
import re
import string
import subprocess
import sys
from pathlib import Path
from re import _parser as sre_parse

from training_pipeline.privacy.credential_rule import looks_fake
from training_pipeline.privacy.gitleaks import GitleaksRule, load_rules, shannon_entropy

OUT = Path(__file__).with_name("data") / "credential_corpus.jsonl"
_STRING = re.compile(r'`([^`]*)`|"((?:\\.|[^"\\\n])*)"')
_RULE_ID = re.compile(r'RuleID:\s*"([^"]+)"')

CONTEXTS = {
    "prose": "Here is my {k}: {s} (keep it to yourself).",
    # a key where a sentence, a parenthesis, a quotation or a list goes on right after it
    "sentence": 'My {k} is {s}. Try ({s}), then "{s}", or {s}: thanks!',
    "assignment": '{camel}Token = "{s}"',
    "env": "export {upper}_TOKEN={s}",
    "yaml": "{snake}_token: {s}",
    "json": '{{"{snake}_token": "{s}", "region": "eu"}}',
    "url": "GET https://api.example.com/v1/items?{snake}_token={s}&page=2",
    "header": "X-{title}-Token: {s}",
    "connection": "Server=tcp:db.example.com,1433;Database=app;User ID=app;{title}Token={s};Encrypt=True;",
}
PLACEHOLDERS = [
    "xxxxxxxxxxxxxxxxxxxx",
    "<your-api-key>",
    "EXAMPLE",
    "${API_TOKEN}",
    "changeme",
    "{{ secrets.TOKEN }}",
]


def _files(source: Path) -> dict[str, str]:
    """The rule generators' Go sources, from a checkout or a bare git directory."""
    folder = "cmd/generate/config/rules"
    if (source / folder).is_dir():
        return {p.name: p.read_text() for p in (source / folder).glob("*.go")}
    names = subprocess.run(
        ["git", "-C", str(source), "ls-tree", "--name-only", f"HEAD:{folder}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return {
        name: subprocess.run(
            ["git", "-C", str(source), "show", f"HEAD:{folder}/{name}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for name in names
        if name.endswith(".go") and not name.endswith("_test.go")
    }


def _literals(block: str) -> list[str]:
    found = []
    for raw, quoted in _STRING.findall(block):
        if raw:
            found.append(raw)
        elif quoted:
            try:
                found.append(ast.literal_eval(f'"{quoted}"'))
            except (SyntaxError, ValueError):
                continue
    return [text for text in found if len(text) >= 8]


def published(sources: dict[str, str]) -> dict[str, tuple[list[str], list[str]]]:
    """rule id → (true-positive literals, false-positive literals) from its generator function."""
    examples: dict[str, tuple[list[str], list[str]]] = {}
    for text in sources.values():
        for function in re.split(r"\nfunc ", text):
            ids = _RULE_ID.findall(function)
            if not ids:
                continue
            tps_at, fps_at = function.find("tps"), function.find("fps :=")
            tps = (
                _literals(function[tps_at : fps_at if fps_at > tps_at else len(function)])
                if tps_at >= 0
                else []
            )
            fps = _literals(function[fps_at:]) if fps_at >= 0 else []
            examples.setdefault(ids[0], ([], []))
            examples[ids[0]][0].extend(tps)
            examples[ids[0]][1].extend(fps)
    return examples


def secrets_in(rule: GitleaksRule, text: str) -> list[str]:
    return rule.secrets(text)


def sampled(rule: GitleaksRule, rng: random.Random, tries: int = 1000) -> str | None:
    """A secret that `rule` catches, sampled at random from its own regex (uniform choices, repeats
    of random length), as a real key would look, not a minimal example."""
    parsed = sre_parse.parse(rule.pattern.pattern, rule.pattern.flags)
    for _ in range(tries):
        text = _generate(parsed, rng)
        if rule.keywords and not rule.applies(text):  # gitleaks runs a rule only where its keyword is
            text = f"{rule.keywords[0]} {text}"
        if text.isascii() and "\n" not in text and any(len(s) >= 8 for s in rule.secrets(text)):
            return text
    return None


_ALPHABET = [chr(c) for c in range(33, 127)]


def _generate(parsed: sre_parse.SubPattern | list, rng: random.Random) -> str:
    out = []
    for op, value in parsed:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(value))
        elif name == "NOT_LITERAL":
            out.append(rng.choice([c for c in _ALPHABET if ord(c) != value]))
        elif name == "ANY":
            out.append(rng.choice(_ALPHABET))
        elif name == "IN":
            out.append(rng.choice(_class_chars(value)))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, item = value
            count = rng.randint(low, min(high, low + 24) if high != sre_parse.MAXREPEAT else low + 24)
            out.extend(_generate(item, rng) for _ in range(count))
        elif name == "SUBPATTERN":
            out.append(_generate(value[-1], rng))
        elif name == "BRANCH":
            out.append(_generate(rng.choice(value[1]), rng))
        elif name in ("AT", "ASSERT", "ASSERT_NOT", "GROUPREF"):
            continue
        elif name == "ATOMIC_GROUP":
            out.append(_generate(value, rng))
    return "".join(out)


def _class_chars(items: list) -> list[str]:
    chars: set[str] = set()
    negate = False
    for op, value in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            chars.add(chr(value))
        elif name == "RANGE":
            chars.update(chr(c) for c in range(value[0], min(value[1], 126) + 1))
        elif name == "CATEGORY":
            category = str(value)
            if "DIGIT" in category and "NOT" not in category:
                chars.update("0123456789")
            elif "WORD" in category and "NOT" not in category:
                chars.update(string.ascii_letters + string.digits + "_")
            elif "SPACE" in category and "NOT" not in category:
                chars.add(" ")
            else:
                chars.update(c for c in _ALPHABET if c.isalnum())
    if negate:
        return [c for c in _ALPHABET if c not in chars] or ["x"]
    return sorted(chars) or ["x"]


def _row(family: str, kind: str, context: str, text: str, secrets: list[str]) -> dict:
    return {"family": family, "kind": kind, "context": context, "text": text, "secrets": secrets}


def _plantable(secret: str) -> bool:
    """A value that is a credential on its own: not a toy (`TestSource-Password`, a documentation
    `EXAMPLE`), not an id (digits only), not a fragment that carries quotes or its key."""
    return (
        len(secret) >= 10
        and shannon_entropy(secret) >= 3.0
        and not secret.isdigit()
        and "EXAMPLE" not in secret
        and not re.search(r"[\s%\"'{}]", secret)
        # words only; each word an atomic group, or a long run of letters is split every possible way
        and not re.fullmatch(r"(?>[A-Z]?[a-z]{2,}|[A-Z]{2,})(?:[-_.]?(?>[A-Z]?[a-z]{2,}|[A-Z]{2,}))*", secret)
    )


def _names(keyword: str) -> dict[str, str]:
    word = re.sub(r"[^A-Za-z0-9]+", "_", keyword).strip("_").lower() or "service"
    parts = word.split("_")
    return {
        "k": f"{word.replace('_', ' ')} token",
        "camel": parts[0] + "".join(p.title() for p in parts[1:]),
        "upper": word.upper(),
        "snake": word,
        "title": "-".join(p.title() for p in parts),
    }


def main() -> None:
    if sys.argv[1:2] == ["kingfisher"]:
        return kingfisher_corpus()
    if sys.argv[1:2] == ["replant"]:
        return replant()
    if sys.argv[1:2] != ["gitleaks"] or len(sys.argv) != 3:
        raise SystemExit("usage: build_credential_corpus.py gitleaks GITLEAKS_CHECKOUT | kingfisher")
    source = Path(sys.argv[2])
    examples = published(_files(source))
    rng = random.Random(7)
    rows: list[dict] = []
    covered = 0
    for rule in load_rules():
        tps, fps = examples.get(rule.label, ([], []))
        planted: list[str] = []
        for text in tps:
            secrets = secrets_in(rule, text)
            unmarked = [m.group() for m in rule.pattern.finditer(text)]
            if not secrets and any(looks_fake(m) for m in unmarked):
                # a documentation value (`…EXAMPLE…`, `xxxx`): strict leaves it alone, so it is a negative
                rows.append(_row(rule.label, "negative", "published", text, []))
            if secrets:
                rows.append(_row(rule.label, "positive", "published", text, secrets))
                planted += [s for s in secrets if s not in planted]
        if not planted:
            example = sampled(rule, rng)
            if example:
                planted = secrets_in(rule, example)
                rows.append(_row(rule.label, "positive", "sampled", example, planted))
        if not planted:
            print(f"{rule.label}: no example found", file=sys.stderr)
            continue
        covered += 1
        keyword = _keyword(rule.label)
        # in our contexts, the published secrets that look like one (a toy `TestSource%Password%`, or a
        # group that holds its key too, `ca.pem: LS0t...`, is planted only as published), else a sampled one
        strongest = sorted((s.strip("\"'`") for s in planted), key=shannon_entropy, reverse=True)
        strongest = [s for s in strongest if _plantable(s)][:2]
        if not strongest:
            example = sampled(rule, rng)
            strongest = [
                s.strip("\"'`") for s in (rule.secrets(example) if example else []) if _plantable(s)
            ][:1]
        for secret in strongest:
            for context, template in CONTEXTS.items():
                text = template.format(s=secret, **_names(keyword))
                rows.append(_row(rule.label, "positive", context, text, [secret]))
        for text in fps:
            rows.append(_row(rule.label, "negative", "published", text, []))
    for placeholder in PLACEHOLDERS:
        for context, template in CONTEXTS.items():
            text = template.format(s=placeholder, **_names("api"))
            rows.append(_row("placeholder", "negative", context, text, []))
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text("".join(json.dumps(row) + "\n" for row in rows))
    print(f"{len(rows)} samples, {covered} families with examples -> {OUT}")


def _keyword(label: str) -> str:
    return label.split("-")[0]


KINGFISHER_OUT = OUT.with_name("kingfisher_corpus.jsonl")


def replant() -> None:
    rows = [json.loads(line) for line in OUT.read_text().splitlines()]
    kept = [row for row in rows if row["context"] in ("published", "sampled")]
    planted: dict[str, list[str]] = {}
    for row in rows:
        if row["context"] == "prose":  # every family's planted secrets are in its prose rows
            planted.setdefault(row["family"], []).extend(row["secrets"])
    for family, secrets in planted.items():
        for secret in secrets:
            for context, template in CONTEXTS.items():
                text = template.format(s=secret, **_names(_keyword(family)))
                kept.append(_row(family, "positive", context, text, [secret]))
    for placeholder in PLACEHOLDERS:
        for context, template in CONTEXTS.items():
            text = template.format(s=placeholder, **_names("api"))
            kept.append(_row("placeholder", "negative", context, text, []))
    OUT.write_text("".join(json.dumps(row) + "\n" for row in kept))
    print(f"{len(kept)} samples -> {OUT}")


def _random_like(secret: str, rng: random.Random) -> str:
    """A secret of the same shape: each character a random one of its kind (hex stays hex)."""
    hexadecimal = all(c in string.hexdigits for c in secret)
    out = []
    for char in secret:
        if char.isdigit():
            out.append(rng.choice(string.digits))
        elif hexadecimal and char in string.hexdigits:
            out.append(rng.choice("abcdef" if char.islower() else "ABCDEF"))
        elif char.isascii() and char.islower():
            out.append(rng.choice(string.ascii_lowercase))
        elif char.isascii() and char.isupper():
            out.append(rng.choice(string.ascii_uppercase))
        else:
            out.append(char)
    return "".join(out)


def kingfisher_corpus() -> None:
    from training_pipeline.privacy import kingfisher

    rules = {rule.label: rule for rule in kingfisher.load_rules()}
    rng = random.Random(11)
    rows: list[dict] = []
    unfit: dict[str, int] = {}
    for label, published_examples in kingfisher.examples().items():
        rule = rules[label]
        for example in published_examples:
            match = next(iter(rule.finditer(example)), None)
            if match is None:
                continue
            start, end = rule.captured(match)
            published_secret = example[start:end]
            # all of it random, else a head kept (a prefix the pattern names: `aio_`, `sk-ant-api`); a
            # shape the entropy floor or the global allowlist rejects is drawn again; else as published
            tries = [(keep, draw) for keep in (0, 4, 8, 12, len(published_secret) // 2) for draw in range(6)]
            for keep, _ in [*tries, (len(published_secret), 0)]:
                secret = published_secret[:keep] + _random_like(published_secret[keep:], rng)
                text = example[:start] + secret + example[end:]
                if secret in rule.secrets(text):
                    break
            else:
                continue
            rows.append(_row(label, "positive", "published", text, [secret]))
            if not _plantable(secret):
                continue
            for context, template in CONTEXTS.items():
                planted = template.format(s=secret, **_names(_kingfisher_keyword(label, example, start)))
                if secret in rule.secrets(planted):
                    rows.append(_row(label, "positive", context, planted, [secret]))
                else:
                    unfit[context] = unfit.get(context, 0) + 1
    KINGFISHER_OUT.write_text("".join(json.dumps(row) + "\n" for row in rows))
    families = len({row["family"] for row in rows})
    print(f"{len(rows)} samples of {families} families -> {KINGFISHER_OUT}")
    print(f"contexts whose wording a rule's pattern does not take: {dict(sorted(unfit.items()))}")


def _kingfisher_keyword(label: str, example: str, secret_at: int) -> str:
    """The service's name as the example writes it before the key (`airbrake` in `airbrake secretKey=…`),
    else the label's first word."""
    word = label.split("-")[0]
    found = re.search(re.escape(word), example[:secret_at], re.IGNORECASE)
    return found.group() if found else word


if __name__ == "__main__":
    main()
