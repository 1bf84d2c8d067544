"""The Dagster wiring, one sub-package per domain: `datasets` (the daily graph), `training` and `tasks`.

Each domain's `definitions.py` gathers its assets, checks, jobs, schedule or sensor and the resources
only it uses into one `Definitions`; `training_pipeline/definitions.py` merges them. The wiring is thin:
the work is done by the core in `training_pipeline/`, which never imports from here.
"""
