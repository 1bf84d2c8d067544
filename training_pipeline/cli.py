"""`training-pipeline` (also `python -m training_pipeline`): the pipeline from a shell."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date, timedelta
from pathlib import Path

from training_pipeline import jscompat
from training_pipeline.atomic import atomic_open

from training_pipeline.datasets.build import build_datasets
from training_pipeline.privacy.entities import EntityDirectory
from training_pipeline.privacy.filter import PrivacyFilter, secret_env_values
from training_pipeline.samples import day_of_trajectories


def _build(args: argparse.Namespace) -> int:
    directory = EntityDirectory.load(args.anonymizer) if args.anonymizer else None
    env_secrets = secret_env_values(args.privacy_profile, names=args.env_secrets)
    privacy = PrivacyFilter(args.privacy_profile, directory, env_secrets)
    result = build_datasets(args.input, args.out_dir, privacy)
    print(json.dumps(result.as_line(), separators=(",", ":")))
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


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="training-pipeline", description=__doc__)
    commands = root.add_subparsers(dest="command", required=True)

    build = commands.add_parser(
        "build-datasets",
        help="privacy-filter trajectories and write elizaOS's per-task JSONL datasets (no Dagster)",
    )
    build.add_argument("input", type=Path, help="a .jsonl/.json export file or a directory of them")
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
    build.set_defaults(run=_build)

    generate = commands.add_parser("generate", help="write realistic synthetic trajectories, a file per day")
    generate.add_argument("out_dir", type=Path)
    generate.add_argument("--start", type=date.fromisoformat, required=True, help="first UTC day")
    generate.add_argument("--days", type=int, default=1)
    generate.add_argument("--per-day", type=int, default=100)
    generate.add_argument("--seed", type=int, default=0)
    generate.set_defaults(run=_generate)
    return root


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except (FileNotFoundError, ValueError) as err:
        print(f"training-pipeline: error: {err}", file=sys.stderr)
        return 2
