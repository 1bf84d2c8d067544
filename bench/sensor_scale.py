"""The threshold sensor over years of history: a tick must cost what is new, not what is old.

    python bench/sensor_scale.py [DAYS ...]        # default: 30 365 1825

For each history length, a real SQLite instance gets one materialisation per task per day (five tasks),
then the sensor is evaluated: once from an empty cursor (reads everything, once in its life), then
with its cursor and nothing new, then with one new day. The last two must stay flat as history grows.
"""

from __future__ import annotations

import sys
import tempfile
import time
from datetime import date, timedelta

from dagster import AssetKey, AssetMaterialization, DagsterInstance, build_sensor_context

from assets.keys import UNPREFIXED
from assets.partitions import GROUP
from assets.training.assets import training_assets
from assets.training.automation import threshold_sensor, training_job
from resources.training import TrainingSettings
from training_pipeline.datasets.training_tasks import TASKS

SETTINGS = TrainingSettings(trigger_threshold=10**9)  # count, never fire
#: the training threshold sensor, as this repository's code location makes it
SENSOR = threshold_sensor(UNPREFIXED, training_job(UNPREFIXED, training_assets(UNPREFIXED, GROUP)), 60)


def _report(instance: DagsterInstance, day: str) -> None:
    for task in TASKS:
        instance.report_runless_asset_event(
            AssetMaterialization(AssetKey(task), partition=day, metadata={"examples": 10})
        )


def _tick(instance: DagsterInstance, cursor: str | None) -> tuple[float, str | None]:
    context = build_sensor_context(
        instance=instance, cursor=cursor, resources={"training_pipeline_policy": SETTINGS}
    )
    started = time.perf_counter()
    result = SENSOR(context)
    return time.perf_counter() - started, getattr(result, "cursor", None) or context.cursor


def main(histories: list[int]) -> None:
    print(f"{'days':>6} {'events':>7} {'first tick s':>13} {'idle tick s':>12} {'one new day s':>14}")
    for days in histories:
        with tempfile.TemporaryDirectory() as home, DagsterInstance.local_temp(home) as instance:
            start = date(2020, 1, 1)
            for offset in range(days):
                _report(instance, (start + timedelta(days=offset)).isoformat())
            first, cursor = _tick(instance, None)
            idle = min(_tick(instance, cursor)[0] for _ in range(5))
            _report(instance, (start + timedelta(days=days)).isoformat())
            new, _ = _tick(instance, cursor)
            print(f"{days:>6} {days * len(TASKS):>7} {first:>13.3f} {idle:>12.3f} {new:>14.3f}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [30, 365, 1825])
