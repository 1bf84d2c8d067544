"""`prompt_evaluation`: a task's promoted prompt and its baseline, each given to the agents of the
evaluation task files and run as task jobs; the verifiers' scores are the asset's record. The
conversations the agents have are written back as trajectories, so the next day's datasets hold them."""

from pathlib import Path

from dagster import (
    AssetExecutionContext,
    AssetsDefinition,
    Failure,
    MaterializeResult,
    MetadataValue,
    StaticPartitionsDefinition,
    asset,
    in_process_executor,
)

from assets.keys import Keys
from assets.partitions import SOURCE_TAG, training_partitions
from assets.tasks.jobs import task_job
from resources.llm import LLMResource
from resources.sources import TrajectorySource
from resources.storage import DataStore
from resources.tasks import TaskOverrides
from resources.training import TrainingSettings
from training_pipeline.optimizers.native import load_artifact
from training_pipeline.privacy.stored import safe_text
from training_pipeline.tasks.registry import build_registry
from training_pipeline.tasks.task import load_task
from training_pipeline.training.evaluation import (
    VARIANTS,
    Evaluation,
    evaluation_files,
    task_prompt_overrides,
    verification_score,
)
from training_pipeline.training.metadata import evaluation_table
from training_pipeline.training.promotion import judge_artifact, read_published

#: the tags of an evaluation's task runs: which task's prompt, and which variant ran
EVALUATION_TAG = "training_pipeline/evaluates"
VARIANT_TAG = "training_pipeline/variant"


def prompt_evaluation_asset(
    keys: Keys,
    group: str,
    owners: list[str] | None = None,
    partitions: StaticPartitionsDefinition | None = None,
) -> AssetsDefinition:
    """`prompt_evaluation`, keyed under `keys`, after the `optimized_prompt` there, partitioned as
    training is (`partitions`, default `training_partitions()`)."""

    @asset(
        key=keys.prompt_evaluation,
        partitions_def=partitions or training_partitions(),
        deps=[keys.optimized_prompt],
        group_name=group,
        owners=owners,
        kinds={"python"},
        description="The task's promoted prompt against its baseline, by task steps: the task's evaluation "
        "file runs as a task job once as written and once with the promoted prompt where the task's prompt "
        "lives; the verifiers' scores, side by side. Launched by `evaluation_sensor` when a prompt is "
        "promoted.",
    )
    def prompt_evaluation(
        context: AssetExecutionContext,
        training_pipeline_policy: TrainingSettings,
        training_pipeline_store: DataStore,
        training_pipeline_llm: LLMResource,
        training_pipeline_source: TrajectorySource,
    ) -> MaterializeResult:
        task = context.partition_key
        published = read_published(training_pipeline_store.prompts(), task)
        if published is None:
            raise Failure(
                f"no promoted prompt for {task} yet: a native training run must pass the gate first"
            )
        policy = training_pipeline_policy.promotion()
        record = training_pipeline_store.runs().load(published["run_id"])
        if record is None or not record.artifact_path:
            raise Failure(f"the run that published {task}'s prompt ({published['run_id']}) has no record")
        verdict = judge_artifact(load_artifact(Path(record.artifact_path)), policy)
        if not verdict.promoted:
            raise Failure(
                safe_text(f"{task}'s published prompt fails the promotion gate now: {verdict.reason}")
            )

        registry = build_registry()
        evaluation = Evaluation()
        resources = {
            "training_pipeline_store": training_pipeline_store,
            "training_pipeline_llm": training_pipeline_llm,
            "training_pipeline_source": training_pipeline_source,
        }
        for file in evaluation_files(policy, task):
            spec = load_task(file, registry)
            job = task_job(spec, in_process_executor, keys=keys)
            for variant in VARIANTS:
                overrides = TaskOverrides(
                    values={"evaluates": task, "variant": variant, "training_run": record.run_id},
                    step_params=task_prompt_overrides(spec, task, published, variant),
                )
                result = job.execute_in_process(
                    resources={**resources, "training_pipeline_task_overrides": overrides},
                    instance=context.instance,
                    tags={EVALUATION_TAG: task, VARIANT_TAG: variant, SOURCE_TAG: "promotion"},
                    raise_on_error=False,
                )
                score = verification_score(training_pipeline_store.task_runs() / result.run_id)
                evaluation.add(spec.name, variant, result.run_id, result.success, score)
                context.log.info(f"{spec.name} with the {variant} prompt: run {result.run_id}, score {score}")

        summary = evaluation.summary()
        record.details["evaluation"] = summary
        training_pipeline_store.runs().save(record)
        return MaterializeResult(
            metadata={
                "training_run": record.run_id,
                "promoted_score": summary["promoted_score"],
                "baseline_score": summary["baseline_score"],
                "difference": summary["difference"],
                "scores": MetadataValue.md(evaluation_table(summary)),
                "scorer": summary["scorer"],
                "task_runs": MetadataValue.json(summary["runs"]),
            }
        )

    return prompt_evaluation
