"""training-pipeline: privacy-safe training datasets from LLM agent trajectories, on Dagster."""
