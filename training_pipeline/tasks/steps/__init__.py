"""The built-in step types."""

from training_pipeline.tasks.steps.agents import DeployAgentStep, PromptAgentStep
from training_pipeline.tasks.steps.envs import (
    DeployEnvStep,
    LoadArtifactStep,
    RunCodeStep,
    SnapshotEnvStep,
    TeardownStep,
)
from training_pipeline.tasks.steps.misc import CollectArtifactsStep, WaitStep
from training_pipeline.tasks.steps.verifiers import (
    AgentPromptResponseVerifier,
    AggregateVerifiers,
    EnvOutcomeVerifier,
    RubricsVerifier,
)

BUILTIN_STEPS = (
    DeployEnvStep,
    LoadArtifactStep,
    SnapshotEnvStep,
    RunCodeStep,
    TeardownStep,
    DeployAgentStep,
    PromptAgentStep,
    AgentPromptResponseVerifier,
    EnvOutcomeVerifier,
    RubricsVerifier,
    AggregateVerifiers,
    CollectArtifactsStep,
    WaitStep,
)
