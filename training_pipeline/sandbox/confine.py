"""Confinement for every process a task starts (`run_code` scripts, env servers), with bubblewrap.

Why bubblewrap: it is the maintained, minimal namespace sandbox behind Flatpak (Debian package
`bubblewrap`, one small setuid-free binary); it needs no daemon and no image, and it gives every piece
the containment model asks for in one command line:

- a fresh user, PID, network, IPC, UTS and cgroup namespace, all capabilities dropped, so the parent's
  `/proc`, the host's network (its loopback too) and other processes are out of sight;
- a root file system built from nothing: the system's `/usr` and the Python installation read-only,
  the step's own folders (its work folder read-write, its task folder read-only), and nothing else, so
  no `/etc/shadow`, no home, no data or Dagster folder;
- an environment of exactly the variables the step is given (`--clearenv`);
- `inside.py` as PID 1: it sets the CPU, memory, file-size and process-count limits, relays one loopback
  port to the step's env socket when asked, and its exit takes every process of the namespace with it,
  `setsid` grandchildren included.

As root the kernel exempts a process from `RLIMIT_NPROC`, so there the process-count limit is a `pids`
cgroup made per sandbox when the host lets us (cgroup v1 `pids`, or v2 with the controller delegated);
an unprivileged pipeline user gets `RLIMIT_NPROC` inside its own user namespace.

Turning confinement off is a deployment setting (`TRAINING_PIPELINE_SANDBOX=off`), never a task's: no
step field reaches it, and the code location logs a warning when it loads that way.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from training_pipeline.settings import Settings, settings

Mode = Literal["bwrap", "off"]
INSIDE = Path(__file__).with_name("inside.py")
#: Where a relayed env's socket appears inside a sandbox (a short path: sockets allow 108 bytes).
RELAY_MOUNT = Path("/env")
#: The variables every sandboxed process gets besides the step's own.
BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
_log = logging.getLogger("training_pipeline.sandbox")


class SandboxError(RuntimeError):
    pass


class Limits(BaseModel):
    """What one sandboxed process tree may use; a step's `limits` field (0 = no limit)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cpu_seconds: int = Field(default=60, ge=0)
    memory_mb: int = Field(default=1024, ge=0)
    processes: int = Field(default=64, ge=0)
    file_size_mb: int = Field(default=256, ge=0)


