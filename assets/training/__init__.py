"""Training: one run per task (the partition), on the latest days of its dataset."""
