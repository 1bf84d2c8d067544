"""`training_run`: one training run for one task (the partition), recorded as asset metadata and as a
run record file; `tuned_model` and `optimized_prompt`: what the run produced."""

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from dagster import (
    AllPartitionMapping,
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetDep,
    AssetExecutionContext,
    AssetsDefinition,
    Config,
    Failure,
    MaterializeResult,
    MetadataValue,
    Output,
    StaticPartitionsDefinition,
    asset,
    asset_check,
)
from pydantic import Field

from assets.compat import PARTITIONED_CHECKS
from assets.keys import Keys
from assets.partitions import training_partitions
from resources.backends import TrainingBackends
from resources.privacy import PrivacySettings
from resources.storage import DataStore
from resources.training import TrainingSettings
from training_pipeline.backends.base import BackendError
from training_pipeline.datasets.training_tasks import TASKS
from training_pipeline.optimizers.native import load_artifact
from training_pipeline.privacy.stored import SafeLog, safe_text
from training_pipeline.stages.records import StageRecord
from training_pipeline.training.metadata import gate_table, records_preview, score_chart
from training_pipeline.training.orchestrate import run_training
from training_pipeline.training.policy import BACKENDS
from training_pipeline.training.promotion import judge_artifact, native_candidate, promote, read_published
from training_pipeline.training.run_records import RunRecord
from training_pipeline.training.tuned_evaluation import TunedEvaluation
from training_pipeline.training.tuning import (
    TuningFailed,
    follow_tinker_run,
    follow_vertex_job,
    judge_openai_model,
    judge_tinker_model,
    judge_vertex_model,
    to_follow,
)
from training_pipeline.training.window import DayFiles, assemble_window


class TrainingRunConfig(Config):
    backend: str | None = Field(default=None, description="override the policy's backend for this run")
    dry_run: bool = Field(default=False, description="decide everything, dispatch nothing")
    source: Literal["threshold", "schedule", "manual", "backfill"] = "manual"


@dataclass(frozen=True)
class TrainingAssets:
    """A task's training run, what it made, and the gate on the prompt it optimised."""

    training_run: AssetsDefinition
    tuned_model: AssetsDefinition
    optimized_prompt: AssetsDefinition
    promotion_gate: AssetChecksDefinition

    @property
    def assets(self) -> list[AssetsDefinition]:
        return [self.training_run, self.tuned_model, self.optimized_prompt]


def _judged(evaluation: TunedEvaluation | None) -> dict[str, Any]:
    """What the gate said of a tuned model, as metadata (nothing when it was not judged)."""
    if evaluation is None:
        return {"judged": False}
    verdict = evaluation.verdict
    return {
        "judged": True,
        "better": verdict.promoted,
        "gain": verdict.gain,
        "gain_low": verdict.low,
        "gain_high": verdict.high,
        "test_examples": verdict.n,
        "base_score": evaluation.base_score,
        "tuned_score": evaluation.tuned_score,
        "gate": MetadataValue.md(gate_table(verdict)),
        "reason": verdict.reason,
    }


#: the training run's check: a warning when the run was skipped, so the UI shows it as such
NOT_SKIPPED = "not_skipped"


