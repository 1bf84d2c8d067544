"""The code location as Dagster sees it: definitions, materialisation by day, checks, backfills."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa
from dagster import AssetKey, DagsterInstance, RunsFilter, materialize

from assets.datasets.definitions import daily_graph
from resources.defaults import default_resources
from resources.privacy import PrivacySettings
from resources.sources import DatabaseTrajectorySource, FileTrajectorySource
from resources.storage import DataStore
from tests.dagster_servers import instance_at
from tests.helpers import DATASET_ASSETS, REPO, asset_metadata, cli, fresh_python, layer_resources
from tests.planted_secrets import STRIPE_KEY, write_stripe_leak_day
from training_pipeline.datasets.training_tasks import TASK_FILE_NAMES, TASKS, ids_path
from training_pipeline.definitions import defs
from training_pipeline.settings import load_settings

DAY = "2026-11-24"


@pytest.fixture
def dagster_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").symlink_to(REPO / "dagster.yaml")
    return home


def _run(resources: dict, day: str = DAY, instance: DagsterInstance | None = None):
    return materialize(
        DATASET_ASSETS,
        partition_key=day,
        resources=resources,
        instance=instance or DagsterInstance.ephemeral(),
        raise_on_error=False,
    )


def test_definitions_load_with_the_expected_graph() -> None:
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert keys == {
        "trajectories",
        "filtered_trajectories",
        *TASKS,
        "trace_datasets",
        "training_run",
        "tuned_model",
        "prompt_evaluation",
        "optimized_prompt",
    }
    assert graph.get(AssetKey("should_respond")).parent_keys == {AssetKey("filtered_trajectories")}
    assert graph.get(AssetKey("filtered_trajectories")).parent_keys == {AssetKey("trajectories")}
    assert graph.get(AssetKey("trace_datasets")).parent_keys == {AssetKey("filtered_trajectories")}
    checks = {f"{k.asset_key.to_user_string()}.{k.name}" for k in graph.asset_check_keys}
    names = ("no_credentials", "no_personal_data", "valid_jsonl", "counts_add_up")
    assert {f"{t}.{c}" for t in TASKS for c in names} <= checks
    assert {f"trace_datasets.{c}" for c in names[:3]} <= checks
    job = defs.resolve_job_def("datasets_job")
    assert job.partitions_def.get_partition_keys()[0] == "2026-11-23"  # the bundled sample's first day


def test_the_location_a_cli_daemon_loads_has_the_same_jobs_and_nothing_that_starts_runs() -> None:
    """What a daemon the CLI starts for its run loads (`RUNS_ONLY`): every job and asset of the code
    location, its executor, and no sensor, schedule or automation condition that could start a run."""
    from assets.definitions import without_automation

    bare = without_automation(defs)
    repository, full = bare.get_repository_def(), defs.get_repository_def()
    assert {job.name for job in repository.get_all_jobs()} == {job.name for job in full.get_all_jobs()}
    assert repository.asset_graph.get_all_asset_keys() == full.asset_graph.get_all_asset_keys()
    assert repository.asset_graph.asset_check_keys == full.asset_graph.asset_check_keys
    assert bare.executor is defs.executor
    assert not repository.sensor_defs and not repository.schedule_defs
    graph = repository.asset_graph
    assert all(graph.get(key).automation_condition is None for key in graph.get_all_asset_keys())
    assert {sensor.name for sensor in full.sensor_defs} >= {
        "evaluation_sensor",
        "nightly_datasets_automation",
    }
    code = "from training_pipeline.definitions import defs; print(len(defs.get_repository_def().sensor_defs))"
    assert fresh_python(code, TRAINING_PIPELINE_RUNS_ONLY="1").strip() == "0"


def test_dagster_definitions_validate_accepts_the_code_location(dagster_home: Path) -> None:
    proc = subprocess.run(
        [
            str(Path(sys.executable).parent / "dagster"),
            "definitions",
            "validate",
            "-m",
            "training_pipeline.definitions",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "DAGSTER_HOME": str(dagster_home)},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_a_day_materialises_with_counts_that_add_up(tmp_path: Path) -> None:
    resources = default_resources(load_settings({"TRAINING_PIPELINE_DATA": str(tmp_path)}))
    instance = DagsterInstance.ephemeral()
    result = _run(resources, instance=instance)
    assert result.success
    assert all(e.passed for e in result.get_asset_check_evaluations())
    assert len(result.get_asset_check_evaluations()) == 22 + 3  # the trace datasets' three too
    # each check's result is the day's, and is its step's output: the run's log does not say that a
    # step yielded no result for its checks (nor Dagster that a blocking check gated nothing)
    assert {e.partition for e in result.get_asset_check_evaluations()} == {DAY}
    said = [entry.user_message for entry in instance.all_logs(result.run_id)]
    assert not [message for message in said if "did not yield or return expected outputs" in message]
    # the datasets were inspected as the day's pass wrote them; the checks only hashed the files
    assert {
        e.metadata["inspected"].value
        for e in result.get_asset_check_evaluations()
        if e.check_name in ("no_credentials", "no_personal_data", "valid_jsonl")
        and e.asset_key != AssetKey("trace_datasets")
    } == {"while exporting; the file's SHA-256 matches"}

    raw = asset_metadata(result, "trajectories")
    assert raw["records_in"] == raw["kept"] + raw["quarantined"] and raw["quarantined"] == 3
    filtered = asset_metadata(result, "filtered_trajectories")
    assert filtered["trajectories_in"] == raw["kept"] == filtered["kept"] + filtered["dropped_private"]
    assert filtered["dropped_private"] > 0 and filtered["redactions"] == sum(
        filtered["redactions_by_rule"].values()
    )
    for task in TASKS:
        meta = asset_metadata(result, task)
        path = Path(meta["path"])
        assert path == tmp_path / "datasets" / DAY / TASK_FILE_NAMES[task]
        assert len(path.read_text(encoding="utf-8").splitlines()) == meta["examples"]
        assert meta["trajectories"] == filtered["kept"]
        assert len(meta["preview"]) == min(3, meta["examples"])
        assert set(meta["preview"][0]) == {"system", "user", "model"}


def test_the_day_is_filtered_while_ingesting_and_refiltered_as_a_subset(tmp_path: Path) -> None:
    """One parse per trajectory: the day's pass writes the filtered layer as it stores the day, the same
    as filtering the stored day separately; with another entity directory, materialising the filtered
    layer and the datasets (a subset, without `trajectories`) filters the stored day again."""
    from training_pipeline.intake.filtered import filter_store
    from training_pipeline.intake.ingest import IngestManifest, manifest_path
    from training_pipeline.trajectories.parquet import iter_trajectories

    resources = default_resources(load_settings({"TRAINING_PIPELINE_DATA": str(tmp_path)}))
    instance = DagsterInstance.ephemeral()
    result = _run(resources, instance=instance)
    stored = tmp_path / "trajectories" / f"{DAY}.parquet"
    fused = list(iter_trajectories(tmp_path / "filtered_trajectories" / f"{DAY}.parquet"))
    separate = filter_store(
        stored,
        tmp_path / "separate.parquet",
        tmp_path / "separate.json",
        resources["training_pipeline_privacy"].build_filter(),
        IngestManifest.read(manifest_path(stored)).redactions_by_rule,
    )
    assert list(iter_trajectories(tmp_path / "separate.parquet")) == fused
    # byte for byte: a row the filter left alone is stored as it came either way
    assert pq.read_table(tmp_path / "separate.parquet").equals(
        pq.read_table(tmp_path / "filtered_trajectories" / f"{DAY}.parquet")
    )
    report = json.loads((tmp_path / "filtered_trajectories" / f"{DAY}.privacy_report.json").read_text())
    assert report == separate and report["redactionCount"] > 0

    # the filter changes (nobody is private any more): the stored day is filtered again, untouched
    entities = tmp_path / "entities.json"
    sample = json.loads(Path(str(resources["training_pipeline_privacy"].entity_directory)).read_text())
    entities.write_text(json.dumps({**sample, "private": []}))
    resources["training_pipeline_privacy"] = PrivacySettings(entity_directory=str(entities))
    before = stored.read_bytes()
    subset = [AssetKey("filtered_trajectories"), *(AssetKey(t) for t in TASKS)]
    again = materialize(
        DATASET_ASSETS, selection=subset, partition_key=DAY, resources=resources, instance=instance
    )
    assert again.success and stored.read_bytes() == before
    assert {e.asset_key for e in again.get_asset_materialization_events()} == set(subset)
    assert all(e.passed for e in again.get_asset_check_evaluations())
    refiltered = asset_metadata(again, "filtered_trajectories")
    assert refiltered["dropped_private"] == 0
    assert (
        refiltered["kept"] == len(fused) + asset_metadata(result, "filtered_trajectories")["dropped_private"]
    )
    assert asset_metadata(again, "response")["trajectories"] == refiltered["kept"]


def asset_values(event) -> dict:
    return {k: v.value for k, v in event.materialization.metadata.items()}


def test_a_range_of_days_is_one_run_with_each_days_own_metadata_and_checks(tmp_path: Path) -> None:
    """The daily job over a range of days is one run (the assets' single-run backfill policy); each
    day's materialisation and check results carry that day's figures, and a day without data has
    empty, consistent layers."""
    days = ["2026-11-23", DAY, "2026-11-25"]
    instance = DagsterInstance.ephemeral()
    result = materialize(
        DATASET_ASSETS,
        instance=instance,
        resources=default_resources(load_settings({"TRAINING_PIPELINE_DATA": str(tmp_path)})),
        tags={"dagster/asset_partition_range_start": days[0], "dagster/asset_partition_range_end": days[-1]},
    )
    assert result.success
    assert len(instance.get_runs()) == 1
    by_day = {
        (e.asset_key.to_user_string(), e.partition): asset_values(e)
        for e in result.get_asset_materialization_events()
    }
    assert {day for _, day in by_day} == set(days)
    records = {day: by_day[("trajectories", day)]["records_in"] for day in days}
    assert records[DAY] > 0 and records[DAY] != records["2026-11-23"]
    for day in days:
        assert by_day[("trajectories", day)]["dagster/row_count"] == by_day[("trajectories", day)]["kept"]
        assert by_day[("response", day)]["dagster/uri"].endswith(f"{day}/{TASK_FILE_NAMES['response']}")
    evaluations = result.get_asset_check_evaluations()
    assert {e.partition for e in evaluations} == set(days) and all(e.passed for e in evaluations)
    assert len(evaluations) == (22 + 3) * len(days)  # the layers' and the trace datasets'


def test_rematerialising_replaces_the_partition_it_never_appends(tmp_path: Path) -> None:
    resources = default_resources(load_settings({"TRAINING_PIPELINE_DATA": str(tmp_path)}))
    instance = DagsterInstance.ephemeral()
    _run(resources, instance=instance)
    first = {p.name: p.read_bytes() for p in (tmp_path / "datasets" / DAY).glob("*.jsonl")}
    assert _run(resources, instance=instance).success
    second = {p.name: p.read_bytes() for p in (tmp_path / "datasets" / DAY).glob("*.jsonl")}
    assert first == second
    leftovers = [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []


def test_blocking_credential_check_fails_when_the_filter_misses_a_secret(tmp_path: Path) -> None:
    """elizaOS's five patterns do not know Stripe keys; the independent re-scan does, and fails the run."""
    resources = layer_resources(
        FileTrajectorySource(path=str(write_stripe_leak_day(tmp_path / "in"))),
        PrivacySettings(profile="elizaos", env_secrets="NONE"),
        DataStore(root=str(tmp_path / "data")),
    )
    result = _run(resources)
    assert not result.success
    failed = {
        (e.asset_key.to_user_string(), e.check_name)
        for e in result.get_asset_check_evaluations()
        if not e.passed
    }
    assert failed == {("response", "no_credentials")}
    evaluation = next(e for e in result.get_asset_check_evaluations() if not e.passed)
    assert evaluation.metadata["findings_by_type"].value == {"Stripe Access Key": 1}
    assert evaluation.metadata["inspected"].value.startswith("while exporting")  # found where it was made
    assert STRIPE_KEY not in json.dumps(
        [str(e) for e in result.all_events], default=str
    )  # the preview was masked, the check reports only types and places

    resources["training_pipeline_privacy"] = PrivacySettings(profile="strict", env_secrets="NONE")
    strict = _run(resources)
    assert strict.success  # the default profile redacts it, and the check agrees


def test_a_day_reaches_the_shared_storage_only_once_its_checks_pass(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    resources = layer_resources(
        FileTrajectorySource(path=str(write_stripe_leak_day(tmp_path / "in"))),
        PrivacySettings(profile="elizaos", env_secrets="NONE"),
        DataStore(root=str(tmp_path / "data"), shared_url=f"file://{shared}"),
    )
    # the deployment also writes every dataset as Parquet: those folders travel with the day
    settings = load_settings(
        {"TRAINING_PIPELINE_SHARED_URL": f"file://{shared}", "TRAINING_PIPELINE_DATASET_FORMAT": "parquet"}
    )
    assets = daily_graph(settings)
    leaked = materialize(assets, partition_key=DAY, resources=resources, raise_on_error=False)
    assert not leaked.success
    assert not shared.exists()  # the blocking check stopped the copy: the secret never left the machine

    resources["training_pipeline_privacy"] = PrivacySettings(profile="strict", env_secrets="NONE")
    result = materialize(assets, partition_key=DAY, resources=resources)
    files = 0
    for layer in ("datasets", "trace_datasets"):
        local, copied = tmp_path / "data" / layer / DAY, shared / layer / DAY
        made = {p.relative_to(local): p.read_bytes() for p in local.rglob("*") if p.is_file()}
        assert {p.relative_to(copied): p.read_bytes() for p in copied.rglob("*") if p.is_file()} == made
        files += len(made)
    # the five datasets, their provenance ids, the summary, how they were inspected, the Parquet
    # folder; the day's trace datasets (none here: their summary says so)
    assert (shared / "datasets" / DAY / "parquet" / "response.parquet").is_file()
    assert (shared / "trace_datasets" / DAY / "trace_datasets_summary.json").is_file()
    copied = shared / "datasets" / DAY
    assert asset_metadata(result, "shared_datasets") == {
        "dagster/uri": f"file://{copied}",
        "url": f"file://{copied}",
        "trace_datasets": f"file://{shared / 'trace_datasets' / DAY}",
        "files": files,
    }


def test_the_shared_copy_is_part_of_the_daily_job_only_when_configured(tmp_path: Path) -> None:
    script = (
        "from training_pipeline.definitions import defs; "
        "print(defs.resolve_job_def('datasets_job').asset_layer.executable_asset_keys)"
    )
    keys = {}
    for url in ("", f"file://{tmp_path}"):
        env = {**os.environ, "TRAINING_PIPELINE_SHARED_URL": url}
        proc = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=REPO
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        keys[url] = "shared_datasets" in proc.stdout
    assert keys == {"": False, f"file://{tmp_path}": True}


def test_a_database_source_feeds_the_same_graph(tmp_path: Path) -> None:
    db = tmp_path / "eliza.db"
    engine = sa.create_engine(f"sqlite:///{db}")
    steps = json.dumps(
        [
            {
                "llmCalls": [
                    {"systemPrompt": "s", "userPrompt": "hi @alice", "response": "hello", "purpose": "reply"}
                ]
            }
        ]
    )
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "CREATE TABLE trajectories (id TEXT PRIMARY KEY, agent_id TEXT, start_time BIGINT,"
                " steps_json TEXT, metadata TEXT)"
            )
        )
        conn.execute(
            sa.text("INSERT INTO trajectories VALUES ('t1', 'a', 1795478500000, :s, '{}')"), {"s": steps}
        )
    result = _run(
        layer_resources(
            DatabaseTrajectorySource(url=f"sqlite:///{db}"),
            PrivacySettings(),
            DataStore(root=str(tmp_path / "data")),
        )
    )
    assert result.success
    assert asset_metadata(result, "response")["examples"] == 1
    assert asset_metadata(result, "trajectories")["source"] == f"database:sqlite:///{db}/trajectories"


