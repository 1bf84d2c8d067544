"""Personal data in trajectories: found by Presidio's analyzer (and recognizers of our own where it has
none), gated so Presidio reads only the few places that could hold any, and replaced by typed
placeholders numbered per trajectory. See docs/privacy.md."""

from training_pipeline.privacy.personal.finder import (
    ANALYZER_MODULE,
    PersonalDataFinder,
    Span,
    key_cue,
    role_account_key,
)
from training_pipeline.privacy.personal.kinds import DEFAULT_KINDS, PLACEHOLDER, kinds_from_setting
from training_pipeline.privacy.personal.pseudonyms import Pseudonyms

__all__ = [
    "ANALYZER_MODULE",
    "DEFAULT_KINDS",
    "PLACEHOLDER",
    "PersonalDataFinder",
    "Pseudonyms",
    "Span",
    "key_cue",
    "kinds_from_setting",
    "role_account_key",
]
