"""training-pipeline: privacy-safe training datasets from LLM agent trajectories, on Dagster."""

from pathlib import Path

#: The bundled sample: a few days of trajectories and their entity directory (shipped in the wheel).
SAMPLE_DATA = Path(__file__).resolve().parent / "sample_data"
SAMPLE_TRAJECTORIES = SAMPLE_DATA / "trajectories"
SAMPLE_ENTITIES = SAMPLE_DATA / "entities.json"
