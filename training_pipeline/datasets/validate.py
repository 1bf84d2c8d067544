"""Is a dataset file what a training backend expects? One `{"messages": [...]}` object per line."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from training_pipeline.privacy.scan import ScanReport, SecretScanner
from training_pipeline.workers import ordered_map

EXPECTED_ROLES = ["system", "user", "model"]


@dataclass
class ValidationResult:
    lines: int = 0
    errors: list[str] = field(default_factory=list)


def inspect_dataset_file(path: Path, scanner: SecretScanner) -> tuple[ValidationResult, ScanReport]:
    """Is every line `{"messages": [system, user, model]}` with string contents (errors name the
    line), and what does the scanner find in the messages: both in one read of the file."""
    result = ValidationResult()

    def texts() -> Iterator[tuple[str, str]]:
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                result.lines += 1
                try:
                    record = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    try:  # what orjson refuses but JSON allows (an escaped lone surrogate)
                        record = json.loads(raw)
                    except ValueError as err:
                        result.errors.append(f"line {number}: not JSON ({err})")
                        continue
                problem = _record_problem(record)
                if problem:
                    result.errors.append(f"line {number}: {problem}")
                messages = record.get("messages") if isinstance(record, dict) else None
                for message in messages if isinstance(messages, list) else ():
                    if isinstance(message, dict) and isinstance(message.get("content"), str):
                        yield f"line {number} ({message.get('role')})", message["content"]

    report = scanner.scan(texts())
    return result, report


Inspected = tuple[ValidationResult, ScanReport]
_worker_scanner: SecretScanner | None = None


def _start_scanner(env_secrets: tuple[str, ...]) -> None:
    global _worker_scanner
    _worker_scanner = SecretScanner(env_secrets)


def _inspect_in_worker(path: Path) -> Inspected:
    assert _worker_scanner is not None, "not a worker of the inspection pool"
    return inspect_dataset_file(path, _worker_scanner)


def inspect_dataset_files(
    paths: Sequence[Path], env_secrets: tuple[str, ...], workers: int
) -> list[Inspected]:
    """`inspect_dataset_file` of each path, in order: in this process with one scanner (its per-line
    cache shared by the files), or one file per worker of the bounded pool at a time (the largest
    first, so the others share the remaining workers while it runs; here while the workers start)."""
    workers = min(workers, len(paths))
    scanner = SecretScanner(env_secrets)  # here: alone, or while the pool's workers start
    largest_first = sorted(range(len(paths)), key=lambda i: -paths[i].stat().st_size)
    done = ordered_map(
        [paths[i] for i in largest_first],
        lambda path: inspect_dataset_file(path, scanner),
        workers,
        _inspect_in_worker,
        _start_scanner,
        (env_secrets,),
        start_method="forkserver",
    )
    by_index = dict(zip(largest_first, done, strict=True))
    return [by_index[i] for i in range(len(paths))]


def _record_problem(record: object) -> str | None:
    if not isinstance(record, dict) or set(record) != {"messages"}:
        return 'expected an object with exactly the key "messages"'
    messages = record["messages"]
    if (
        not isinstance(messages, list)
        or [m.get("role") if isinstance(m, dict) else None for m in messages] != EXPECTED_ROLES
    ):
        return f"messages must have the roles {EXPECTED_ROLES} in that order"
    for message in messages:
        if set(message) != {"role", "content"} or not isinstance(message["content"], str):
            return "each message needs exactly a role and a string content"
    return None


def message_texts(path: Path) -> Iterator[tuple[str, str]]:
    """(location, content) of every message in a dataset file, for scanning; malformed lines are
    skipped here (`inspect_dataset_file` reports them)."""
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                messages = json.loads(line)["messages"]
            except (ValueError, KeyError, TypeError):
                continue
            for message in messages if isinstance(messages, list) else ():
                if isinstance(message, dict) and isinstance(message.get("content"), str):
                    yield f"line {number} ({message.get('role')})", message["content"]
