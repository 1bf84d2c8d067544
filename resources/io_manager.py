"""The `io_manager` every job here runs with: Dagster's default one (each value pickled in a file under
the instance's storage folder, or `base_dir`), made the first time a step stores or loads a value.

The assets and ops here pass no values (they return `MaterializeResult`s or nothing), yet every run
sets up its IO manager before its first step, and Dagster's default imports `upath` and builds a path
with it to do so: 10 ms of each run's process, on this machine, spent on a manager nothing uses.
"""

from __future__ import annotations

from typing import Any

from dagster import (
    Field,
    InitResourceContext,
    InputContext,
    IOManager,
    OutputContext,
    StringSource,
    io_manager,
)


class _MadeOnFirstUse(IOManager):
    def __init__(self, base_dir: str) -> None:
        self.base_dir = base_dir
        self._made: IOManager | None = None

    def _manager(self) -> IOManager:
        if self._made is None:
            from dagster._core.storage.fs_io_manager import PickledObjectFilesystemIOManager

            self._made = PickledObjectFilesystemIOManager(base_dir=self.base_dir)
        return self._made

    def handle_output(self, context: OutputContext, obj: Any) -> None:
        self._manager().handle_output(context, obj)

    def load_input(self, context: InputContext) -> Any:
        return self._manager().load_input(context)


@io_manager(
    config_schema={"base_dir": Field(StringSource, is_required=False)},
    description="Dagster's filesystem IO manager (values pickled under the instance's storage folder), "
    "made when a step first stores or loads a value.",
)
def filesystem_io_manager(init_context: InitResourceContext) -> IOManager:
    base_dir = init_context.resource_config.get("base_dir") or init_context.instance.storage_directory()  # type: ignore[union-attr]
    return _MadeOnFirstUse(base_dir)
