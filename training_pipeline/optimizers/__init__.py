"""Prompt optimisers (the `native` backend), written as Stage-DSL programs.

What an optimiser author needs is exported here: the labelled examples and their split by
trajectory (`examples`), the scorers and the best-constant reference a candidate must beat
(`scoring`), and an optimiser's configuration and result (`programs`); `PROGRAMS` maps each
optimiser's name to its program.
"""

from training_pipeline.optimizers.examples import Example, load_examples, split_by_trajectory
from training_pipeline.optimizers.programs import (
    OPTIMIZERS,
    PROGRAMS,
    OptimisationResult,
    OptimiserConfig,
    evaluate,
    evaluate_each,
)
from training_pipeline.optimizers.scoring import SCORERS, Reference, best_constant, scorer_named

__all__ = [
    "OPTIMIZERS",
    "PROGRAMS",
    "SCORERS",
    "Example",
    "OptimisationResult",
    "OptimiserConfig",
    "Reference",
    "best_constant",
    "evaluate",
    "evaluate_each",
    "load_examples",
    "scorer_named",
    "split_by_trajectory",
]