def test_missing_upstream_partition_is_a_clear_failure(tmp_path: Path) -> None:
    result = materialize(
        [*DATASET_ASSETS],
        selection="filtered_trajectories",
        partition_key=DAY,
        resources=default_resources(load_settings({"TRAINING_PIPELINE_DATA": str(tmp_path)})),
        instance=DagsterInstance.ephemeral(),
        raise_on_error=False,
    )
    assert not result.success
    [failure] = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert "trajectories for 2026-11-24 is not materialised" in failure.event_specific_data.error.message


def test_cli_backfills_a_range_into_the_instance(tmp_path: Path, dagster_home: Path) -> None:
    env = {**os.environ, "DAGSTER_HOME": str(dagster_home), "TRAINING_PIPELINE_DATA": str(tmp_path / "data")}
    proc = cli(env, "materialize", "--start", "2026-11-23", "--end", "2026-11-25", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert [line["day"] for line in lines] == ["2026-11-23", "2026-11-24", "2026-11-25"]
    assert all(line["status"] == "ok" for line in lines)
    assert (dagster_home / "storage").is_dir()  # the SQLite run/event storage of dagster.yaml
    # what the run says as it goes, a line a day; Dagster's own log only with --verbose
    said = [line for line in proc.stderr.splitlines() if line.startswith("  daily_layers: ")]
    assert [line.split()[1] for line in said] == ["2026-11-23:", "2026-11-24:", "2026-11-25:"]
    assert "STEP_START" not in proc.stderr and "did not yield" not in proc.stderr

    train = cli(env, "train", "--task", "response", "--dry-run", "--backend", "atropos", cwd=tmp_path)
    assert train.returncode == 0, train.stderr[-3000:]
    record = json.loads(train.stdout[train.stdout.index("{") :])
    assert (record["status"], record["reason"], record["source"]) == ("succeeded", "dry run", "manual")
    assert record["window"] == ["2026-11-23", "2026-11-24", "2026-11-25"]
    # without --task: the task with the most examples at or over the threshold (should_respond: 325)
    chosen = cli(env, "train", "--dry-run", cwd=tmp_path)
    assert chosen.returncode == 0, chosen.stderr[-3000:]
    assert json.loads(chosen.stdout[chosen.stdout.index("{") :])["task"] == "should_respond"

    with instance_at(dagster_home) as instance:
        [run] = instance.get_runs(RunsFilter(job_name="datasets_job"))  # the three days in one run
        assert (
            run.tags["dagster/asset_partition_range_start"],
            run.tags["dagster/asset_partition_range_end"],
        ) == ("2026-11-23", "2026-11-25")
        assert {line["run_id"] for line in lines} == {run.run_id}
        training = instance.get_runs(RunsFilter(job_name="training_job"))
        assert sorted(r.tags["dagster/partition"] for r in training) == ["response", "should_respond"]
        assert all(r.is_success for r in training)
        materialized = instance.get_materialized_partitions(AssetKey("response"))
        assert materialized == {"2026-11-23", "2026-11-24", "2026-11-25"}


def test_an_unreachable_database_retries_the_step_then_fails_clearly(tmp_path: Path) -> None:
    source = DatabaseTrajectorySource(
        url="postgresql+psycopg://u:hunter2secret@127.0.0.1:1/eliza", retries=1, retry_wait_seconds=0
    )
    result = _run(
        layer_resources(
            source,
            PrivacySettings(),
            DataStore(root=str(tmp_path)),
        )
    )
    assert not result.success
    kinds = [e.event_type_value for e in result.all_events]
    assert "STEP_UP_FOR_RETRY" in kinds and "STEP_RESTARTED" in kinds
    [failure] = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    text = str(failure.event_specific_data.error.to_string())
    assert "is unavailable" in text and "hunter2secret" not in text


def test_blocking_personal_data_check_fails_a_file_with_personal_data_planted_after_the_write(
    tmp_path: Path,
) -> None:
    """The day's pass inspects each line as it writes it; a file changed since (its SHA-256 differs) is
    read again by the checks, and a customer's email and phone planted in it fail the blocking check,
    which names kinds and lines, never the values."""
    from dagster import AssetCheckKey, Definitions

    resources = default_resources(load_settings({"TRAINING_PIPELINE_DATA": str(tmp_path)}))
    instance = DagsterInstance.ephemeral()
    assert _run(resources, instance=instance).success
    path = tmp_path / "datasets" / DAY / TASK_FILE_NAMES["response"]
    planted = {
        "messages": [
            {"role": "system", "content": "You are Eliza."},
            {"role": "user", "content": "reach me at dana.whitfield@example.org or +44 20 7946 0958"},
            {"role": "model", "content": "Noted."},
        ]
    }
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(planted) + "\n")
    # the checks alone, as the UI runs them from an asset's checks tab
    job = Definitions(assets=DATASET_ASSETS, resources=resources).resolve_implicit_global_asset_job_def()
    checks = job.get_subset(
        asset_selection=set(),
        asset_check_selection={
            AssetCheckKey(AssetKey("response"), "no_personal_data"),
            AssetCheckKey(AssetKey("response"), "no_credentials"),
        },
    )
    result = checks.execute_in_process(partition_key=DAY, instance=instance, raise_on_error=False)
    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert evaluations["no_credentials"].passed
    failed = evaluations["no_personal_data"]
    assert not failed.passed and failed.metadata["inspected"].value == "now"
    assert failed.metadata["findings_by_kind"].value == {"EMAIL_ADDRESS": 1, "PHONE_NUMBER": 1}
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert failed.metadata["locations"].value == [f"line {lines} (user)"]
    events = json.dumps([str(e) for e in result.all_events], default=str)
    assert "dana.whitfield" not in events and "7946" not in events


