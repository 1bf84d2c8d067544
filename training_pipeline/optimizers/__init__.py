"""Prompt optimisers (the `native` backend), written as Stage-DSL programs."""
