"""Is a dataset file what a training backend expects? One `{"messages": [...]}` object per line."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from training_pipeline.privacy.personal import ANALYZER_MODULE
from training_pipeline.privacy.scan import PERSONAL_PREFIX, ScanReport, SecretScanner
from training_pipeline.workers import ordered_map

EXPECTED_ROLES = ["system", "user", "model"]


@dataclass
class ValidationResult:
    lines: int = 0
    errors: list[str] = field(default_factory=list)


#: what the checks learn from one line of a dataset file: how many messages were scanned, what is wrong
#: with the line (None: nothing), and for each message with a finding its role and the secret types
#: found (never the secret)
LineInspection = tuple[int, str | None, tuple[tuple[str, tuple[str, ...]], ...]]
Inspected = tuple[ValidationResult, ScanReport]
#: a line with a problem or a finding, among consecutive lines: (its index among them, problem, hits)
NotableLine = tuple[int, str | None, tuple[tuple[str, tuple[str, ...]], ...]]


def inspect_line(raw: bytes, scanner: SecretScanner) -> LineInspection:
    """Is the line `{"messages": [system, user, model]}` with string contents, and what does the
    scanner find in its messages. Pure: a worker can inspect lines as it makes them."""
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:  # what orjson refuses but JSON allows (an escaped lone surrogate)
            record = json.loads(raw)
        except ValueError as err:
            return 0, f"not JSON ({err})", ()
    return inspect_record(record, scanner)


def inspect_record(record: object, scanner: SecretScanner) -> LineInspection:
    """`inspect_line` of a line already parsed, or of the object a line is made from: JSON gives back
    the same object (lone surrogates included, escaped and read back), so the worker that makes a line
    need not parse it again."""
    messages = record.get("messages") if isinstance(record, dict) else None
    texts, hits = 0, []
    for message in messages if isinstance(messages, list) else ():
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            texts += 1
            found = scanner.find(content)
            personal = scanner.find_personal(content)
            if found or personal:
                hits.append((str(message.get("role")), (*(kind for kind, _ in found), *personal)))
    return texts, _record_problem(record), tuple(hits)


@dataclass
class FileInspection:
    """A dataset file's inspection, gathered line by line in file order."""

    validation: ValidationResult = field(default_factory=ValidationResult)
    scan: ScanReport = field(default_factory=ScanReport)

    def record(self, line: LineInspection) -> None:
        texts, problem, hits = line
        self.extend(1, texts, [(0, problem, hits)] if problem or hits else [])

    def extend(self, lines: int, texts: int, notable: Iterable[NotableLine]) -> None:
        """`record` of `lines` lines in a row that scanned `texts` messages in all, given only the lines
        with something to say (`notable`, numbered from 0): what a worker gathers of a share's lines."""
        first = self.validation.lines + 1
        for index, problem, hits in notable:
            number = first + index
            if problem:
                self.validation.errors.append(f"line {number}: {problem}")
            for role, kinds in hits:
                self.scan.findings.update(kinds)
                place = f"line {number} ({role})"
                if (
                    any(k.startswith(PERSONAL_PREFIX) for k in kinds)
                    and len(self.scan.personal_locations) < 50
                ):
                    self.scan.personal_locations.append(place)
                if any(not k.startswith(PERSONAL_PREFIX) for k in kinds) and len(self.scan.locations) < 50:
                    self.scan.locations.append(place)
        self.validation.lines += lines
        self.scan.texts_scanned += texts

    def to_json(self) -> dict[str, Any]:
        return {
            "lines": self.validation.lines,
            "errors": self.validation.errors,
            "texts_scanned": self.scan.texts_scanned,
            "findings": dict(self.scan.findings),
            "locations": self.scan.locations,
            "personal_locations": self.scan.personal_locations,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Inspected:
        return (
            ValidationResult(data["lines"], list(data["errors"])),
            ScanReport(
                data["texts_scanned"],
                Counter(data["findings"]),
                list(data["locations"]),
                list(data["personal_locations"]),
            ),
        )


def inspect_dataset_file(path: Path, scanner: SecretScanner) -> Inspected:
    """Is every line `{"messages": [system, user, model]}` with string contents (errors name the
    line), and what does the scanner find in the messages: both in one read of the file."""
    inspection = FileInspection()
    with path.open("rb") as handle:
        for raw in handle:
            inspection.record(inspect_line(raw, scanner))
    return inspection.validation, inspection.scan


#: beside a day's dataset files: how each was inspected as it was written (`inspection_record`)
INSPECTION_FILE_NAME = "dataset_inspection.json"


def inspection_record(scanner_fingerprint: str, files: dict[str, tuple[str, FileInspection]]) -> str:
    """The inspections of dataset files made as they were written, as JSON: file name -> (SHA-256,
    inspection), and the scanner that made them."""
    record = {
        "scanner": scanner_fingerprint,
        "files": {name: {"sha256": digest, **done.to_json()} for name, (digest, done) in files.items()},
    }
    return json.dumps(record, indent=2, ensure_ascii=False)


def recorded_inspection(
    record: dict[str, Any] | None, path: Path, scanner_fingerprint: str
) -> Inspected | None:
    """The inspection recorded for `path` when it was written, if the file is still byte for byte the
    one inspected (its SHA-256) and the scanner looks for the same things; else None."""
    if record is None or record.get("scanner") != scanner_fingerprint:
        return None
    entry = record.get("files", {}).get(path.name)
    if entry is None or not path.is_file() or entry.get("sha256") != file_sha256(path):
        return None
    return FileInspection.from_json(entry)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


_scanners: dict[tuple[tuple[str, ...], frozenset[str]], SecretScanner] = {}


def scanner_for(env_secrets: tuple[str, ...], personal_kinds: frozenset[str] = frozenset()) -> SecretScanner:
    """This process's scanner for these secret values and kinds of personal data, built once (its
    plugins, its gate and its per-line cache serve every file and every share after)."""
    key = (env_secrets, personal_kinds)
    scanner = _scanners.get(key)
    if scanner is None:
        _scanners.clear()  # one set of secret values at a time
        scanner = _scanners[key] = SecretScanner(env_secrets, personal_kinds)
    return scanner


def _inspect_in_worker(share: tuple[Path, tuple[str, ...], frozenset[str]]) -> Inspected:
    path, env_secrets, personal_kinds = share
    return inspect_dataset_file(path, scanner_for(env_secrets, personal_kinds))


def _nothing_to_start() -> None:
    return None


def inspect_dataset_files(
    paths: Sequence[Path],
    env_secrets: tuple[str, ...],
    workers: int,
    record: Path | None = None,
    personal_kinds: frozenset[str] = frozenset(),
) -> list[tuple[Inspected, bool]]:
    """`inspect_dataset_file` of each path, in order, and whether it was read from `record` (the
    inspection made as the file was written, `inspection_record`) instead: a file still byte for byte
    the one inspected, by a scanner looking for the same things, is not read again but hashed, `workers`
    files at a time on threads (SHA-256 and the reads let go of the GIL).

    The others are inspected here with one scanner (its per-line cache shared by the files), or one
    file per worker of the bounded pool at a time (the largest first, so the others share the remaining
    workers while it runs)."""
    scanner = scanner_for(env_secrets, personal_kinds)
    largest_first = sorted(range(len(paths)), key=lambda i: -paths[i].stat().st_size)
    recorded: dict[int, Inspected] = {}
    if record is not None and record.is_file():
        written = json.loads(record.read_text(encoding="utf-8"))
        fingerprint = scanner.fingerprint()
        with ThreadPoolExecutor(max(1, min(workers, len(paths)))) as hashing:
            found = hashing.map(lambda i: recorded_inspection(written, paths[i], fingerprint), largest_first)
            recorded = {i: done for i, done in zip(largest_first, found, strict=True) if done is not None}
    left = [i for i in largest_first if i not in recorded]
    done = ordered_map(
        [(paths[i], env_secrets, personal_kinds) for i in left],
        lambda share: inspect_dataset_file(share[0], scanner),
        min(workers, len(left)),
        _inspect_in_worker,
        _nothing_to_start,
        (),
        start_method="forkserver",
        preload=[ANALYZER_MODULE] if personal_kinds else [],
    )
    inspected = {**dict(zip(left, done, strict=True)), **recorded}
    return [(inspected[i], i in recorded) for i in range(len(paths))]


_RECORD_KEYS = frozenset(("messages",))
_MESSAGE_KEYS = frozenset(("role", "content"))


def _record_problem(record: object) -> str | None:
    # key views compared with sets, no set built: this runs for every line of every day's datasets
    if not isinstance(record, dict) or record.keys() != _RECORD_KEYS:
        return 'expected an object with exactly the key "messages"'
    messages = record["messages"]
    if (
        not isinstance(messages, list)
        or [m.get("role") if isinstance(m, dict) else None for m in messages] != EXPECTED_ROLES
    ):
        return f"messages must have the roles {EXPECTED_ROLES} in that order"
    for message in messages:
        if message.keys() != _MESSAGE_KEYS or not isinstance(message["content"], str):
            return "each message needs exactly a role and a string content"
    return None


def message_texts(path: Path) -> Iterator[tuple[str, str]]:
    """(location, text) of every string in a dataset file's lines, for scanning: the messages'
    contents, and in OpenAI chat lines also tool calls' arguments, tool results and the tools offered.
    Malformed lines are skipped here (`inspect_dataset_file` reports them)."""
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if not isinstance(record, dict):
                continue
            for message in record.get("messages") if isinstance(record.get("messages"), list) else ():
                if isinstance(message, dict):
                    role = message.get("role")
                    for text in every_string({k: v for k, v in message.items() if k != "role"}):
                        yield f"line {number} ({role})", text
            for text in every_string(record.get("tools")):
                yield f"line {number} (tools)", text


def every_string(node: object) -> Iterator[str]:
    """Every string in a JSON value, and in each string that is itself a JSON object or array (a tool
    call's arguments, a tool's JSON result) every string of that too: a scanner reading the JSON text
    alone sees `\\n` where a line breaks and `\\"` where a quote stands, and misses what those tell."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
            if item.lstrip()[:1] in ("{", "["):
                with contextlib.suppress(ValueError):
                    stack.append(json.loads(item))
        elif isinstance(item, dict):
            stack.extend(reversed(item.values()))
        elif isinstance(item, list):
            stack.extend(reversed(item))