def test_ids_the_redaction_changed_stay_apart_with_the_same_suffix_on_every_run(tmp_path: Path) -> None:
    """A messaging platform's users are their numbers, and so are their sessions' ids: under `strict`
    each is redacted, and a keyed suffix keeps the conversations apart in the stored days and the
    datasets' ids files (what splits by trajectory read). The key is made once in the data folder,
    readable by its owner alone; another run of the day gives the same ids."""
    folder = tmp_path / "in"
    folder.mkdir()
    calls = [{"purpose": "response", "systemPrompt": "s", "userPrompt": "hi", "response": "hello"}]
    lines = [
        {
            "trajectoryId": f"whatsapp:{number}",
            "startTime": 1_795_478_500_000 + n,
            "steps": [{"llmCalls": calls}],
        }
        for n, number in enumerate(["+14155550123", "+447911123456", "+4915112345678"])
    ]
    (folder / f"{DAY}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    data = tmp_path / "data"
    settings = load_settings({"TRAINING_PIPELINE_DATA": str(data), "TRAJECTORY_DIR": str(folder)})

    def ids() -> tuple[list[str], list[str]]:
        assert _run(default_resources(settings)).success
        stored = pq.read_table(data / "trajectories" / f"{DAY}.parquet").column("trajectory_id").to_pylist()
        sidecar = ids_path(data / "datasets" / DAY / TASK_FILE_NAMES["response"])
        return stored, [json.loads(line) for line in sidecar.read_text().splitlines()]

    stored, grouped = ids()
    assert len(set(stored)) == 3 and sorted(grouped) == sorted(stored)
    assert all(i.startswith("whatsapp:<PII:PHONE_NUMBER:1>~") for i in stored)
    assert not any(number in json.dumps(stored) for number in ("4155550123", "7911123456", "15112345678"))
    key = data / "keys" / "trajectory-id.key"
    assert key.stat().st_mode & 0o777 == 0o600
    assert ids() == (stored, grouped)
