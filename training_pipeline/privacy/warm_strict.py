"""Imported by a pool's fork server for a pass that filters with `strict` (`PrivacyFilter.preload`):
importing it builds the strict rule set and both of its gates (gitleaks' rules read, each rule's gate
expression, the two Hyperscan databases loaded), so every worker forked from the server starts with
them instead of building them on its first share (0.10-0.14 s of each worker)."""

import contextlib

from training_pipeline.privacy.rules import PROFILES

# a build that fails here (a fork server stops on anything but an ImportError) fails in each worker
# instead, on its first share, where the pass reports it
with contextlib.suppress(Exception):
    PROFILES["strict"].build()

with contextlib.suppress(Exception):
    from training_pipeline.privacy.personal.finder import warm_gate

    warm_gate()
