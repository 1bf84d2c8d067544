"""Confinement of task code: see `confine` for the model, `inside` for the sandbox's first process."""

from training_pipeline.sandbox.confine import Limits, Sandbox, SandboxError, sandbox_mode, warn_if_unconfined

__all__ = ["Limits", "Sandbox", "SandboxError", "sandbox_mode", "warn_if_unconfined"]
