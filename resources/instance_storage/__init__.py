"""The instances' storage that `dagster.yaml` (SQLite) and `deploy/dagster.yaml` (PostgreSQL) name:
Dagster's own storages, same tables, with each process keeping its database connections open; and
their compute logs, Dagster's local files mirrored by a thread (`compute_logs.py`).

Not resources: the instance loads them (webserver, daemon, every run's process) before any code
location. Dagster's storages open a connection for every statement outside the webserver, and a day's
run stores ~94 events, several statements each: on this machine that was ~1.2 s of a small day's 3 s
on SQLite and more on PostgreSQL. Each module here is imported only by the instance that names it, so
the embedded instance never needs the `deploy` extra.
"""
