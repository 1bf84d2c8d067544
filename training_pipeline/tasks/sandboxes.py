"""What the sandbox steps share: running a command confined in a deployed sandbox, and moving files in
and out of its folder without following anything the code inside may have planted there.

A deployed sandbox is a folder of the run (`sandboxes/<name>`) and a set of limits; every command runs
in a fresh confined process tree (`training_pipeline.sandbox`) whose only writable place is that folder,
so what one command leaves there the next one finds, and nothing else of the host is reachable.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from training_pipeline.atomic import atomic_open
from training_pipeline.processes import astop_process_group
from training_pipeline.sandbox import Limits, Sandbox
from training_pipeline.sandbox.beneath import open_regular, write_from
from training_pipeline.sandbox.confine import ended
from training_pipeline.tasks.context import TaskStepContext

#: A command's stdout and stderr are kept up to this size each; the rest is read and dropped.
OUTPUT_LIMIT = 1024 * 1024
#: Largest single file moved in or out of a sandbox.
FILE_LIMIT = 64 * 1024 * 1024
#: `python` as a command's first word means the pipeline's own interpreter, so a task needs no Python of
#: its own inside the sandbox; it ignores PYTHON* variables and the user's site folder (`-E -s`) but,
#: unlike `-I`, keeps the working directory (the sandbox folder) importable, as `python -m unittest` needs
PYTHON_NAMES = ("python", "python3")


@dataclass(frozen=True)
class Completed:
    exit_code: int
    stdout: str
    stderr: str

    def to_dict(self, tail: int = 4000) -> dict[str, object]:
        return {"exit_code": self.exit_code, "stdout": self.stdout[-tail:], "stderr": self.stderr[-tail:]}


def argv_of(command: list[str]) -> list[str]:
    if command and command[0] in PYTHON_NAMES:
        return [sys.executable, "-E", "-s", *command[1:]]
    return list(command)


async def bounded_output(process: asyncio.subprocess.Process) -> tuple[bytes, bytes]:
    async def read(stream: asyncio.StreamReader | None) -> bytes:
        kept = bytearray()
        while stream is not None and (chunk := await stream.read(65536)):
            kept += chunk[: max(0, OUTPUT_LIMIT - len(kept))]
        return bytes(kept)

    out, err = await asyncio.gather(read(process.stdout), read(process.stderr))
    await process.wait()
    return out, err


async def run_confined(sandbox: Sandbox, command: list[str], timeout_seconds: float) -> Completed:
    """`command` in `sandbox`, stopped with everything it started after `timeout_seconds`, or as soon
    as the sandbox's folder holds more than its disk limit, or when this process dies (killed with its
    run's worker: nothing would stop it after that), from the moment it is spawned (its lifeline)."""
    process = await sandbox.aspawn(
        argv_of(command), lifeline="starter", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    disk_mb = sandbox.effective.disk_mb
    watch = asyncio.create_task(_watch_disk(sandbox.workdir, disk_mb))
    output = asyncio.create_task(bounded_output(process))
    try:
        done, _ = await asyncio.wait(
            {watch, output}, timeout=timeout_seconds, return_when=asyncio.FIRST_COMPLETED
        )
        if output not in done:
            await astop_process_group(process.pid)
            if watch in done:
                raise RuntimeError(f"{' '.join(command)} filled its sandbox past {disk_mb} MB; stopped")
            raise TimeoutError(f"{' '.join(command)} ran longer than {timeout_seconds}s")
        out, err = output.result()
    finally:
        watch.cancel()
        output.cancel()
        if process.returncode is None:
            await astop_process_group(process.pid)
        ended(process.pid)
    assert process.returncode is not None
    return Completed(process.returncode, out.decode(errors="replace"), err.decode(errors="replace"))


async def _watch_disk(folder: Path, limit_mb: int) -> None:
    """Returns once `folder` holds more than `limit_mb` (checked every second, off the event loop)."""
    while await asyncio.to_thread(folder_bytes, folder) <= limit_mb * 1024 * 1024:
        await asyncio.sleep(1.0)


def folder_bytes(folder: Path) -> int:
    """What `folder` holds on disk, links not followed (sparse files count what they use)."""
    total = 0
    for _, _, files, top in os.fwalk(folder, follow_symlinks=False):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.stat(name, dir_fd=top, follow_symlinks=False).st_blocks * 512
    return total


def copy_in(source: Path, root: Path, relative: str) -> int:
    """Copy a task file into the sandbox folder at `relative` (folders made as needed), never through a
    link the code inside may have planted on the way (`beneath`). Returns the bytes written."""
    with source.open("rb") as data:
        size = os.fstat(data.fileno()).st_size
        if size > FILE_LIMIT:
            raise ValueError(f"{source.name} is {size} bytes, over the {FILE_LIMIT}-byte limit")
        return write_from(root, relative, data, FILE_LIMIT)


def copy_out(root: Path, relative: str, target: Path) -> int:
    """Copy a regular file out of the sandbox folder (never a link, a device, a FIFO or a folder),
    reached without following any link, to `target`. Returns the bytes copied."""
    with open_regular(root, relative) as data:
        size = os.fstat(data.fileno()).st_size
        if size > FILE_LIMIT:
            raise ValueError(f"{relative!r} is {size} bytes, over the {FILE_LIMIT}-byte limit")
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(target, "wb") as out:
            copied = 0
            while chunk := data.read(1024 * 1024):
                copied += len(chunk)
                if copied > FILE_LIMIT:
                    raise ValueError(f"{relative!r} grew past the {FILE_LIMIT}-byte limit while copied")
                out.write(chunk)
    return copied


def confined(context: TaskStepContext, sandbox_name: str, files: tuple[Path, ...] = ()) -> Sandbox:
    """The deployed sandbox `sandbox_name` as a confinement for one command, with `files` of the task
    (a tool server's script) read-only beside it. Nothing else of the task's folder is there: what a
    command needs of it is copied in (`deploy_sandbox`, `upload_files`), so a task kept in a home
    folder shows none of that home."""
    deployed = context.sandbox(sandbox_name)
    return Sandbox(Path(deployed.path), Limits(**deployed.limits), readonly=files)
