"""Recall and over-redaction of a privacy profile on the credential corpus (`bench/data/
credential_corpus.jsonl`, built by `build_credential_corpus.py` from gitleaks' published examples).

    python bench/credential_coverage.py [--profile strict|elizaos] [--show N]

A positive sample counts as caught when none of its secrets is left in the redacted text; a negative
counts as over-redacted when anything in it is redacted. A published false positive of one rule that
another rule of gitleaks' set reports is no near miss for the set as a whole: it is counted apart.
Per family, then in all.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.settings import default_settings

from training_pipeline.privacy.filter import PrivacyFilter
from training_pipeline.privacy.gitleaks import load_rules

CORPUS = Path(__file__).with_name("data") / "credential_corpus.jsonl"
#: detect-secrets' entropy detectors fire on any long random-looking run, our placeholders included
_NOISE = {"Base64 High Entropy String", "Hex High Entropy String"}


def measure(profile: str) -> dict:
    privacy = PrivacyFilter(profile)  # type: ignore[arg-type]
    gitleaks_rules = load_rules()
    leftovers: dict[str, int] = defaultdict(int)
    with default_settings():
        plugins = [cls() for cls in get_mapping_from_secret_type_to_class().values()]
    families: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    misses: list[dict] = []
    for line in CORPUS.read_text().splitlines():
        sample = json.loads(line)
        redacted = privacy.redact(sample["text"])
        counts = families[sample["family"]]
        if sample["kind"] == "positive":
            counts["positives"] += 1
            leaked = [s for s in sample["secrets"] if s in redacted]
            # what detect-secrets (every plugin, its keyword detector included) still finds afterwards
            for line in redacted.splitlines():
                for plugin in plugins:
                    if plugin.secret_type not in _NOISE and list(plugin.analyze_string(line)):
                        leftovers[plugin.secret_type] += 1
            if leaked:
                counts["leaked"] += 1
                misses.append({**sample, "redacted": redacted})
        elif any(rule.secrets(sample["text"]) for rule in gitleaks_rules):
            # published as a false positive of one rule, but another rule of the set reports it: a
            # finding for gitleaks as a whole, so not a near miss; counted apart
            counts["disputed"] += 1
            counts["disputed_redacted"] += redacted != sample["text"]
        else:
            counts["negatives"] += 1
            if redacted != sample["text"]:
                counts["over_redacted"] += 1
                misses.append({**sample, "redacted": redacted})
    return {"families": families, "misses": misses, "detect_secrets_left": dict(leftovers)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", default="strict")
    parser.add_argument("--show", type=int, default=10)
    args = parser.parse_args()
    result = measure(args.profile)
    families = result["families"]
    positives = sum(f["positives"] for f in families.values())
    leaked = sum(f["leaked"] for f in families.values())
    negatives = sum(f["negatives"] for f in families.values())
    over = sum(f["over_redacted"] for f in families.values())
    disputed = sum(f["disputed"] for f in families.values())
    disputed_redacted = sum(f["disputed_redacted"] for f in families.values())
    with_positives = [name for name, f in families.items() if f["positives"]]
    leaking = sorted(name for name in with_positives if families[name]["leaked"])
    by_context: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for miss in result["misses"]:
        if miss["kind"] == "positive":
            by_context[miss["context"]][0] += 1
    print(f"profile {args.profile}: {len(with_positives)} families, {positives} positive samples")
    print(
        f"recall: {positives - leaked}/{positives} samples ({100 * (positives - leaked) / positives:.1f}%), "
        f"{len(with_positives) - len(leaking)}/{len(with_positives)} families with no leak"
    )
    print(f"over-redaction: {over}/{negatives} near-miss negatives ({100 * over / max(1, negatives):.1f}%)")
    print(f"published negatives another gitleaks rule reports: {disputed}, redacted: {disputed_redacted}")
    if leaking:
        print(
            "families that leak (leaked/planted):",
            ", ".join(f"{n} {families[n]['leaked']}/{families[n]['positives']}" for n in leaking),
        )
    print("detect-secrets findings left in the redacted positives:", result["detect_secrets_left"] or "none")
    print("leaks by context:", dict(sorted((k, v[0]) for k, v in by_context.items())))
    over_families = sorted(n for n, f in families.items() if f["over_redacted"])
    if over_families:
        print(
            "over-redacted by family:",
            ", ".join(
                f"{n} {families[n]['over_redacted']}/{families[n]['negatives']}" for n in over_families
            ),
        )
    for miss in result["misses"][: args.show]:
        print(
            f"  [{miss['kind']} {miss['family']} / {miss['context']}] {miss['text'][:140]!r}\n"
            f"      -> {miss['redacted'][:140]!r}"
        )


if __name__ == "__main__":
    main()
