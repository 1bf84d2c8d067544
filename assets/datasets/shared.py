"""`shared_datasets`: a day's datasets (elizaOS's five and the trace datasets, each with the folders of
the other formats the deployment writes) copied to shared storage once their blocking checks have
passed."""

from dagster import (
    AssetExecutionContext,
    AssetsDefinition,
    AutomationCondition,
    BackfillPolicy,
    Failure,
    MaterializeResult,
    MetadataValue,
    PartitionsDefinition,
    asset,
)

from assets.keys import Keys
from resources.storage import DataStore
from training_pipeline.datasets.trace_datasets import TRACE_SUMMARY_FILE_NAME
from training_pipeline.datasets.training_tasks import SUMMARY_FILE_NAME

__all__ = ["shared_datasets"]


def shared_datasets(
    partitions: PartitionsDefinition, keys: Keys, group: str, owners: list[str] | None = None
) -> AssetsDefinition:
    @asset(
        key=keys.shared_datasets,
        partitions_def=partitions,
        group_name=group,
        owners=owners,
        deps=[*keys.datasets, keys.trace_datasets],
        kinds={"jsonl"},
        backfill_policy=BackfillPolicy.single_run(),
        # with the day's datasets when they are asked for by the nightly condition, or after them
        automation_condition=AutomationCondition.eager(),
        description="The day's five datasets (with their trajectory-id sidecars) and summary, and its trace "
        "datasets with theirs, each in every format written (openai-chat/, parquet/), copied to the shared "
        "storage (TRAINING_PIPELINE_SHARED_URL) once the datasets' blocking checks have passed; each "
        "summary goes last, so a reader that finds it finds the whole folder.",
    )
    def _shared_datasets(
        context: AssetExecutionContext, training_pipeline_store: DataStore
    ) -> MaterializeResult:
        shared = training_pipeline_store.shared()
        if shared is None:
            raise Failure("the store has no shared_url: set TRAINING_PIPELINE_SHARED_URL to an fsspec URL")
        for day in context.partition_keys:
            urls = shared.put_folder(
                training_pipeline_store.datasets(day), "datasets", day, last=SUMMARY_FILE_NAME
            )
            location = shared.location("datasets", day)
            traces = training_pipeline_store.trace_datasets(day)
            if (traces / TRACE_SUMMARY_FILE_NAME).is_file():
                urls += shared.put_folder(traces, "trace_datasets", day, last=TRACE_SUMMARY_FILE_NAME)
            context.log.info(f"{day}: {len(urls)} files published to {location} and beside it")
            context.add_asset_metadata(
                {
                    "dagster/uri": location,
                    "url": MetadataValue.url(location),
                    "trace_datasets": shared.location("trace_datasets", day),
                    "files": len(urls),
                },
                partition_key=day,
            )
        return MaterializeResult()

    return _shared_datasets