def training_assets(
    keys: Keys,
    group: str,
    owners: list[str] | None = None,
    partitions: StaticPartitionsDefinition | None = None,
) -> TrainingAssets:
    """The training assets keyed under `keys`, in `group`, partitioned by what they train (`partitions`,
    default `training_partitions()`: elizaOS's five tasks, `chat` and `tool_use`)."""
    task_partitions = partitions or training_partitions()

    @asset(
        key=keys.training_run,
        partitions_def=task_partitions,
        deps=[
            AssetDep(key, partition_mapping=AllPartitionMapping())
            for key in [*(keys.dataset(task) for task in TASKS), keys.trace_datasets]
        ],
        group_name=group,
        owners=owners,
        pool=keys.name("training_pipeline_training"),
        kinds={"python"},
        description="Train the task on its latest days of data with the policy's backend; the run record "
        "says what happened and why.",
        check_specs=[
            AssetCheckSpec(
                NOT_SKIPPED,
                asset=keys.training_run,
                description="a warning when the run trained nothing (no backend, no data, no LLM, another "
                "run dispatching): the run record and the reason are in its metadata",
                # per task where this Dagster records check results per partition (`assets.compat`)
                **({"partitions_def": task_partitions} if PARTITIONED_CHECKS else {}),
            )
        ],
    )
    def training_run(
        context: AssetExecutionContext,
        config: TrainingRunConfig,
        training_pipeline_policy: TrainingSettings,
        training_pipeline_backends: TrainingBackends,
        training_pipeline_privacy: PrivacySettings,
        training_pipeline_store: DataStore,
    ) -> MaterializeResult:
        task, store = context.partition_key, training_pipeline_store
        # one of elizaOS's tasks trains on its dataset's days, a trace dataset on the trace datasets'
        layer = keys.dataset(task) if task in TASKS else keys.trace_datasets
        days = sorted(context.instance.get_materialized_partitions(layer))[
            -training_pipeline_policy.window_days :
        ]
        record = RunRecord(task=task, source=config.source, dagster_run_id=context.run.run_id)
        runs = training_pipeline_store.runs()
        window = assemble_window(
            task,
            [
                DayFiles(day, store.datasets(day), store.privacy_report(day), store.trace_datasets(day))
                for day in days
            ],
            runs.directory / record.run_id / f"{task}_trajectories.jsonl",
        )
        policy = training_pipeline_policy.policy()
        with runs.task_lock(task) as acquired:
            if acquired:
                record = run_training(
                    record,
                    window,
                    policy,
                    {name: training_pipeline_backends.get(name) for name in BACKENDS},
                    training_pipeline_privacy.scanner(),
                    explicit_backend=config.backend,
                    dry_run=config.dry_run,
                    log=SafeLog(context.log).info,
                    scorer=training_pipeline_policy.promotion().scorer_for(task),
                )
            else:
                record.finish("skipped", f"another training run for {task} is dispatching; not started twice")
        path = runs.save(record)
        record = record.safe()  # what Dagster keeps (logs, failure, metadata) is the stored form
        context.log.info(
            f"{record.run_id}: {record.status} task={task} backend={record.backend} "
            f"examples={record.dataset_size}" + (f" ({record.reason})" if record.reason else "")
        )
        if record.status == "failed":
            raise Failure(
                f"training run {record.run_id} failed: {record.reason}",
                metadata={"run_record": MetadataValue.path(str(path))},
            )
        skipped = AssetCheckResult(
            check_name=NOT_SKIPPED,
            passed=record.status != "skipped",
            severity=AssetCheckSeverity.WARN,  # a skip is an outcome with a reason, not a fault
            metadata={"task": task, "status": record.status, "reason": record.reason or ""},
        )
        return MaterializeResult(
            check_results=[skipped],
            metadata={
                "run_id": record.run_id,
                "status": record.status,
                "reason": record.reason or "",
                "backend": record.backend or "",
                "source": record.source,
                "dataset_size": record.dataset_size,
                "window": MetadataValue.json(record.window),
                "per_task_counts": MetadataValue.json(record.per_task_counts),
                "pulled_trajectories": record.pulled_trajectories,
                "filtered_trajectories": record.filtered_trajectories,
                "redactions": record.redaction_count,
                "anonymizations": record.anonymization_count,
                "artifact": record.artifact_path or "",
                "notes": MetadataValue.json(record.notes),
                "dry_run": record.dry_run,
                "run_record": MetadataValue.path(str(path)),
                "effective_policy": MetadataValue.json(
                    {
                        "auto_train": policy.auto_train,
                        "window_days": training_pipeline_policy.window_days,
                        "tasks": {t: asdict(policy.for_task(t)) for t in dict.fromkeys([*TASKS, task])},
                    }
                ),
            },
        )

    # what a training run made: partitioned like it, after it, and materialised only when the run made it
    made_by_the_run = {
        "partitions_def": task_partitions,
        "deps": [training_run],
        "group_name": group,
        "owners": owners,
        "kinds": {"python"},
        "output_required": False,
    }

    @asset(
        key=keys.tuned_model,
        **made_by_the_run,
        description="The model a hosted service trained: polls the Vertex tuning job `training_run` created "
        "in the same run to a terminal state, logging progress, and records the tuned model's endpoint; or "
        "confirms the service lists the sampler weights a Tinker run saved, and records their path. The "
        "tuned model is then judged against its base model on the run's test split through the service "
        "(an endpoint, or Tinker's sampler), by the promotion gate (gain, interval, the best constant "
        "answer).",
    )
    def tuned_model(
        context: AssetExecutionContext,
        training_pipeline_backends: TrainingBackends,
        training_pipeline_store: DataStore,
        training_pipeline_policy: TrainingSettings,
    ) -> Iterator[Output[None]]:
        runs = training_pipeline_store.runs()
        record = runs.find(dagster_run_id=context.run.run_id, task=context.partition_key)
        poll = to_follow(record)
        if record is None or poll is None:
            context.log.info("no hosted training to follow in this run")
            return
        log = SafeLog(context.log).info
        promotion = training_pipeline_policy.promotion()
        try:
            if poll["service"] == "tinker":
                tinker = training_pipeline_backends.tinker
                checkpoint = follow_tinker_run(record, runs, tinker.base_url, tinker.api_key or "", log)
                evaluation = judge_tinker_model(record, runs, tinker.config(), promotion, log)
                metadata = {
                    "training_run": poll["training_run"],
                    "sampler_path": checkpoint["tinker_path"],
                    "size_bytes": checkpoint.get("size_bytes") or 0,
                    "epoch_losses": record.details.get("epoch_losses", []),
                    **_judged(evaluation),
                }
            elif poll["service"] == "openai":
                openai = training_pipeline_backends.openai
                evaluation = judge_openai_model(
                    record, runs, openai.base_url, openai.api_key or "", openai.model, promotion, log
                )
                metadata = {"model": poll["model"], **_judged(evaluation)}
            else:
                vertex = training_pipeline_backends.vertex
                token = vertex.token()
                if not token:
                    raise Failure("no Google access token to poll the Vertex tuning job with")
                target = vertex.target()
                job = follow_vertex_job(
                    record, runs, target, token, vertex.poll_interval_seconds, vertex.timeout_seconds, log
                )
                evaluation = judge_vertex_model(
                    record, runs, target, token, vertex.base_model, promotion, log
                )
                metadata = {
                    "job": poll["job"],
                    "state": job["state"],
                    "endpoint": record.artifact_path or "",
                    **_judged(evaluation),
                }
        except TuningFailed as err:
            raise Failure(safe_text(str(err))) from None
        except BackendError as err:  # the endpoint failed while the model was being judged
            raise Failure(safe_text(f"judging the tuned model: {err}")) from None
        yield Output(
            None,
            metadata={
                "run_id": record.run_id,
                "service": poll["service"],
                **metadata,
                "run_record": MetadataValue.path(str(runs.path(record))),
            },
        )

    @asset(
        key=keys.optimized_prompt,
        **made_by_the_run,
        description="The prompt the native backend optimised in this run and the promotion gate's verdict: "
        "the paired held-out gain over the baseline with its bootstrap interval, promoted (published as the "
        "task's prompt) or rejected; the score by round, every variant's lineage, and the records tree.",
    )
    def optimized_prompt(
        context: AssetExecutionContext,
        training_pipeline_policy: TrainingSettings,
        training_pipeline_privacy: PrivacySettings,
        training_pipeline_store: DataStore,
    ) -> Iterator[Output[None]]:
        runs = training_pipeline_store.runs()
        record = native_candidate(runs, context.run.run_id, context.partition_key)
        if record is None:
            context.log.info("no native optimisation in this run")
            return
        artifact = load_artifact(Path(record.artifact_path or ""))
        verdict = promote(
            record, artifact, runs, training_pipeline_store.prompts(), training_pipeline_policy.promotion()
        )
        context.log.info(record.notes[-1])
        tree = StageRecord.model_validate_json(Path(artifact["records"]).read_text(encoding="utf-8"))
        scanner = training_pipeline_privacy.scanner()
        prompt = artifact["prompt"]
        shown = prompt if len(prompt) <= 4000 else prompt[:4000] + "\n…"
        yield Output(
            None,
            metadata={
                "run_id": record.run_id,
                "promoted": verdict.promoted,
                "gain": verdict.gain,
                "gain_low": verdict.low,
                "gain_high": verdict.high,
                "held_out_examples": verdict.n,
                "gate": MetadataValue.md(gate_table(verdict)),
                "scorer": verdict.scorer,
                "optimizer": artifact["optimizer"],
                "baseline_score": float(artifact["baseline_score"]),
                "score": float(artifact["score"]),
                # what always giving one answer scores on the same examples: the score's reference
                **(
                    {
                        "best_constant_score": verdict.reference,
                        "best_constant_gain_low": verdict.reference_low,
                    }
                    if verdict.reference is not None
                    else {}
                ),
                "improvement": float(artifact["score"] - artifact["baseline_score"]),
                "train_examples": artifact["train_size"],
                "validation_examples": artifact["validation_size"],
                "test_examples": artifact["test_size"],
                # where the candidate was chosen; the scores above are the test split's
                "validation_baseline_score": float(artifact["validation_baseline_score"]),
                "validation_score": float(artifact["validation_score"]),
                "seeds": verdict.seeds,
                **(
                    {"seeds_gain": verdict.seeds_gain, "seeds_gain_low": verdict.seeds_low}
                    if verdict.seeds_gain is not None
                    else {}
                ),
                "few_shot_examples": len(artifact["few_shot_examples"]),
                "demo_style": artifact["demo_style"],
                # 0: every demonstration before every question; n: the n nearest of them per question
                "neighbours": artifact.get("neighbours", 0),
                "prompt": MetadataValue.md(f"```text\n{scanner.mask(shown)}\n```"),
                "score_by_round": MetadataValue.md(score_chart(artifact["lineage"])),
                "lineage": MetadataValue.json(artifact["lineage"][:200]),
                "path": MetadataValue.path(record.artifact_path or ""),
                "training_records": MetadataValue.path(artifact["records"]),
                "records_preview": MetadataValue.md(records_preview(tree)),
                # the records tree's root metrics, numeric so Dagster plots them across runs
                **{f"records/{key}": value for key, value in tree.numeric_metrics().items()},
            },
        )

    @asset_check(
        asset=optimized_prompt,
        blocking=True,
        description="The candidate's promotion agrees with the gate, recomputed from its per-example "
        "held-out scores under today's policy: promoted and published, or rejected (a warning) and not "
        "published. A published prompt the gate rejects fails with ERROR and blocks what evaluates it.",
    )
    def promotion_gate(
        context: AssetCheckExecutionContext,
        training_pipeline_policy: TrainingSettings,
        training_pipeline_store: DataStore,
    ) -> AssetCheckResult:
        runs = training_pipeline_store.runs()
        record = native_candidate(runs, context.run.run_id, context.partition_key)
        if record is None:
            return AssetCheckResult(passed=True, metadata={"candidate": "none in this run"})
        verdict = judge_artifact(
            load_artifact(Path(record.artifact_path or "")), training_pipeline_policy.promotion()
        )
        published = read_published(training_pipeline_store.prompts(), context.partition_key)
        is_published = published is not None and published.get("run_id") == record.run_id
        metadata = {
            "run_id": record.run_id,
            "promoted": verdict.promoted,
            "published": is_published,
            "gain": verdict.gain,
            "gain_low": verdict.low,
            "held_out_examples": verdict.n,
            "reason": verdict.reason,
            **({"best_constant_score": verdict.reference} if verdict.reference is not None else {}),
        }
        if verdict.promoted == is_published:
            return AssetCheckResult(
                passed=verdict.promoted,
                severity=AssetCheckSeverity.WARN,  # a rejected candidate is an outcome, not a fault
                metadata=metadata,
            )
        return AssetCheckResult(passed=False, severity=AssetCheckSeverity.ERROR, metadata=metadata)

    return TrainingAssets(training_run, tuned_model, optimized_prompt, promotion_gate)
