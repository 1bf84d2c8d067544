"""How a project's own assets take the pipeline's layers as inputs.

The daily assets write their files themselves (one pass makes all three layers); this IO manager only
loads them for a downstream asset, as pyarrow Tables:

- `trajectories`, `filtered_trajectories`: the day's Parquet file (columns `trajectory_id`, `origin`,
  `raw`, ...; `raw` is the trajectory's JSON as stored, credentials already redacted);
- a dataset (`response`, ...): its JSONL file, one row per example, column `messages` (a list of
  `{role, content}`); an empty day is an empty table with that column.

One partition gives a Table; several (a downstream asset that is not daily, or a range) give a dict
from day to Table, as Dagster's own IO managers do. `handle_output` stores nothing: the assets' files
are already written when their step ends.
"""

from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
from dagster import ConfigurableIOManager, InputContext, OutputContext

from resources.storage import DataStore
from training_pipeline.datasets.training_tasks import TASK_FILE_NAMES, TASKS

__all__ = ["LAYERS_IO_MANAGER", "LayersIOManager"]

#: the resource key the daily layers name as their IO manager
LAYERS_IO_MANAGER = "training_pipeline_layers_io_manager"

_DATASET = pa.schema(
    [pa.field("messages", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())])))]
)


class LayersIOManager(ConfigurableIOManager):
    """Loads a daily layer of the pipeline (the last part of its asset key names it) from `store`."""

    store: DataStore

    def handle_output(self, context: OutputContext, obj: Any) -> None:
        return None  # the asset wrote its files; nothing is passed between steps

    def load_input(self, context: InputContext) -> pa.Table | dict[str, pa.Table]:
        layer = context.asset_key.path[-1]
        days = list(context.asset_partition_keys) if context.has_asset_partitions else []
        if not days:
            raise ValueError(f"{context.asset_key.to_user_string()} is daily: load it for one or more days")
        try:
            tables = {day: self._read(layer, day) for day in days}
        except FileNotFoundError as err:
            name = context.asset_key.to_user_string()
            raise ValueError(
                f"{name} is not materialised for a day asked for ({err.filename} is missing)"
            ) from None
        return tables[days[0]] if len(days) == 1 else tables

    def _read(self, layer: str, day: str) -> pa.Table:
        if layer == "trajectories":
            return pq.read_table(self.store.trajectories(day))
        if layer == "filtered_trajectories":
            return pq.read_table(self.store.filtered(day))
        if layer in TASKS:
            path = Path(self.store.datasets(day)) / TASK_FILE_NAMES[layer]  # type: ignore[index]
            with path.open("rb") as lines:
                return pa.Table.from_pylist([orjson.loads(line) for line in lines], schema=_DATASET)
        raise ValueError(f"{layer} is not a layer this IO manager loads")
