"""Imported by a pool's fork server for workers that make the checks' scanner (`scan.SCANNER_MODULES`):
importing it makes the plugins' gate (`scan.gated_plugins`: loaded as the machine remembers it, without
detect-secrets), so every worker forked from the server starts with it."""

import contextlib

from training_pipeline.privacy.scan import gated_plugins

# a failure here (a fork server stops on anything but an ImportError) fails in each worker instead,
# where the pass reports it
with contextlib.suppress(Exception):
    gated_plugins()
