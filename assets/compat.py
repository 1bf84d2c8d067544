"""What differs across the Dagster releases the package accepts (pyproject.toml: 1.12.2 up to 1.14).

Dagster 1.13 gave asset checks partitions: a daily check's result is recorded per day. Dagster 1.12's
checks have none; there the daily checks are unpartitioned, each day's evaluation names its day in
its metadata, and the UI shows the latest. Blocking works the same on both: a failed blocking
evaluation of any day fails the step.
"""

from __future__ import annotations

import inspect

from dagster import AssetCheckSpec

__all__ = ["PARTITIONED_CHECKS"]

#: whether this Dagster records check results per partition
PARTITIONED_CHECKS = "partitions_def" in inspect.signature(AssetCheckSpec.__new__).parameters
