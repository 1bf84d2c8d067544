"""Task steps: an RL/eval task as a JSON list of typed steps forming a DAG (Scale AI AgentEnv's model).

`step` is the base class, `registry` maps types to classes, `task` parses and validates a file,
`context` and `store` hold what steps share during a run, `runner` runs one step with the failure and
retry rules, `steps/` are the built-in step types and `envs/` the environments they deploy.
"""

from pathlib import Path

#: The bundled example tasks (reply-to-dana and friends); `TRAINING_PIPELINE_TASKS_DIR` adds yours.
EXAMPLE_TASKS = Path(__file__).resolve().parent / "examples"
