"""Recall and over-redaction of a privacy profile on the credential corpora (`bench/data/`, built by
`build_credential_corpus.py` from what gitleaks and Kingfisher publish with their rules).

    python bench/credential_coverage.py [--profile strict|elizaos] [--traces] [--show N] [--write]

A positive sample counts as caught when none of its secrets is left in the redacted text; a negative
counts as over-redacted when anything in it is redacted. A published false positive of one gitleaks rule
that another rule of gitleaks' set reports is no near miss for the set as a whole: it is counted apart.
Then what the independent re-check (`privacy.scan`: detect-secrets' plugins, its keyword detector
included) still finds in the redacted positives. Per corpus, per context and in all; with `--traces`
each text rides in a traced agent's conversation through `build-datasets` (`through_traces.py`; a
trace's strings are redacted as `strict` whatever the profile); `--write` puts the table in
bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from collections import defaultdict
from datetime import date
from pathlib import Path

from readme import write_section
from through_traces import redact_through_traces

from training_pipeline.privacy.filter import PrivacyFilter
from training_pipeline.privacy.gitleaks import load_rules
from training_pipeline.privacy.scan import SecretScanner

DATA = Path(__file__).with_name("data")
CORPORA = {"gitleaks": DATA / "credential_corpus.jsonl", "kingfisher": DATA / "kingfisher_corpus.jsonl"}


def measure(profile: str, traces: bool = False) -> dict:
    privacy = PrivacyFilter(profile)  # type: ignore[arg-type]
    scanner = SecretScanner()
    gitleaks_rules = load_rules()
    result: dict = {"corpora": {}, "misses": [], "recheck": defaultdict(int)}
    for corpus, path in CORPORA.items():
        contexts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        families: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        samples = [json.loads(line) for line in path.read_text().splitlines()]
        texts = [sample["text"] for sample in samples]
        outs = redact_through_traces(texts, privacy) if traces else [privacy.redact(t) for t in texts]
        for sample, redacted in zip(samples, outs, strict=True):
            counts, family = contexts[sample["context"]], families[sample["family"]]
            if sample["kind"] == "positive":
                counts["positives"] += 1
                family["positives"] += 1
                for secret_type, _ in scanner.find(redacted):
                    result["recheck"][secret_type] += 1
                if any(secret in redacted for secret in sample["secrets"]):
                    counts["leaked"] += 1
                    family["leaked"] += 1
                    result["misses"].append({**sample, "corpus": corpus, "redacted": redacted})
            elif corpus == "gitleaks" and any(rule.secrets(sample["text"]) for rule in gitleaks_rules):
                counts["disputed"] += 1  # another gitleaks rule reports this published negative
            else:
                counts["negatives"] += 1
                if redacted != sample["text"]:
                    counts["over_redacted"] += 1
                    result["misses"].append({**sample, "corpus": corpus, "redacted": redacted})
        result["corpora"][corpus] = {"contexts": contexts, "families": families}
    return result


def table(result: dict, profile: str, traces: bool = False) -> str:
    """Per corpus, with the contexts that leaked named (`contexts` gives every context's figures)."""
    rows = [
        "| corpus | positives | leaked | near-miss negatives | over-redacted | contexts that leaked |",
        "|---|---:|---:|---:|---:|---|",
    ]
    totals: dict[str, int] = defaultdict(int)
    for corpus, data in result["corpora"].items():
        sums: dict[str, int] = defaultdict(int)
        for counts in data["contexts"].values():
            for key in ("positives", "leaked", "negatives", "over_redacted"):
                sums[key] += counts[key]
                totals[key] += counts[key]
        leaked = ", ".join(f"{c} {n['leaked']}" for c, n in sorted(data["contexts"].items()) if n["leaked"])
        rows.append(
            f"| {corpus} | {sums['positives']} | {sums['leaked']} | {sums['negatives']} | "
            f"{sums['over_redacted']} | {leaked or 'none'} |"
        )
    over = totals["over_redacted"] / max(1, totals["negatives"])
    rows.append(
        f"| **all** | **{totals['positives']}** | **{totals['leaked']}** | **{totals['negatives']}** | "
        f"**{totals['over_redacted']} ({over:.1%})** | |"
    )
    families = {
        corpus: (
            sum(1 for f in data["families"].values() if f["positives"]),
            sum(1 for f in data["families"].values() if f["positives"] and not f["leaked"]),
        )
        for corpus, data in result["corpora"].items()
    }
    recall = 1 - totals["leaked"] / max(1, totals["positives"])
    lines = [
        f"`python bench/credential_coverage.py --profile {profile}{' --traces' if traces else ''}` on "
        f"{platform.machine()}, Python "
        f"{sys.version.split()[0]}, {date.today()}: recall {recall:.2%}; families with no leak: "
        + ", ".join(f"{corpus} {ok}/{total}" for corpus, (total, ok) in families.items())
        + "; the re-check's findings left in the redacted positives: "
        + (", ".join(f"{k} {v}" for k, v in sorted(result["recheck"].items())) or "none")
        + ".",
        "",
        *rows,
    ]
    if traces:  # one line: the per-context table is the direct run's, above it
        lines = [
            lines[0].split(": recall")[0]
            + f": leaked {totals['leaked']}/{totals['positives']} (recall {recall:.2%}), near misses "
            f"over-redacted {totals['over_redacted']}/{totals['negatives']} ({over:.1%}); the re-check's "
            "findings left: "
            + (", ".join(f"{k} {v}" for k, v in sorted(result["recheck"].items())) or "none")
            + "."
        ]
    return "\n".join(lines)


def contexts(result: dict) -> str:
    """Every corpus and context: positives, leaked, near-miss negatives, over-redacted."""
    return "\n".join(
        f"  {corpus:<10} {context:<11} "
        + " ".join(f"{n[key]:>5}" for key in ("positives", "leaked", "negatives", "over_redacted"))
        for corpus, data in result["corpora"].items()
        for context, n in sorted(data["contexts"].items())
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", default="strict")
    parser.add_argument("--show", type=int, default=10)
    parser.add_argument("--write", action="store_true", help="put the table in bench/README.md")
    parser.add_argument("--traces", action="store_true", help="each text through a traced conversation")
    args = parser.parse_args()
    result = measure(args.profile, args.traces)
    text = table(result, args.profile, args.traces)
    print(text)
    print(contexts(result))
    for miss in result["misses"][: args.show]:
        print(
            f"  [{miss['corpus']} {miss['kind']} {miss['family']} / {miss['context']}] "
            f"{miss['text'][:140]!r}\n"
            f"      -> {miss['redacted'][:140]!r}"
        )
    if args.write:
        write_section("credential_coverage_traces" if args.traces else "credential_coverage", text)


if __name__ == "__main__":
    main()
