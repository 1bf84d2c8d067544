"""What differs across the Dagster releases the package accepts (pyproject.toml: 1.12.2 up to 1.14),
and across the shapes of a run, for a daily check's result.

Dagster 1.13 gave asset checks partitions: a daily check's result is recorded per day. Dagster 1.12's
checks have none; there the daily checks are unpartitioned, each day's evaluation names its day in
its metadata, and the UI shows the latest. Blocking works the same on both: a failed blocking
evaluation of any day fails the step.
"""

from __future__ import annotations

import inspect
from typing import Any

from dagster import AssetCheckEvaluation, AssetCheckKey, AssetCheckResult, AssetCheckSeverity, AssetCheckSpec

__all__ = ["PARTITIONED_CHECKS", "day_check"]

#: whether this Dagster records check results per partition
PARTITIONED_CHECKS = "partitions_def" in inspect.signature(AssetCheckSpec.__new__).parameters


def day_check(
    key: AssetCheckKey, day: str, passed: bool, metadata: dict[str, Any], blocking: bool, one_day: bool
) -> AssetCheckResult | AssetCheckEvaluation:
    """The verdict of check `key` on `day`, failing with ERROR severity.

    In a run of one day (`one_day`: the automation's, a day materialised in the UI), Dagster's
    `AssetCheckResult`, which takes its day from the run and is the step's output for the check; in a
    run of several days (a backfill's single run), an `AssetCheckEvaluation` per day, the one form
    that names its day, which Dagster records but does not count as an output (its log says the
    blocking check "emitted no result": a failed one still fails the step)."""
    verdict: dict[str, Any] = {
        "asset_key": key.asset_key,
        "check_name": key.name,
        "passed": passed,
        "metadata": metadata if PARTITIONED_CHECKS else {"partition": day, **metadata},
        "severity": AssetCheckSeverity.ERROR,
    }
    if one_day:
        return AssetCheckResult(**verdict)
    return AssetCheckEvaluation(
        **verdict, blocking=blocking, **({"partition": day} if PARTITIONED_CHECKS else {})
    )
