"""Every asset key of the graph, made from one prefix: no code path names a key by string.

A user adding the integration to a project that already has an asset named `response` gives it a
`key_prefix` (the Component's, or `build_definitions(..., key_prefix=...)`), and every asset, check and
dependency follows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dagster import AssetKey

from training_pipeline.datasets.training_tasks import TASKS, Task

__all__ = ["UNPREFIXED", "Keys"]


@dataclass(frozen=True)
class Keys:
    prefix: tuple[str, ...] = ()

    @classmethod
    def of(cls, prefix: str | Sequence[str] | None) -> Keys:
        """`prefix` as Dagster spells one: a string, a list of path parts, or nothing."""
        if not prefix:
            return cls()
        return cls((prefix,) if isinstance(prefix, str) else tuple(prefix))

    def key(self, name: str) -> AssetKey:
        return AssetKey([*self.prefix, name])

    @property
    def trajectories(self) -> AssetKey:
        return self.key("trajectories")

    @property
    def filtered(self) -> AssetKey:
        return self.key("filtered_trajectories")

    def dataset(self, task: Task) -> AssetKey:
        return self.key(task)

    @property
    def datasets(self) -> list[AssetKey]:
        return [self.dataset(task) for task in TASKS]

    def task_of(self, key: AssetKey) -> Task | None:
        """The dataset task `key` names, or None."""
        return next((task for task in TASKS if self.dataset(task) == key), None)

    @property
    def trace_datasets(self) -> AssetKey:
        return self.key("trace_datasets")

    @property
    def shared_datasets(self) -> AssetKey:
        return self.key("shared_datasets")

    @property
    def training_run(self) -> AssetKey:
        return self.key("training_run")

    @property
    def tuned_model(self) -> AssetKey:
        return self.key("tuned_model")

    @property
    def optimized_prompt(self) -> AssetKey:
        return self.key("optimized_prompt")

    @property
    def prompt_evaluation(self) -> AssetKey:
        return self.key("prompt_evaluation")

    @staticmethod
    def op(key: AssetKey) -> str:
        """The op of the asset `key` (what run config names under `ops`): Dagster joins the path by
        `__`."""
        return "__".join(key.path)

    def name(self, name: str) -> str:
        """A job, sensor or schedule name that cannot clash with a user's: the prefix joined by `_`."""
        return "_".join([*self.prefix, name])


#: the keys of this repository's own code location
UNPREFIXED = Keys()
