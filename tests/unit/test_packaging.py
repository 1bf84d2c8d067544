"""What `pip install` (not editable) would ship: every package, the sample data, the console script."""

from __future__ import annotations

import tomllib

from tests.helpers import REPO

ROOT = REPO


def test_every_package_folder_is_listed_for_the_wheel() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapping = config["package-dir"]
    on_disk = set()
    for name, folder in mapping.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder).parts
            on_disk.add(".".join((name, *relative)))
    assert set(config["packages"]) == on_disk


def test_sample_data_ships_with_the_package() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    patterns = config["training_pipeline"]
    shipped = {p for pattern in patterns for p in (ROOT / "training_pipeline").glob(pattern)}
    assert {p.name for p in shipped} >= {
        "entities.json",
        "2026-11-23.jsonl",
        "2026-11-24.jsonl",
        "2026-11-25.jsonl",
    }