@dataclass(frozen=True)
class Sandbox:
    """One confined process tree: what it may see and use."""

    workdir: Path
    limits: Limits = field(default_factory=Limits)
    readonly: tuple[Path, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    #: a Unix socket the process reaches as `$ENV_URL` (a relay on the sandbox's own loopback)
    relay: Path | None = None

    def command(self, argv: list[str], mode: Mode | None = None) -> list[str]:
        """The full command line: bwrap (unless confinement is off), then the launcher, then `argv`."""
        mode = mode or sandbox_mode()
        launcher = [
            sys.executable,
            "-I",
            str(INSIDE),
            f"--cpu-seconds={self.limits.cpu_seconds}",
            f"--memory-mb={self.limits.memory_mb}",
            f"--file-size-mb={self.limits.file_size_mb}",
            f"--processes={0 if _pids_cgroup_root() and mode != 'off' else self.limits.processes}",
            *([f"--relay={self._relay_target(mode)}"] if self.relay else []),
            "--",
            *argv,
        ]
        if mode == "off":
            return launcher
        return [*self._bwrap(), *launcher]

    def _relay_target(self, mode: Mode) -> Path:
        assert self.relay is not None
        return self.relay if mode == "off" else RELAY_MOUNT / self.relay.name

    def environment(self) -> dict[str, str]:
        return {**BASE_ENV, "HOME": str(self.workdir), "TMPDIR": str(self.workdir), **self.env}

    def _bwrap(self) -> list[str]:
        binary = shutil.which("bwrap")
        if binary is None:
            raise SandboxError(
                "task code runs in a bubblewrap sandbox, and `bwrap` is not installed: "
                "`apt-get install bubblewrap` (make test does it), or set TRAINING_PIPELINE_SANDBOX=off "
                "in the deployment to run task code unconfined"
            )
        args = [binary, "--unshare-all", "--unshare-user", "--uid", "65534", "--gid", "65534"]
        args += ["--cap-drop", "ALL", "--as-pid-1", "--clearenv", "--hostname", "sandbox"]
        for name, value in self.environment().items():
            args += ["--setenv", name, value]
        args += _system_binds()
        for path in sorted({*_python_roots(), INSIDE.parent, *self.readonly}):
            args += ["--ro-bind", str(path), str(path)]
        args += ["--proc", "/proc", "--dev", "/dev"]
        args += ["--bind", str(self.workdir), str(self.workdir), "--chdir", str(self.workdir)]
        if self.relay is not None:  # the env's socket alone: not its database, not its folder
            args += ["--ro-bind", str(self.relay), str(RELAY_MOUNT / self.relay.name)]
        return [*args, "--remount-ro", "/"]

    def argv(self, command: list[str]) -> list[str]:
        """What to execute: the `pids` cgroup prefix (root only; see the module doc), then `command`."""
        root = _pids_cgroup_root()
        full = self.command(command)
        if root is None or self.limits.processes == 0 or sandbox_mode() == "off":
            return full
        for stale in root.glob("training_pipeline-*"):  # earlier sandboxes' groups, once empty
            with contextlib.suppress(OSError):
                stale.rmdir()
        group = root / f"training_pipeline-{uuid.uuid4().hex[:12]}"
        group.mkdir()
        (group / "pids.max").write_text(str(self.limits.processes))
        return ["/bin/sh", "-c", f'echo $$ > {group / "cgroup.procs"} && exec "$@"', "sh", *full]

    def spawn(self, command: list[str], **popen: Any) -> subprocess.Popen[bytes]:
        """Start the confined process in its own session (so stopping its group ends the sandbox)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        popen.setdefault("stdin", subprocess.DEVNULL)
        return subprocess.Popen(
            self.argv(command), env=self.environment(), cwd=self.workdir, start_new_session=True, **popen
        )

    async def aspawn(self, command: list[str], **popen: Any) -> asyncio.subprocess.Process:
        self.workdir.mkdir(parents=True, exist_ok=True)
        return await asyncio.create_subprocess_exec(
            *self.argv(command),
            env=self.environment(),
            cwd=self.workdir,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            **popen,
        )


def sandbox_mode() -> Mode:
    return settings().sandbox


def warn_if_unconfined(current: Settings) -> None:
    """Logged when the code location loads: unconfined task code is the deployment's explicit choice."""
    if current.sandbox == "off":
        _log.warning(
            "TRAINING_PIPELINE_SANDBOX=off: task code (run_code scripts, env servers) runs UNCONFINED, "
            "as the pipeline's own user, with its view of the file system and network"
        )
    elif os.geteuid() == 0 and _pids_cgroup_root() is None:
        _log.warning(
            "running as root without a writable pids cgroup: a task's process-count limit is not enforced"
        )


@functools.cache
def _python_roots() -> tuple[Path, ...]:
    """The Python installation (base and venv), read-only inside: what `python -I` needs to start and
    what a script may import. Nothing else of the host's home or project folder."""
    executable = Path(sys.executable)
    roots = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), executable.resolve().parent}
    if executable.parent != executable.resolve().parent:
        roots.add(executable.parent)
    return tuple(sorted(root for root in roots if not root.is_relative_to("/usr")))


@functools.cache
def _system_binds() -> tuple[str, ...]:
    """`/usr` read-only, the merged-/usr symlinks as symlinks, and the few files of `/etc` a dynamic
    loader and a C locale read."""
    args: list[str] = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    for name in ("/etc/ld.so.cache", "/etc/localtime", "/etc/alternatives"):
        args += ["--ro-bind-try", name, name]
    return tuple(args)


@functools.cache
def _pids_cgroup_root() -> Path | None:
    """Where per-sandbox `pids` cgroups can be made: only as root, and only where the host allows."""
    if os.geteuid() != 0:
        return None
    candidates = [Path("/sys/fs/cgroup/pids")]
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                candidates.append(Path("/sys/fs/cgroup") / line[3:].lstrip("/"))
    for candidate in candidates:
        probe = candidate / f"training_pipeline-probe-{os.getpid()}"
        try:
            probe.mkdir()
        except OSError:
            continue
        try:
            if (probe / "pids.max").exists():
                return candidate
        finally:
            with contextlib.suppress(OSError):
                probe.rmdir()
    return None
