"""Dagster's own storages on the databases the two `dagster.yaml` files name, configured from the same
environment: to read back what resources/instance_storage/ wrote (tests) and to measure against it
(bench/instances.py)."""

DAGSTER_STORAGE = {
    "sqlite": """storage:
  sqlite:
    base_dir: {env: DAGSTER_HOME}
""",
    "postgres": """storage:
  postgres:
    postgres_db:
      hostname: {env: DAGSTER_PG_HOST}
      port: {env: DAGSTER_PG_PORT}
      db_name: {env: DAGSTER_PG_DB}
      username: {env: DAGSTER_PG_USER}
      password: {env: DAGSTER_PG_PASSWORD}
      scheme: postgresql+psycopg2
""",
}
