"""How the privacy filter runs: the profile, the entity directory and which environment secrets count."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from dagster import ConfigurableResource
from pydantic import Field

from training_pipeline.environment import personal_data_setting
from training_pipeline.privacy.entities import EntityDirectory
from training_pipeline.privacy.filter import PrivacyFilter, secret_env_values
from training_pipeline.privacy.id_key import filter_key
from training_pipeline.privacy.personal import kinds_from_setting
from training_pipeline.privacy.scan import SecretScanner
from training_pipeline.workers import default_workers


class PrivacySettings(ConfigurableResource):
    profile: Literal["strict", "elizaos"] = Field(
        default="strict", description="strict (default) or elizaos (exactly elizaOS's filter)"
    )
    entity_directory: str | None = Field(
        default=None, description="JSON or CSV mapping (platform, handle) to entity id and privacy level"
    )
    env_secrets: str = Field(
        default="*", description="glob of environment variable names whose values are redacted"
    )
    workers: int = Field(
        default=0, ge=0, description="processes that redact, filter and export a day (0: one per core)"
    )
    personal_data: str | None = Field(
        default=None,
        description="kinds of personal data strict redacts: all, none, or a comma-separated list "
        "(EMAIL_ADDRESS,PHONE_NUMBER,…); unset: TRAINING_PIPELINE_PERSONAL_DATA, else all",
    )

    id_key: str | None = Field(
        default=None,
        description="secret that keeps trajectory ids the redaction changed apart (pass it as an EnvVar); "
        "unset: the key kept in id_key_folder",
    )
    id_key_folder: str | None = Field(
        default=None,
        description="data folder whose keys/trajectory-id.key is the key (made there when missing); "
        "neither set: redacted ids are not kept apart",
    )

    def pool_size(self) -> int:
        return self.workers or default_workers()

    def scanner(self) -> SecretScanner:
        """The independent second look (detect-secrets' detectors + the environment's secret values,
        by the strict profile's broader name test) used by the checks, previews and training runs."""
        return SecretScanner(self.scanner_secrets(), self.personal_kinds())

    def personal_kinds(self) -> frozenset[str]:
        """The kinds of personal data the filter redacts, and the `no_personal_data` check looks for:
        none under `elizaos` (elizaOS's filter, byte for byte)."""
        if self.profile == "elizaos":
            return frozenset()
        return kinds_from_setting(
            self.personal_data if self.personal_data is not None else personal_data_setting()
        )

    def scanner_secrets(self) -> tuple[str, ...]:
        """The secret values the scanner looks for (read now, never stored)."""
        return secret_env_values("strict", names=self.env_secrets)

    def build_filter(self) -> PrivacyFilter:
        """A fresh filter (its counters start at zero); secret values are read now, never stored."""
        directory = EntityDirectory.load(Path(self.entity_directory)) if self.entity_directory else None
        return PrivacyFilter(
            self.profile,
            directory,
            secret_env_values(self.profile, names=self.env_secrets),
            self.personal_kinds(),
            id_key=filter_key(
                self.profile, self.id_key, Path(self.id_key_folder) if self.id_key_folder else None
            ),
        )
