"""Task steps: an RL/eval task as a JSON list of typed steps forming a DAG (Scale AI AgentEnv's model).

`step` is the base class, `registry` maps types to classes, `task` parses and validates a file,
`context` and `run_store` hold what steps share during a run, `runner` runs one step with the failure
and retry rules, `steps/` are the built-in step types and `envs/` the environments they deploy.

What a step author needs is exported here: subclass `TaskStep` (a class-level `type`, pydantic
fields, `async execute(context)`), read and write the run through `TaskStepContext` and its entries,
and use the run's services (`StepServices`: the LLM, the data folder, the env clients).
"""

from pathlib import Path

from training_pipeline.tasks.context import (
    DeployedAgent,
    DeployedEnv,
    DeployedSandbox,
    PromptResponse,
    TaskStepContext,
)
from training_pipeline.tasks.services import StepServices
from training_pipeline.tasks.step import Dependency, RetryConfig, TaskStep

__all__ = [
    "EXAMPLE_TASKS",
    "Dependency",
    "DeployedAgent",
    "DeployedEnv",
    "DeployedSandbox",
    "PromptResponse",
    "RetryConfig",
    "StepServices",
    "TaskStep",
    "TaskStepContext",
]

#: The bundled example tasks (reply-to-dana and friends); `TRAINING_PIPELINE_TASKS_DIR` adds yours.
EXAMPLE_TASKS = Path(__file__).resolve().parent / "examples"
