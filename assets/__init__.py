"""The Dagster wiring, one sub-package per domain: `datasets` (the daily graph), `training` and `tasks`.

Each domain's `definitions.py` gathers its assets, checks, jobs, sensors and the resources
only it uses into one `Definitions`; `training_pipeline/definitions.py` merges them. The wiring is thin:
the work is done by the core in `training_pipeline/`, which never imports from here.
"""

import warnings

from dagster import PreviewWarning

# The daily and per-task checks are partitioned like their assets, which Dagster marks a preview that
# "may change in patch releases"; the pin to one patch release (pyproject.toml) holds it still, so the
# note is not repeated three times by every process that loads the code location (the demo, each run).
warnings.filterwarnings(
    "ignore", message="Specifying a partitions_def on an AssetCheckSpec", category=PreviewWarning
)
