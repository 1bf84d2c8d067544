"""The README is a newcomer's first hour: short, every command in it works as it stands (each CLI line
parses with the real parser, each `make` target exists), and every link in it and in docs/ leads
somewhere."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.helpers import REPO
from training_pipeline.cli import parser

README = REPO / "README.md"
_BLOCK = re.compile(r"```sh\n(.*?)```", re.DOTALL)


def _commands() -> list[str]:
    lines = []
    for block in _BLOCK.findall(README.read_text()):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            if line:
                lines.append(line)
    return lines


def test_the_readme_is_short() -> None:
    assert len(README.read_bytes()) < 10_000


@pytest.mark.parametrize("line", [c for c in _commands() if "training-pipeline" in c])
def test_every_cli_line_parses_as_it_stands(line: str) -> None:
    words = shlex.split(line)
    words = words[next(i for i, w in enumerate(words) if w.endswith("training-pipeline")) + 1 :]
    args = parser().parse_args(words)
    assert callable(args.run)


def test_every_make_target_exists() -> None:
    targets = set(re.findall(r"(?m)^([a-z][a-z-]*):", (REPO / "Makefile").read_text()))
    used = {c.split()[c.split().index("make") + 1] for c in _commands() if "make " in c}
    assert used and used <= targets


@pytest.mark.parametrize("page", [README, *sorted((REPO / "docs").glob("*.md"))], ids=lambda p: p.name)
def test_every_link_leads_somewhere(page: Path) -> None:
    links = re.findall(r"\]\(([^)#\s]+)[^)]*\)", page.read_text())
    missing = [link for link in links if "://" not in link and not (page.parent / link).exists()]
    assert missing == []
