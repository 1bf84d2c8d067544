"""Dagster resources: where trajectories come from, who is behind a handle, how strict the filter is,
and where files go. Secrets arrive only through `EnvVar`."""
