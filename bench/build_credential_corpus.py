"""Builds `bench/data/credential_corpus.jsonl`, the corpus `credential_coverage.py` measures recall and
over-redaction on, from what gitleaks publishes with its rules: the true and false positives in each
rule's generator (`cmd/generate/config/rules/*.go`), read from a gitleaks checkout.

    python bench/build_credential_corpus.py GITLEAKS_GIT_DIR_OR_CHECKOUT

For every rule it keeps the published examples as they are (`published` context), takes the secret
each one carries (what the rule alone marks, with gitleaks' secret-group and entropy semantics), and
plants that secret in seven contexts of our own: prose, an assignment in code, an env line, YAML, JSON,
a URL query string and an HTTP header, each named after the rule's keyword. Rules whose generator only
makes random examples get secrets sampled from the rule's own regex (seeded, so the corpus is stable).
Negatives are the published false positives, plus placeholders in the same seven contexts.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

from training_pipeline.privacy.gitleaks import GitleaksRule, load_rules

OUT = Path(__file__).with_name("data") / "credential_corpus.jsonl"
_STRING = re.compile(r'`([^`]*)`|"((?:\\.|[^"\\\n])*)"')
_RULE_ID = re.compile(r'RuleID:\s*"([^"]+)"')

CONTEXTS = {
    "prose": "Here is the {k} you asked for: {s} (keep it to yourself).",
    "assignment": '{camel}Token = "{s}"',
    "env": "export {upper}_TOKEN={s}",
    "yaml": "{snake}_token: {s}",
    "json": '{{"{snake}_token": "{s}", "region": "eu"}}',
    "url": "GET https://api.example.com/v1/items?{snake}_token={s}&page=2",
    "header": "X-{title}-Token: {s}",
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


def sampled(rule: GitleaksRule, tries: int = 300) -> str | None:
    """A secret that `rule` catches, sampled from its own regex."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    pattern = re.sub(r"\(\?<!\\w[^)]*\)", "", rule.pattern.pattern)  # our literal-first lookbehinds
    found: list[str] = []

    @settings(max_examples=tries, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(st.from_regex(re.compile(pattern, rule.pattern.flags), fullmatch=True))
    def probe(text: str) -> None:
        if not found and text.isascii() and "\n" not in text:
            secrets = secrets_in(rule, text)
            if secrets and len(secrets[0]) >= 8:
                found.append(text)

    try:
        probe()
    except Exception:
        return None
    return found[0] if found else None


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
    source = Path(sys.argv[1])
    examples = published(_files(source))
    rows: list[dict] = []
    covered = 0
    for rule in load_rules():
        tps, fps = examples.get(rule.label, ([], []))
        planted: list[str] = []
        for text in tps:
            secrets = secrets_in(rule, text)
            if secrets:
                rows.append(
                    {
                        "family": rule.label,
                        "kind": "positive",
                        "context": "published",
                        "text": text,
                        "secrets": secrets,
                    }
                )
                planted += [s for s in secrets if s not in planted]
        if not planted:
            example = sampled(rule)
            if example:
                planted = secrets_in(rule, example)
                rows.append(
                    {
                        "family": rule.label,
                        "kind": "positive",
                        "context": "sampled",
                        "text": example,
                        "secrets": planted,
                    }
                )
        if not planted:
            print(f"{rule.label}: no example found", file=sys.stderr)
            continue
        covered += 1
        keyword = _keyword(rule.label)
        for secret in planted[:2]:
            if "\n" in secret:
                continue
            for context, template in CONTEXTS.items():
                text = template.format(s=secret, **_names(keyword))
                rows.append(
                    {
                        "family": rule.label,
                        "kind": "positive",
                        "context": context,
                        "text": text,
                        "secrets": [secret],
                    }
                )
        for text in fps:
            rows.append(
                {
                    "family": rule.label,
                    "kind": "negative",
                    "context": "published",
                    "text": text,
                    "secrets": [],
                }
            )
    for placeholder in PLACEHOLDERS:
        for context, template in CONTEXTS.items():
            text = template.format(s=placeholder, **_names("api"))
            rows.append(
                {"family": "placeholder", "kind": "negative", "context": context, "text": text, "secrets": []}
            )
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text("".join(json.dumps(row) + "\n" for row in rows))
    print(f"{len(rows)} samples, {covered} families with examples -> {OUT}")


def _keyword(label: str) -> str:
    return label.split("-")[0]


if __name__ == "__main__":
    main()
