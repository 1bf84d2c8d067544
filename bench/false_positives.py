"""How often does the strict privacy profile redact ordinary text? Run on large real corpora.

    python bench/false_positives.py [--documents] [--write] [DIR ...]

Two corpora, each free of real credentials and written by people, so each redaction is a candidate
false positive to read (a few are literal example passwords, which are true positives):

- the Python standard library's sources (the default), line by line: 12 MB of code, docstrings and
  comments;
- `--documents`: the Markdown, reStructuredText and package metadata (each package's README) of the
  packages installed beside this one, 40 lines at a time, so what spans lines is read as it stands
  (tables, directory listings, vCards, mail headers). Every install of the project has them.

Each twice: the credential rules alone (`--personal-data none`: the figure that must stay at zero
but for sample passwords), then the whole strict profile, whose personal-data redactions are listed to
read: most are authors' names and addresses, which are personal data and meant to go. Every changed
line is printed as redacted, then the totals; `--write` puts the totals in bench/README.md.
"""

from __future__ import annotations

import argparse
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path

from readme import machine, write_section

from training_pipeline.privacy.filter import PrivacyFilter

#: lines read as one text in `--documents`: a table or a listing is read whole, as an agent's tool
#: result holds it
CHUNK_LINES = 40
_DOCUMENTS = ("*.md", "*.rst", "METADATA")


def sources(roots: list[Path]) -> list[Path]:
    return [
        p
        for root in roots
        for p in sorted(root.rglob("*.py"))
        if "site-packages" not in p.parts and not any(part.startswith("test") for part in p.parts)
    ]


def documents(roots: list[Path]) -> list[Path]:
    return sorted({p for root in roots for pattern in _DOCUMENTS for p in root.rglob(pattern)})


def texts(files: list[Path], chunk: int) -> Iterator[tuple[Path, str]]:
    """Each file's text, `chunk` lines at a time (one for line by line)."""
    for path in files:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (UnicodeDecodeError, OSError):
            continue
        for start in range(0, len(lines), chunk):
            yield path, "\n".join(lines[start : start + chunk])


def measure(files: list[Path], chunk: int, privacy: PrivacyFilter) -> tuple[str, tuple[int, int]]:
    """Print every line `privacy` changes (as redacted), then the totals. The lines changed, said with
    the kinds of redaction most made, and the corpus's files and characters."""
    lines = chars = changed = 0
    started = time.perf_counter()
    for path, text in texts(files, chunk):
        redacted = privacy.redact(text)
        lines += text.count("\n") + 1
        chars += len(text)
        if redacted == text:
            continue
        before, after = text.split("\n"), redacted.split("\n")
        # the lines pair up unless a redaction took line breaks with it (a private key's block)
        pairs = (
            zip(before, after, strict=True) if len(before) == len(after) else ((None, out) for out in after)
        )
        for line, out in pairs:
            if out != line and (line is not None or out not in before):
                changed += 1
                print(f"{path.name}: {out.strip()[:160]}")
    seconds = time.perf_counter() - started
    made = privacy.stats.redactions.most_common()
    print(f"\n{len(files)} files, {lines:,} lines, {chars / 1e6:.1f} M characters in {seconds:.1f} s")
    print(f"lines changed: {changed}; redactions: {', '.join(f'{label} {n}' for label, n in made) or 'none'}")
    most = ", ".join(f"{label} {count}" for label, count in made[:2]) + (", …" if len(made) > 2 else "")
    return f"{changed} lines" + (f" ({most})" if most else ""), (len(files), chars)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", nargs="*", type=Path, help="folders to read (default: see --documents)")
    parser.add_argument(
        "--documents",
        action="store_true",
        help="the installed packages' Markdown, reST and METADATA, 40 lines at a time",
    )
    parser.add_argument("--write", action="store_true", help="put the totals in bench/README.md")
    args = parser.parse_args()
    if args.documents:
        roots = args.roots or [Path(sysconfig.get_paths()["purelib"])]
        files, chunk, name = documents(roots), CHUNK_LINES, "false_positives_documents"
        corpus = f"Installed packages' documents, {CHUNK_LINES} lines at a time"
    else:
        roots = args.roots or [Path(sysconfig.get_paths()["stdlib"])]
        files, chunk, name = sources(roots), 1, "false_positives"
        corpus = "Standard library sources, line by line"
    totals = []
    for personal_data in ("none", "all"):
        print(f"\n## strict, personal data: {personal_data}\n")
        total, (count, chars) = measure(
            files, chunk, PrivacyFilter("strict", personal_data=personal_data, ner_model="")
        )
        totals.append(total)
    if args.write:
        write_section(
            name,
            f"{corpus} ({count} files, {chars / 1e6:.1f} M characters; {machine()}): credential rules "
            f"change {totals[0]}, all of strict {totals[1]}.",
        )


if __name__ == "__main__":
    main()
