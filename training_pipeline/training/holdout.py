"""What a weights backend trains on, what the service validates on, and the test split its model is
judged on.

A weights run (OpenAI, Vertex, Tinker, Atropos) changes the model itself, so a verdict on the tuned
model must come from examples it never saw. The window is split by trajectory, in the order the native
optimiser splits it (`examples.split_by_trajectory`): the validation split goes to the service (OpenAI's
`validation_file`, Vertex's `validationDatasetUri`, Atropos' `{validation}`), the test split stays here
for `tuned_evaluation`, which scores the tuned model and its base model on it and asks the promotion
gate. A window too small to spare a test split the gate could read trains whole, and says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from training_pipeline.atomic import atomic_open
from training_pipeline.datasets.training_tasks import ids_path
from training_pipeline.optimizers.examples import Example, Split, split_by_trajectory

__all__ = ["Holdout", "split_window"]

#: below this many examples the window trains whole: a test split of a fifth would be under the
#: gate's ten examples, and the service's own minimums (OpenAI 10, Vertex 16) apply to what is left
MIN_TO_SPLIT = 60


@dataclass(frozen=True)
class Holdout:
    train: Path
    validation: Path | None
    test: Path | None
    sizes: dict[str, int]

    def to_dict(self) -> dict[str, object]:
        return {
            "sizes": self.sizes,
            "validation": str(self.validation) if self.validation else None,
            "test": str(self.test) if self.test else None,
        }


def split_window(
    window: Path,
    out_dir: Path,
    *,
    validation_fraction: float = 0.1,
    test_fraction: float = 0.2,
    max_validation: int = 256,
    max_test: int = 300,
    seed: int = 0,
) -> Holdout:
    """`window`'s lines (grouped by the trajectory its ids file names) as `train.jsonl`,
    `validation.jsonl` and `test.jsonl` in `out_dir` (no test split with `test_fraction` 0). Vertex
    reads at most 256 validation examples."""
    lines = window.read_bytes().splitlines(keepends=True)  # one a row, as the ids file has them
    if len(lines) < MIN_TO_SPLIT:
        return Holdout(window, None, None, {"train": len(lines), "validation": 0, "test": 0})
    groups_file = ids_path(window)
    groups = (
        [str(json.loads(line)) for line in groups_file.read_text(encoding="utf-8").splitlines()]
        if groups_file.is_file()
        else []
    )
    # the split reads only each row's group: the rows themselves are the lines, by index
    rows = [
        Example(str(index), "", "", "", groups[index] if index < len(groups) else f"row-{index}")
        for index in range(len(lines))
    ]
    split = split_by_trajectory(
        rows, validation_fraction, test_fraction, seed, max_validation=max_validation, max_test=max_test
    )
    if test_fraction <= 0:  # nothing will judge the model: what the split set aside trains too
        split = Split([*split.train, *split.test], split.validation, [])
    paths = {}
    for name, side in (("train", split.train), ("validation", split.validation), ("test", split.test)):
        paths[name] = out_dir / f"{name}.jsonl"
        with atomic_open(paths[name], "wb") as handle:
            for row in side:
                handle.write(lines[int(row.id)])
    return Holdout(
        paths["train"],
        paths["validation"] if split.validation else None,
        paths["test"] if split.test else None,
        split.sizes,
    )
