"""How much personal data the strict profile redacts, per kind and context, and how much it over-redacts.

    python bench/personal_coverage.py [--traces] [--write] [--show-leaks N]

Reads `bench/data/personal_corpus.jsonl` (`build_personal_corpus.py`): a record leaks when any of its
values is still in the text after `PrivacyFilter("strict").redact`, and a near miss is over-redacted
when any of the strings it must keep was changed. With `--traces` each text rides in a traced agent's
conversation through `build-datasets` instead (`through_traces.py`). `--write` puts the table in
bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections import Counter
from pathlib import Path

from readme import write_section
from through_traces import SLOTS, redact_through_traces

from training_pipeline.privacy.filter import PrivacyFilter

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "bench" / "data" / "personal_corpus.jsonl"


def measure(corpus: Path = CORPUS, traces: bool = False) -> dict[str, object]:
    """Leaks (record kind, context, locale, text) and counts per kind and context."""
    privacy = PrivacyFilter("strict", None, (), personal_data="all", ner_model="")
    records = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    started = time.perf_counter()
    if traces:
        outs = redact_through_traces([record["text"] for record in records], privacy)
    else:
        outs = [privacy.redact(record["text"]) for record in records]
    totals: Counter[tuple[str, str]] = Counter()
    caught: Counter[tuple[str, str]] = Counter()
    leaks: list[dict[str, object]] = []
    near_total: Counter[str] = Counter()
    near_over: Counter[str] = Counter()
    over: list[dict[str, object]] = []
    for record, out in zip(records, outs, strict=True):
        kind = record["kind"]
        if kind.startswith("near-miss:"):
            name = kind.split(":", 1)[1]
            near_total[name] += 1
            if any(keep not in out for keep in record["keep"]):
                near_over[name] += 1
                over.append({**record, "out": out})
            continue
        key = (kind, record["context"])
        totals[key] += 1
        if any(value in out for value in record["values"]):
            leaks.append({**record, "out": out})
        else:
            caught[key] += 1
    return {
        "totals": totals,
        "caught": caught,
        "leaks": leaks,
        "near_total": near_total,
        "near_over": near_over,
        "over": over,
        "seconds": time.perf_counter() - started,
    }


def table(result: dict[str, object]) -> str:
    """The kinds redacted in every context on one line, a row for each other kind (the contexts any of
    its values leaked in), and the near misses on one line."""
    totals: Counter = result["totals"]  # type: ignore[assignment]
    caught: Counter = result["caught"]  # type: ignore[assignment]
    contexts = sorted({context for _, context in totals})
    whole, rows = [], []
    for kind in sorted({kind for kind, _ in totals}):
        got = sum(caught[(kind, c)] for c in contexts)
        total = sum(totals[(kind, c)] for c in contexts)
        leaked = [c for c in contexts if caught[(kind, c)] < totals[(kind, c)]]
        if leaked:
            rows.append(f"| {kind} | {got}/{total} | {', '.join(leaked)} |")
        else:
            whole.append(f"{kind} {got}/{total}")
    lines = [f"Redacted in every context ({', '.join(contexts)}): {', '.join(whole) or 'none'}."]
    if rows:
        lines += ["", "| kind | redacted | contexts that leaked |", "|---|---:|---|", *rows]
    near_total: Counter = result["near_total"]  # type: ignore[assignment]
    near_over: Counter = result["near_over"]  # type: ignore[assignment]
    all_near = sum(near_total.values())
    all_over = sum(near_over.values())
    each = ", ".join(
        f"{name} {near_over[name]}/{near_total[name]}" for name in sorted(near_total) if near_over[name]
    )
    lines += [
        "",
        f"Near misses over-redacted: {all_over}/{all_near} ({100 * all_over / max(all_near, 1):.1f}%) of "
        f"{', '.join(sorted(near_total))}" + (f"; {each}." if each else "."),
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="put the table in bench/README.md")
    parser.add_argument("--show-leaks", type=int, default=0, metavar="N")
    parser.add_argument("--traces", action="store_true", help="each text through a traced conversation")
    args = parser.parse_args()
    result = measure(traces=args.traces)
    body = table(result)
    leaks: list = result["leaks"]  # type: ignore[assignment]
    over: list = result["over"]  # type: ignore[assignment]
    total = sum(result["totals"].values())  # type: ignore[union-attr]
    way = f"Through OpenTelemetry traces ({', '.join(SLOTS)}, in turn): " if args.traces else ""
    summary = (
        way + f"{total - len(leaks)}/{total} records with personal data fully redacted ({len(leaks)} leaks); "
        f"near misses over-redacted: {len(over)}; {result['seconds']:.1f} s on {platform.machine()}, "
        f"Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}."
    )
    print(body)
    print(summary)
    for leak in leaks[: args.show_leaks]:
        print("LEAK", leak["kind"], leak["context"], leak["locale"], repr(leak["out"])[:300])
    for miss in over[: args.show_leaks]:
        print("OVER", miss["kind"], repr(miss["out"])[:300])
    if args.write and args.traces:  # the per-kind table is the one above; here, what differs
        write_section("personal_coverage_traces", summary)
    elif args.write:
        write_section("personal_coverage", f"{summary}\n\n{body}")


if __name__ == "__main__":
    main()
