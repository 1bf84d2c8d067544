"""Each asset linked to the code that defines it, for the UI's "View code" (Dagster's
`with_source_code_references`)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

from dagster import AssetsDefinition, BetaWarning, with_source_code_references

__all__ = ["with_code_references"]


def with_code_references(assets: Sequence[AssetsDefinition]) -> list[AssetsDefinition]:
    """`assets` with their code references. Dagster marks the metadata classes beta and warns each time;
    every process that loads the location (a run's, a daemon's, a user's) would repeat it, so the notice
    is silenced here and nowhere else."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BetaWarning)
        return list(with_source_code_references(list(assets)))
