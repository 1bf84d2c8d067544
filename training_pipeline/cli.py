"""`training-pipeline` (also `python -m training_pipeline`): the pipeline from a shell."""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from training_pipeline import jscompat
from training_pipeline.atomic import atomic_open
from training_pipeline.datasets.build import build_datasets
from training_pipeline.datasets.formats import FORMATS, write_format
from training_pipeline.datasets.training_tasks import TASKS
from training_pipeline.privacy.entities import EntityDirectory
from training_pipeline.privacy.filter import PrivacyFilter, secret_env_values
from training_pipeline.privacy.id_key import filter_key
from training_pipeline.privacy.personal import kinds_from_setting
from training_pipeline.samples import day_of_trajectories
from training_pipeline.settings import settings
from training_pipeline.traces.routes import TraceRouting
from training_pipeline.training.policy import BACKENDS


def _personal_kinds(text: str) -> frozenset[str]:
    try:
        return kinds_from_setting(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _trace_routes(text: str) -> TraceRouting:
    try:
        return TraceRouting.parse(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _receive(args: argparse.Namespace) -> int:
    import signal
    import threading

    from training_pipeline.traces.receiver import ReceiverSettings, serve

    folder = args.out
    if folder is None:
        if not settings().trajectory_dir:
            raise ValueError("say where traces go: --out FOLDER, or set TRAJECTORY_DIR (then FOLDER/otlp)")
        folder = Path(settings().trajectory_dir) / "otlp"
    token = None
    if args.token_env:
        token = os.environ.get(args.token_env)
        if not token:
            raise ValueError(f"--token-env {args.token_env}: that environment variable is not set")
    server = serve(
        ReceiverSettings(
            folder.resolve(),
            args.host,
            args.port,
            token,
            args.max_request_bytes,
            args.max_pending,
            args.min_free_bytes,
        )
    )
    host, port = server.server_address[:2]
    print(f"receiving OTLP traces on http://{host}:{port}/v1/traces into {folder}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    print(f"stopped: {server.receiver.stored} requests stored", flush=True)  # type: ignore[attr-defined]
    return 0


def _build(args: argparse.Namespace) -> int:
    from training_pipeline import SAMPLE_ENTITIES, SAMPLE_TRAJECTORIES
    from training_pipeline.trajectories.remote import local_input

    source = local_input(args.input)
    anonymizer = args.anonymizer
    if anonymizer is None and source.resolve().is_relative_to(SAMPLE_TRAJECTORIES.resolve()):
        anonymizer = SAMPLE_ENTITIES  # the bundled sample's people, as `make demo` uses them
    directory = EntityDirectory.load(anonymizer) if anonymizer else None
    env_secrets = secret_env_values(args.privacy_profile, names=args.env_secrets)
    configured = settings().id_key
    id_key = filter_key(
        args.privacy_profile, configured.get_secret_value() if configured else None, Path(settings().data)
    )
    privacy = PrivacyFilter(args.privacy_profile, directory, env_secrets, args.personal_data, id_key=id_key)
    routing = args.trace_routes or TraceRouting.parse(settings().trace_routes)
    shown = args.progress if args.progress is not None else sys.stderr.isatty()
    result = build_datasets(
        source,
        args.out_dir,
        privacy,
        workers=args.workers,
        routing=routing,
        progress=sys.stderr if shown else None,
    )
    line = result.as_line()
    written = write_format(args.out_dir, args.dataset_format)
    if written:
        line["formatted"] = {args.dataset_format: [str(path.relative_to(args.out_dir)) for path in written]}
    print(json.dumps(line, separators=(",", ":")))
    return 0


def _generate(args: argparse.Namespace) -> int:
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for offset in range(args.days):
        day = args.start + timedelta(days=offset)
        path = args.out_dir / f"{day.isoformat()}.jsonl"
        with atomic_open(path) as handle:
            for trajectory in day_of_trajectories(day, args.per_day, args.seed):
                handle.write(jscompat.dumps(trajectory) + "\n")
        print(path)
    return 0


def _day(text: str) -> date:
    """A UTC day as the CLI takes it, or argparse's one-line error saying the form."""
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a day: use YYYY-MM-DD, e.g. 2026-11-23") from None


def _days(start: date, end: date) -> list[str]:
    """The days from `start` to `end`, each a partition of the daily assets: from the deployment's
    first day (`TRAINING_PIPELINE_START_DATE`, else the source's) to yesterday (UTC), the last day that
    has ended."""
    if end < start:
        raise ValueError(f"--end {end} is before --start {start}")
    from training_pipeline.trajectories.earliest import first_day

    first = first_day(settings())
    last = datetime.now(UTC).date() - timedelta(days=1)
    if start < first:
        raise ValueError(
            f"{start} is before the first daily partition, {first}: materialise {first} to {last}, "
            "or set TRAINING_PIPELINE_START_DATE earlier"
        )
    if end > last:
        raise ValueError(f"{end} has not ended yet (UTC): the daily partitions run from {first} to {last}")
    return [(start + timedelta(days=n)).isoformat() for n in range((end - start).days + 1)]


def _instance():
    """The Dagster instance at $DAGSTER_HOME, where runs are recorded for the UI to show."""
    from dagster import DagsterInstance  # only the commands that need Dagster pay for importing it

    if not os.environ.get("DAGSTER_HOME"):
        raise ValueError("DAGSTER_HOME is not set: point it at a folder holding this project's dagster.yaml")
    return DagsterInstance.get()


#: `--verbose`: Dagster's log of a run as it goes, and the traceback of an error
_verbose = False
#: this project's folder, where the command found it (`find_project`): None, not set up
_project: Path | None = None


def _run_log_level() -> str:
    """What of Dagster's log a run prints here: all of it with `--verbose`; else nothing, and a failed
    run is one line (`_run_job`), its full log on the run's page in the UI."""
    return "INFO" if _verbose else "CRITICAL"


def _run_job(instance, job_name: str, tags: dict[str, str], run_config: dict[str, Any], here):
    """`job_name` through the deployment when it is up (the run can be re-executed from the UI), else
    by `here()` in this process, said on stderr (`training_pipeline.launch`); what the run says as it
    goes is printed as it goes (`RunProgress`). `tags` gains the progress tag: `here` must run with
    them."""
    import contextlib
    import uuid

    from training_pipeline.launch import PROGRESS_TAG, RunProgress, run_job

    workspace = _project / "workspace.yaml" if job_name and _project is not None else None
    key = uuid.uuid4().hex
    tags[PROGRESS_TAG] = key
    # with --verbose, Dagster's own console log says it all already
    with contextlib.nullcontext() if _verbose else RunProgress(key):
        finished = run_job(
            instance,
            job_name,
            tags=tags,
            run_config=run_config,
            workspace=workspace,
            in_process=here,
            start_daemon=_own_instance(),
        )
    if not finished.launched:
        why = (
            "its task file is not one of the code location's"
            if not job_name
            else "no project folder found (run it from one, or where its venv is)"
            if workspace is None
            else "no daemon of this instance is up, and the CLI starts one only on the project's own "
            "instance (var/dagster_home)"
        )
        print(
            f"training-pipeline: note: run {finished.run_id} ran in this process ({why}): the UI shows it "
            "but cannot re-execute it",
            file=sys.stderr,
        )
    if not finished.success and not _verbose:
        print(
            f"training-pipeline: error: run {finished.run_id} failed: {finished.failure or 'see its log'} "
            "(its full log is on the run's page in the UI; --verbose prints it here)",
            file=sys.stderr,
        )
    return finished


def _own_instance() -> bool:
    """Whether the instance is the project's own (`var/dagster_home`, what `make demo` made): the CLI
    may start Dagster's daemon on it for a run (`training_pipeline.launch`); on anyone else's it may not."""
    if _project is None:
        return False
    home = Path(os.environ.get("DAGSTER_HOME", "")).resolve()
    return home == project_home(_project).resolve()


def _materialize_days(days: list[str]) -> bool:
    """Run `datasets_job` over `days` (consecutive) on the Dagster instance at $DAGSTER_HOME, as one run
    (the daily assets' single-run backfill policy); a line per day. Runs show in the UI."""
    from collections import defaultdict

    from dagster import build_reconstructable_job, execute_job

    job = build_reconstructable_job(
        "training_pipeline.definitions", "resolve_job", reconstructable_args=("datasets_job",)
    )
    if len(days) == 1:
        partitions = {"dagster/partition": days[0]}
    else:
        partitions = {
            "dagster/asset_partition_range_start": days[0],
            "dagster/asset_partition_range_end": days[-1],
        }
    run_config = {"loggers": {"console": {"config": {"log_level": _run_log_level()}}}}
    tags = {**partitions, "training_pipeline/launched_by": "cli"}
    with _instance() as instance:
        result = _run_job(
            instance,
            "datasets_job",
            tags,
            run_config,
            lambda: execute_job(job, instance, run_config=run_config, tags=tags).run_id,
        )
    counts: dict[str, dict[str, Any]] = defaultdict(dict)
    records_in: dict[str, Any] = {}
    for materialization in result.materializations:
        day = str(materialization.partition)
        if "records_in" in materialization.metadata:
            records_in[day] = materialization.metadata["records_in"].value
        if "examples" in materialization.metadata:
            task = materialization.asset_key.path[-1]
            counts[day][task] = materialization.metadata["examples"].value
    failed_checks: dict[str, list[str]] = defaultdict(list)
    for evaluation in result.check_evaluations:
        if not evaluation.passed:
            failed_checks[str(evaluation.partition)].append(
                f"{evaluation.asset_key.to_user_string()}.{evaluation.check_name}"
            )
    for day in days:
        status = "ok" if result.success and not failed_checks[day] else "FAILED"
        if status == "ok" and records_in.get(day) == 0:
            status = "empty"  # not an error (a quiet day), but never a silent zero
            print(
                f"training-pipeline: warning: {day}: the trajectory source held no record of this day "
                "(check TRAJECTORY_DIR or TRAJECTORY_DB_URL)",
                file=sys.stderr,
            )
        print(
            json.dumps(
                {
                    "day": day,
                    "status": status,
                    "run_id": result.run_id,
                    "examples": counts[day],
                    "failed_checks": failed_checks[day],
                }
            )
        )
    return result.success and not any(failed_checks.values())


def _materialize(args: argparse.Namespace) -> int:
    return 0 if _materialize_days(_days(args.start, args.end or args.start)) else 1


def _demo(args: argparse.Namespace) -> int:
    from resources.defaults import default_resources
    from training_pipeline import SAMPLE_TRAJECTORIES

    days = sorted(path.stem for path in SAMPLE_TRAJECTORIES.glob("*.jsonl"))
    ok = _materialize_days(days)
    store = default_resources(settings())["training_pipeline_store"]
    print(f"\nDatasets for {days[0]} .. {days[-1]}: {Path(store.root).resolve() / 'datasets'}/<day>/")
    cli = _cli_path()
    steps = [
        ("make ui", "the UI: http://127.0.0.1:3000"),
        (f"{cli} train --task response --dry-run", "a training run, recorded"),
        (f"{cli} runs list", "the runs recorded so far"),
    ]
    width = max(len(command) for command, _ in steps)
    print("Next, from this folder:")
    for command, what in steps:
        print(f"  {command:<{width}}  # {what}")
    return 0 if ok else 1


def _cli_path() -> str:
    """How to call this program from the current folder (`.venv/bin/training-pipeline` after `make`)."""
    program = Path(sys.argv[0])
    if program.name != "training-pipeline":
        return "training-pipeline"
    try:
        return str(program.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(program)


def _run_store():
    from resources.defaults import default_resources

    return default_resources(settings())["training_pipeline_store"].runs()


def _runs_list(args: argparse.Namespace) -> int:
    records = _run_store().list(limit=args.limit)
    if not records:
        data = Path(settings().data).resolve()
        print(
            f"no training runs recorded yet in {data} (TRAINING_PIPELINE_DATA; from the project's folder "
            "it is var/data there)"
        )
    for record in records:
        reason = f"  ({record.reason})" if record.reason else ""
        print(
            f"{record.run_id}  {record.started_at}  {record.status:<9} {record.task or '-':<17} "
            f"{record.backend or '-':<8} {record.source:<9} {record.dataset_size:>6} examples{reason}"
        )
    return 0


def _runs_show(args: argparse.Namespace) -> int:
    record = _run_store().load(args.run_id)
    if record is None:
        raise ValueError(
            f"no run record {args.run_id!r}; `training-pipeline runs list` shows the recorded runs"
        )
    print(record.to_json(), end="")
    return 0


def _train(args: argparse.Namespace) -> int:
    """Launch `training_job` by hand on $DAGSTER_HOME (bypasses auto_train, as elizaOS's manual path)."""
    from training_pipeline.definitions import defs

    config = {
        "dry_run": args.dry_run,
        "source": "manual",
        **({"backend": args.backend} if args.backend else {}),
    }
    with _instance() as instance:
        task = _training_name(args.task) if args.task else _select_task(instance, defs)
        if task is None:
            print("skipped: no task reached its trigger threshold and none was specified explicitly")
            return 0
        run_config = {
            "ops": {"training_run": {"config": config}},
            "loggers": {"console": {"config": {"log_level": _run_log_level()}}},
        }
        tags = {"training_pipeline/source": "manual", "dagster/partition": task}
        result = _run_job(
            instance,
            "training_job",
            tags,
            run_config,
            lambda: (
                defs.resolve_job_def("training_job")
                .execute_in_process(
                    partition_key=task,
                    instance=instance,
                    raise_on_error=False,
                    run_config=run_config,
                    # the partition is the argument's; the others as a launched run has them
                    tags={k: v for k, v in tags.items() if k != "dagster/partition"},
                )
                .run_id
            ),
        )
    record = _run_store().find(result.run_id, task)  # this run's record, not the latest of any run
    if record is not None:
        print(record.to_json(), end="")
    return 0 if result.success else 1


def _training_name(text: str) -> str:
    """A training partition: one of elizaOS's five tasks, or a trace dataset the routes can fill (read
    once the settings are, so a mistake in them is named first)."""
    names = [*TASKS, *(n for n in TraceRouting.parse(settings().trace_routes).datasets if n not in TASKS)]
    if text not in names:
        raise ValueError(f"--task {text!r} is not trained here; choose from {', '.join(names)}")
    return text


def _select_task(instance, defs) -> str | None:
    """elizaOS's selectTask without an explicit task, over each task's latest window of days."""
    from dagster import AssetKey

    from training_pipeline.datasets.training_tasks import TASK_FILE_NAMES
    from training_pipeline.training.policy import select_task

    store, training = defs.resources["training_pipeline_store"], defs.resources["training_pipeline_policy"]
    counts = {}
    for task in TASKS:
        days = sorted(instance.get_materialized_partitions(AssetKey(task)))[-training.window_days :]
        files = [store.datasets(day) / TASK_FILE_NAMES[task] for day in days]
        counts[task] = sum(sum(1 for _ in path.open("rb")) for path in files if path.is_file())
    return select_task(training.policy(), None, counts)


def _task_file(text: str) -> Path:
    """A task file's path, or the name of a bundled example (`reply-to-dana`) or of a task in
    `TRAINING_PIPELINE_TASKS_DIR`, with or without `.json`."""
    path = Path(text)
    if path.exists():
        return path
    from training_pipeline.tasks import EXAMPLE_TASKS

    folders = [EXAMPLE_TASKS, *([Path(settings().tasks_dir)] if settings().tasks_dir else [])]
    name = text.removesuffix(".json")
    if "/" not in name:
        for folder in folders:
            if (folder / f"{name}.json").is_file():
                return folder / f"{name}.json"
    known = sorted({p.stem for folder in folders if folder.is_dir() for p in folder.glob("*.json")})
    raise argparse.ArgumentTypeError(
        f"no task file {text!r}, nor a task of that name (known: {', '.join(known)})"
    )


def _task_validate(args: argparse.Namespace) -> int:
    from training_pipeline.tasks.registry import build_registry
    from training_pipeline.tasks.task import load_task

    task = load_task(args.file, build_registry())
    print(f"{args.file}: valid task {task.name!r} ({len(task.steps)} steps, job {task.job_name})")
    for step in task.steps:
        after = ", ".join(task.upstream[step.id]) or "-"
        print(f"  {step.id:<20} {step.type:<32} after: {after}")
    return 0


def parse_overrides(items: list[str], step_fields: dict[str, set[str]]) -> dict[str, Any]:
    """`key=value` pairs into `task_overrides` config: `STEP.FIELD=...` (STEP a step id, FIELD one of
    its fields) replaces that step's field for this run; any other key goes to `user_overrides`.
    Values are JSON when they parse, else text."""
    values: dict[str, Any] = {}
    step_params: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--override {item!r}: expected key=value")
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text
        step_id, dot, field = key.partition(".")
        if dot and step_id in step_fields:
            if field not in step_fields[step_id]:
                raise ValueError(f"--override {key}: step {step_id!r} has no field {field!r}")
            step_params.setdefault(step_id, {})[field] = value
        else:
            values[key] = value
    return {"values": values, "step_params": step_params}


def _task_run(args: argparse.Namespace) -> int:
    """Run a task file as a Dagster job on $DAGSTER_HOME (the run shows in the UI)."""
    from dagster import build_reconstructable_job, execute_job

    from assets.tasks.jobs import task_files
    from resources.defaults import default_resources
    from training_pipeline.tasks.registry import build_registry
    from training_pipeline.tasks.task import load_task

    path = args.file.resolve()
    task = load_task(path, build_registry())
    fields = {step.id: set(type(step).model_fields) - {"id"} for step in task.steps}
    overrides = parse_overrides(args.override, fields)
    job = build_reconstructable_job(
        "assets.tasks.jobs", "job_for_file", reconstructable_args=(str(path), args.executor)
    )
    run_config = {
        "resources": {"training_pipeline_task_overrides": {"config": overrides}},
        "loggers": {"console": {"config": {"log_level": _run_log_level()}}},
    }
    tags = {"training_pipeline/launched_by": "cli"}
    with _instance() as instance:
        # a task file of the code location (bundled, or in TRAINING_PIPELINE_TASKS_DIR) on its executor
        # is its job there; any other file runs here
        located = path in {f.resolve() for f in task_files(settings().tasks_dir)}
        launchable = located and args.executor == settings().task_executor
        result = _run_job(
            instance,
            task.job_name if launchable else "",
            tags,
            run_config,
            lambda: execute_job(job, instance, run_config=run_config, tags=tags).run_id,
        )
        run_id = result.run_id
    context_file = (
        default_resources(settings())["training_pipeline_store"].task_runs() / run_id / "context.json"
    )
    final = json.loads(context_file.read_text()) if context_file.is_file() else {}
    metadata = final.get("metadata", {})
    summary = {
        "run_id": run_id,
        "status": "succeeded" if result.success else "failed",
        "scores": {k: v["score"] for k, v in metadata.get("verifications", {}).items()},
        "failed_steps": [
            {k: f[k] for k in ("step_id", "error", "is_fatal")} for f in metadata.get("failed_steps", [])
        ],
        "retry_resets": len(metadata.get("retry_resets", [])),
        "context": str(context_file),
    }
    print(json.dumps(summary, indent=2))
    return 0 if result.success else 1


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="training-pipeline", description=__doc__)
    root.add_argument(
        "--verbose",
        action="store_true",
        help="print Dagster's log of each run as it goes, and an error's traceback (anywhere on the line)",
    )
    commands = root.add_subparsers(dest="command", required=True)

    build = commands.add_parser(
        "build-datasets",
        help="privacy-filter trajectories and write elizaOS's per-task JSONL datasets (no Dagster)",
    )
    build.add_argument(
        "input",
        help="a .jsonl/.json export file, an OTLP trace file, or a directory of them; or any fsspec URL of "
        "one (s3://bucket/traces/, gs://…, sftp://…: mirrored into the cache folder first)",
    )
    build.add_argument("out_dir", type=Path)
    build.add_argument("--anonymizer", type=Path, help="entity directory: reference-runner JSON or CSV")
    build.add_argument("--privacy-profile", choices=("strict", "elizaos"), default="strict")
    build.add_argument(
        "--env-secrets",
        default="*",
        metavar="GLOB",
        help="which environment variables may hold secrets to redact (default: all; the reference "
        "runner uses 'REFERENCE_SECRET_*')",
    )
    build.add_argument(
        "--personal-data",
        type=_personal_kinds,
        default=None,
        metavar="KINDS",
        help="kinds of personal data strict redacts: all, none, or a comma-separated list such as "
        "EMAIL_ADDRESS,PHONE_NUMBER (default: TRAINING_PIPELINE_PERSONAL_DATA, else all)",
    )
    build.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="processes to filter and build with (default: all cores)",
    )
    build.add_argument(
        "--trace-routes",
        type=_trace_routes,
        metavar="PATTERN=DATASET,…",
        help="which dataset a trace's LLM call feeds, by its agent's name (shell globs, first match "
        "wins; default: TRAINING_PIPELINE_TRACE_ROUTES, else tool_use when tools were offered, else "
        "chat). docs/traces.md",
    )
    build.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        help="show on stderr how far the build has gone: input read, records, rate, time left (default: "
        "when stderr is a terminal)",
    )
    build.add_argument(
        "--dataset-format",
        choices=FORMATS,
        default="elizaos",
        help="also write every dataset as OpenAI chat JSONL (openai-chat/) or Parquet with a dataset card "
        "(parquet/); elizaos (the default): the files as they are. docs/traces.md",
    )
    build.set_defaults(run=_build)

    generate = commands.add_parser("generate", help="write realistic synthetic trajectories, a file per day")
    generate.add_argument("out_dir", type=Path)
    generate.add_argument("--start", type=_day, required=True, help="first UTC day")
    generate.add_argument("--days", type=int, default=1)
    generate.add_argument("--per-day", type=int, default=100)
    generate.add_argument("--seed", type=int, default=0)
    generate.set_defaults(run=_generate)

    materialize = commands.add_parser(
        "materialize", help="run datasets_job for a day or a range of days (a backfill) on $DAGSTER_HOME"
    )
    materialize.add_argument("--start", type=_day, required=True)
    materialize.add_argument("--end", type=_day, help="last day, inclusive (default: --start)")
    materialize.set_defaults(run=_materialize)

    runs = commands.add_parser("runs", help="training run records").add_subparsers(dest="runs", required=True)
    runs_list = runs.add_parser("list", help="newest first")
    runs_list.add_argument("--limit", type=int, default=20)
    runs_list.set_defaults(run=_runs_list)
    runs_show = runs.add_parser("show", help="one record as JSON")
    runs_show.add_argument("run_id")
    runs_show.set_defaults(run=_runs_show)

    train = commands.add_parser("train", help="launch training_job for a task now (manual source)")
    train.add_argument(
        "--task",
        help="one of elizaOS's tasks or a trace dataset (chat, tool_use, a route's); default: the elizaOS "
        "task with the most examples at or over its threshold",
    )
    train.add_argument("--backend", choices=BACKENDS)
    train.add_argument("--dry-run", action="store_true")
    train.set_defaults(run=_train)

    tasks = commands.add_parser("task", help="task files (JSON lists of steps)").add_subparsers(
        dest="task", required=True
    )
    validate = tasks.add_parser("validate", help="check a task file without running anything")
    validate.add_argument("file", type=_task_file, help="a task file, or a bundled task's name")
    validate.set_defaults(run=_task_validate)
    task_run = tasks.add_parser("run", help="run a task file as a Dagster job on $DAGSTER_HOME")
    task_run.add_argument("file", type=_task_file, help="a task file, or a bundled task's name")
    task_run.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="STEP.FIELD=VALUE replaces a step's field for this run; other keys land in "
        "metadata.user_overrides (values are JSON when they parse). Repeatable.",
    )
    task_run.add_argument(
        "--executor",
        choices=("async", "multiprocess", "in_process", "celery"),
        default="async",
        help="async (default): steps overlap in one process; multiprocess: a process per step, for "
        "CPU-heavy steps; celery: steps on the workers of CELERY_BROKER_URL",
    )
    task_run.set_defaults(run=_task_run)

    receiver = commands.add_parser(
        "otlp-receiver",
        help="receive OTLP/HTTP traces (POST /v1/traces) into a trace folder the daily assets read",
    )
    receiver.add_argument(
        "--out", type=Path, help="the trace folder (default: $TRAJECTORY_DIR/otlp, read with the exports)"
    )
    receiver.add_argument("--host", default="127.0.0.1", help="where to listen (default: loopback only)")
    receiver.add_argument("--port", type=int, default=4318, help="OTLP/HTTP's port (default: 4318)")
    receiver.add_argument(
        "--token-env",
        metavar="NAME",
        help="the environment variable holding the bearer token every request must carry (required "
        "beyond loopback; never the token itself on the command line, where `ps` shows it)",
    )
    receiver.add_argument("--max-request-bytes", type=int, default=16 << 20)
    receiver.add_argument(
        "--max-pending", type=int, default=32, help="requests written at once; past it, 429"
    )
    receiver.add_argument(
        "--min-free-bytes", type=int, default=256 << 20, help="free disk to keep; below it, 503"
    )
    receiver.set_defaults(run=_receive)

    demo = commands.add_parser("demo", help="materialise the whole graph for the bundled sample days")
    demo.set_defaults(run=_demo)
    return root


