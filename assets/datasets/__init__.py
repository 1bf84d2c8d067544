"""The daily datasets: one partition is one UTC day, from trajectories to five JSONL datasets."""
