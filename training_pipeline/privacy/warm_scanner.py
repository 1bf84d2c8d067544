"""Imported by a pool's fork server for workers that make the checks' scanner (`scan.SCANNER_MODULES`):
importing it imports detect-secrets and its plugin classes (their patterns compiled), so every worker
forked from the server starts with them instead of importing them for its first scanner (0.04 s of
each worker)."""

import contextlib

from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

# imports every plugin module (detect-secrets keeps the result); a failure here (a fork server stops on
# anything but an ImportError) fails in each worker instead, where the pass reports it
with contextlib.suppress(Exception):
    get_mapping_from_secret_type_to_class()
