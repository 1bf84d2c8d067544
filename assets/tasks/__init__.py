"""Task files as Dagster jobs: one op per step, an edge per `depends_on`."""
