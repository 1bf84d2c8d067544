"""The Stage DSL (after JetBrains koog's StageScope): training programs that record every step."""

from training_pipeline.stages.records import AgentRunRecord, PromptExecutionRecord, StageRecord
from training_pipeline.stages.retry import Backoff, RetryPolicy, default_analyser
from training_pipeline.stages.scope import AgentOutcome, Result, RunUntil, SpendCapExceeded, StageScope
from training_pipeline.stages.session import Budget, TrainingSession

__all__ = [
    "AgentOutcome",
    "AgentRunRecord",
    "Backoff",
    "Budget",
    "PromptExecutionRecord",
    "Result",
    "RetryPolicy",
    "RunUntil",
    "SpendCapExceeded",
    "StageRecord",
    "StageScope",
    "TrainingSession",
    "default_analyser",
]
