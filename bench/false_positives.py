"""How often does the strict privacy profile redact ordinary text? Run on a large real corpus.

    python bench/false_positives.py [DIR ...]   (default: the Python standard library's sources)

Prints every line the filter changed, then the totals. The standard library is 12 MB of code,
docstrings and comments, written by people and free of real credentials, so each redaction is a
candidate false positive to read (a few are literal example passwords, which are true positives).

Twice: the credential rules alone (`--personal-data none`: the figure that must stay at zero), then the
whole strict profile, whose personal-data redactions are listed to read: most are the authors'
email addresses in the headers, which are personal data and meant to go.
"""

from __future__ import annotations

import sys
import sysconfig
import time
from pathlib import Path

from training_pipeline.privacy.filter import PrivacyFilter


def main(roots: list[Path]) -> None:
    for personal_data in ("none", "all"):
        print(f"\n## strict, personal data: {personal_data}\n")
        measure(roots, PrivacyFilter("strict", personal_data=personal_data, ner_model=""))


def measure(roots: list[Path], privacy: PrivacyFilter) -> None:
    files = [
        p
        for root in roots
        for p in sorted(root.rglob("*.py"))
        if "site-packages" not in p.parts and not any(part.startswith("test") for part in p.parts)
    ]
    lines = chars = changed = 0
    started = time.perf_counter()
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for line in text.splitlines():
            lines += 1
            chars += len(line)
            if privacy.redact(line) != line:
                changed += 1
                print(f"{path.relative_to(path.parents[len(path.parents) - 1])}: {line.strip()[:160]}")
    seconds = time.perf_counter() - started
    print(f"\n{len(files)} files, {lines:,} lines, {chars / 1e6:.1f} M characters in {seconds:.1f} s")
    print(
        f"lines changed: {changed} ({changed / max(lines, 1):.5%}); redactions by rule: "
        f"{dict(privacy.stats.redactions)}"
    )


if __name__ == "__main__":
    main([Path(a) for a in sys.argv[1:]] or [Path(sysconfig.get_paths()["stdlib"])])
