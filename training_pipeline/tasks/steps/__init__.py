"""The built-in step types."""

from training_pipeline.tasks.steps.agents import DeployAgentStep, DeployToolServerStep, PromptAgentStep
from training_pipeline.tasks.steps.envs import (
    DeployEnvStep,
    LoadArtifactStep,
    RunCodeStep,
    SnapshotEnvStep,
    TeardownStep,
)
from training_pipeline.tasks.steps.misc import CollectArtifactsStep, WaitStep
from training_pipeline.tasks.steps.sandboxes import (
    CollectFilesStep,
    DeploySandboxStep,
    DownloadFilesStep,
    RunInSandboxStep,
    UploadFilesStep,
    WaitForStep,
)
from training_pipeline.tasks.steps.verifiers import (
    AgentPromptResponseVerifier,
    AggregateVerifiers,
    EnvOutcomeVerifier,
    RubricsVerifier,
    UnitTestVerifier,
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
    DeploySandboxStep,
    RunInSandboxStep,
    UploadFilesStep,
    DownloadFilesStep,
    CollectFilesStep,
    WaitForStep,
    DeployToolServerStep,
    UnitTestVerifier,
)
