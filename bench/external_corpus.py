"""Recall on a corpus no one here wrote: TruffleHog's detector tests (read from a checkout, never
copied here: TruffleHog is AGPL-3.0), the positives of each detector's pattern test.

    python bench/external_corpus.py TRUFFLEHOG_CHECKOUT [--show N]

Each test case of `pkg/detectors/*/*_test.go` (integration tests aside) with an `input` and a non-empty
`want` is a sample; its secrets are the wanted strings the input holds as they are (a detector that
reports an id and a key joined is counted by the parts it finds in the input). A sample leaks when one
of them is still in the strict profile's output. The input is taken as TruffleHog's tests write it
(logs, code, config files); per service and in all.
"""

from __future__ import annotations

import argparse
import ast
import re
from collections import defaultdict
from pathlib import Path

from training_pipeline.privacy.filter import PrivacyFilter

_CASE = re.compile(r"\binput:\s*(`[^`]*`|\"(?:\\.|[^\"\\\n])*\")(?P<rest>.*?)(?=\binput:|\Z)", re.DOTALL)
_WANT = re.compile(r"\bwant:\s*\[\]string\{(?P<items>[^}]*)\}", re.DOTALL)
_STRING = re.compile(r"`([^`]*)`|\"((?:\\.|[^\"\\\n])*)\"")


def _go_string(literal: str) -> str:
    if literal.startswith("`"):
        return literal[1:-1]
    try:
        return ast.literal_eval(literal)
    except (SyntaxError, ValueError):
        return literal[1:-1]


def samples(checkout: Path) -> list[tuple[str, str, list[str]]]:
    found = []
    for path in sorted((checkout / "pkg" / "detectors").rglob("*_test.go")):
        if "integration" in path.name:
            continue
        for case in _CASE.finditer(path.read_text(encoding="utf-8", errors="replace")):
            want = _WANT.search(case.group("rest"))
            if want is None:
                continue
            text = _go_string(case.group(1))
            wanted = [
                raw or _go_string(f'"{quoted}"') for raw, quoted in _STRING.findall(want.group("items"))
            ]
            secrets = [w for w in wanted if len(w) >= 8 and w in text]
            if secrets:
                found.append((path.parent.name, text, secrets))
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--show", type=int, default=10)
    args = parser.parse_args()
    privacy = PrivacyFilter("strict")
    services: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    misses = []
    for service, text, secrets in samples(args.checkout):
        out = privacy.redact(text)
        leaked = [s for s in secrets if s in out]
        services[service][0] += 1
        if leaked:
            services[service][1] += 1
            misses.append((service, text, out, leaked))
    total = sum(n for n, _ in services.values())
    leaks = sum(m for _, m in services.values())
    leaking = sum(1 for _, m in services.values() if m)
    print(
        f"{total} samples of {len(services)} services: {leaks} leak ({leaks / max(1, total):.1%}); "
        f"{leaking} services leak at least one"
    )
    for service, _text, out, leaked in misses[: args.show]:
        at = out.find(leaked[0])
        print(f"  [{service}] ...{out[max(0, at - 80) : at + len(leaked[0]) + 20]!r}")


if __name__ == "__main__":
    main()