def find_project(cwd: Path, prefix: Path | None = None) -> Path | None:
    """This project's folder: `cwd` when it holds `dagster.yaml` and `workspace.yaml`; else the nearest
    folder above it, or the one holding the virtual environment (`prefix`, `sys.prefix`) or this
    package, whose `workspace.yaml` loads `training_pipeline` (another Dagster project's is not ours)."""
    if (cwd / "dagster.yaml").is_file() and (cwd / "workspace.yaml").is_file():
        return cwd
    prefix = Path(sys.prefix) if prefix is None else prefix
    candidates = [*cwd.parents, prefix.parent, Path(__file__).resolve().parents[1]]
    for folder in candidates:
        workspace = folder / "workspace.yaml"
        try:
            ours = (folder / "dagster.yaml").is_file() and "training_pipeline" in workspace.read_text("utf-8")
        except OSError:
            continue
        if ours:
            return folder
    return None


def project_home(project: Path) -> Path:
    """The project's own Dagster instance, where `make demo` puts its runs."""
    return project / "var" / "dagster_home"


def project_defaults(project: Path | None) -> None:
    """Run from this project's folder or anywhere once it is set up (`find_project`), every command
    finds the instance and data `make demo` made (`var/dagster_home`, `var/data`) without exports.
    Variables already set win. (They are set for the child processes Dagster starts, which read them.)"""
    if project is None:
        return
    if not os.environ.get("DAGSTER_HOME"):
        home = project_home(project)
        home.mkdir(parents=True, exist_ok=True)
        if not (home / "dagster.yaml").exists():
            (home / "dagster.yaml").symlink_to(project / "dagster.yaml")
        os.environ["DAGSTER_HOME"] = str(home)
    if not os.environ.get("TRAINING_PIPELINE_DATA"):
        os.environ["TRAINING_PIPELINE_DATA"] = str(project / "var" / "data")


def main(argv: list[str] | None = None) -> int:
    global _verbose, _project
    given = list(sys.argv[1:] if argv is None else argv)
    _verbose = "--verbose" in given  # anywhere on the line, not only before the command
    # before parsing: an argument's type may read the settings (a task's name, `_task_file`), which
    # are read once, so the project's defaults must be in the environment by then
    _project = find_project(Path.cwd())
    project_defaults(_project)
    args = parser().parse_args(
        [*(["--verbose"] if _verbose else []), *(a for a in given if a != "--verbose")]
    )
    from training_pipeline.launch import LaunchFailed

    try:
        return args.run(args)
    except (FileNotFoundError, ValueError, LaunchFailed) as err:
        print(f"training-pipeline: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # a run of a daemon the CLI started is cancelled on the way (`launch`)
        print("training-pipeline: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`| head`): nothing more to say, and no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as err:  # Dagster's own errors among them: one line, the traceback on request
        if _verbose:
            raise
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        print(
            f"training-pipeline: error: {type(err).__name__}: {first} (--verbose for the traceback)",
            file=sys.stderr,
        )
        return 1
