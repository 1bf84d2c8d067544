"""Step type → class, from three sources in order: the built-ins, the `training_pipeline.task_steps`
entry points of installed packages, and `[task_steps] impls` in the config file the deployment names
(`TRAINING_PIPELINE_CONFIG`). No file is read because it happens to be in the working directory: a
`training_pipeline.toml` left in a folder a user runs the CLI from could otherwise import code into
the pipeline's process.

A later source cannot replace an earlier type: every clash is an error naming both origins. Task files
only name types, so loading one never imports anything that is not registered here.
"""

from __future__ import annotations

import importlib
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path

from training_pipeline.settings import settings
from training_pipeline.tasks.step import TaskStep

ENTRY_POINT_GROUP = "training_pipeline.task_steps"


class RegistryError(ValueError):
    pass


@dataclass
class StepRegistry:
    types: dict[str, type[TaskStep]] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)

    def get(self, step_type: str) -> type[TaskStep] | None:
        return self.types.get(step_type)

    def register(self, cls: object, origin: str, expected_type: str | None = None) -> None:
        if not (isinstance(cls, type) and issubclass(cls, TaskStep)):
            raise RegistryError(f"{origin}: {cls!r} is not a TaskStep subclass")
        step_type = getattr(cls, "type", None)
        if not isinstance(step_type, str) or not step_type:
            raise RegistryError(f"{origin}: {cls.__qualname__} has no `type` class attribute")
        if expected_type is not None and step_type != expected_type:
            raise RegistryError(
                f"{origin}: the entry point is named {expected_type!r} but the class's type is {step_type!r}"
            )
        if step_type in self.types:
            raise RegistryError(
                f"step type {step_type!r} from {origin} is already registered by {self.origins[step_type]}"
            )
        self.types[step_type] = cls
        self.origins[step_type] = origin


def builtin_steps() -> Iterable[type[TaskStep]]:
    from training_pipeline.tasks.steps import BUILTIN_STEPS

    return BUILTIN_STEPS


def config_impls(config_file: Path) -> list[str]:
    if not config_file.is_file():
        raise RegistryError(f"{config_file}: TRAINING_PIPELINE_CONFIG names a file that does not exist")
    try:
        config = tomllib.loads(config_file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise RegistryError(f"{config_file}: {err}") from err
    impls = config.get("task_steps", {}).get("impls", [])
    if not isinstance(impls, list) or not all(isinstance(item, str) for item in impls):
        raise RegistryError(f'{config_file}: [task_steps] impls must be a list of "module:Class" strings')
    return impls


def _import(reference: str, origin: str) -> object:
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise RegistryError(f'{origin}: {reference!r} is not of the form "module:Class"')
    try:
        target: object = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as err:
        raise RegistryError(f"{origin}: cannot import {reference!r}: {err}") from err
    return target


def build_registry(config_file: Path | None = None) -> StepRegistry:
    registry = StepRegistry()
    for cls in builtin_steps():
        registry.register(cls, "the built-in steps")
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: (p.name, p.value)):
        distribution = point.dist.name if point.dist else "an unknown distribution"
        origin = f"entry point {point.name} = {point.value!r} of {distribution}"
        try:
            cls = point.load()
        except Exception as err:
            raise RegistryError(f"{origin}: cannot load: {err}") from err
        registry.register(cls, origin, expected_type=point.name)
    named = config_file or settings().config
    if not named:
        return registry
    config_file = Path(named)
    for reference in config_impls(config_file):
        origin = f"[task_steps] impls {reference!r} in {config_file}"
        registry.register(_import(reference, origin), origin)
    return registry
