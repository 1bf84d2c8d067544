"""Confinement for every process a task starts (`run_code` scripts, env servers), with bubblewrap.

Why bubblewrap: it is the maintained, minimal namespace sandbox behind Flatpak (Debian package
`bubblewrap`, one small setuid-free binary); it needs no daemon and no image, and it gives every piece
the containment model asks for in one command line:

- a fresh user, PID, network, IPC, UTS and cgroup namespace, all capabilities dropped, so the parent's
  `/proc`, the host's network (its loopback too) and other processes are out of sight; no nested user
  namespace (`--disable-userns`) and a seccomp filter (`seccomp.py`) against the usual escape calls;
- a root file system built from nothing: the system's `/usr` and the Python installation read-only,
  the step's own folders (its work folder read-write, its task folder read-only), and nothing else, so
  no `/etc/shadow`, no home, no data or Dagster folder;
- an environment of exactly the variables the step is given (`--clearenv`);
- `inside.py` as PID 1: it sets the CPU, memory, file-size and process-count limits, relays one loopback
  port to the step's env socket when asked, and its exit takes every process of the namespace with it,
  `setsid` grandchildren included;
- a lifeline (`spawn(lifeline=...)`, `processes.lifeline_for`): the sandbox ends when the process
  that owns it does (the one that started it, or that one's parent), however it died (`kill -9`, the
  OOM killer), from the first instant, or when `ended` is called for it.

Every limit is the step's under the deployment's ceiling (`ceilings`). Where the host lets the
pipeline make control groups (`cgroups.py`: root, cgroup v1 or a delegated v2), the process count and
the memory hold for the whole sandbox, `/dev/shm` included; elsewhere per process (`RLIMIT_NPROC`,
which root is exempt from, and `RLIMIT_AS`).

Turning confinement off is a deployment setting (`TRAINING_PIPELINE_SANDBOX=off`), never a task's: no
step field reaches it, and the code location logs a warning when it loads that way.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from training_pipeline.processes import Owner, cut_lifeline, lifeline_for
from training_pipeline.sandbox import cgroups
from training_pipeline.sandbox.seccomp import program_file
from training_pipeline.settings import Settings, settings

Mode = Literal["bwrap", "off"]
INSIDE = Path(__file__).with_name("inside.py")
#: the descriptor bubblewrap reads the seccomp program from
SECCOMP_FD = 3
#: Where a relayed env's socket appears inside a sandbox (a short path: sockets allow 108 bytes).
RELAY_MOUNT = Path("/env")
#: The variables every sandboxed process gets besides the step's own.
BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
_log = logging.getLogger("training_pipeline.sandbox")


class SandboxError(RuntimeError):
    pass


class Limits(BaseModel):
    """What one sandboxed process tree may use; a step's `limits` field. Each is bounded by the
    deployment's ceiling (`ceilings`), which a task can lower but never raise or switch off: 0, or a
    value over it, means the ceiling."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cpu_seconds: int = Field(default=60, ge=0)
    memory_mb: int = Field(default=1024, ge=0)
    processes: int = Field(default=64, ge=0)
    file_size_mb: int = Field(default=256, ge=0)
    #: what the sandbox's folder may hold in all, checked while a command runs
    disk_mb: int = Field(default=0, ge=0)

    def within(self, ceiling: Limits) -> Limits:
        """These limits, none over `ceiling`'s (0 here: the ceiling)."""
        values = self.model_dump()
        top = ceiling.model_dump()
        return Limits(**{name: min(values[name] or top[name], top[name]) for name in values})


def ceilings() -> Limits:
    """The deployment's ceilings (`TRAINING_PIPELINE_SANDBOX_MAX_*`): what no sandbox exceeds."""
    current = settings()
    return Limits(
        cpu_seconds=current.sandbox_max_cpu_seconds,
        memory_mb=current.sandbox_max_memory_mb,
        processes=current.sandbox_max_processes,
        file_size_mb=current.sandbox_max_file_size_mb,
        disk_mb=current.sandbox_max_disk_mb,
    )


@dataclass(frozen=True)
class Sandbox:
    """One confined process tree: what it may see and use."""

    workdir: Path
    limits: Limits = field(default_factory=Limits)
    readonly: tuple[Path, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    #: a Unix socket the process reaches as `$ENV_URL` (a relay on the sandbox's own loopback)
    relay: Path | None = None

    @property
    def effective(self) -> Limits:
        """The limits that hold: the step's, under the deployment's ceilings."""
        return self.limits.within(ceilings())

    def command(
        self,
        argv: list[str],
        mode: Mode | None = None,
        seccomp_fd: int | None = None,
        lifeline: int | None = None,
    ) -> list[str]:
        """The full command line: bwrap (unless confinement is off), then the launcher, then `argv`.
        `lifeline`: the descriptor of a lifeline, passed to the process (`spawn`)."""
        mode = mode or sandbox_mode()
        limits = self.effective
        grouped = cgroups.available() if mode != "off" else frozenset()
        launcher = [
            sys.executable,
            "-I",
            str(INSIDE),
            f"--cpu-seconds={limits.cpu_seconds}",
            f"--memory-mb={limits.memory_mb}",
            f"--file-size-mb={limits.file_size_mb}",
            f"--processes={0 if 'pids' in grouped else limits.processes}",
            *([f"--relay={self._relay_target(mode)}"] if self.relay else []),
            *([f"--lifeline={lifeline}"] if lifeline is not None else []),
            "--",
            *argv,
        ]
        if mode == "off":
            return launcher
        return [*self._bwrap(limits, seccomp_fd), *launcher]

    def _relay_target(self, mode: Mode) -> Path:
        assert self.relay is not None
        return self.relay if mode == "off" else RELAY_MOUNT / self.relay.name

    def environment(self) -> dict[str, str]:
        return {**BASE_ENV, "HOME": str(self.workdir), "TMPDIR": str(self.workdir), **self.env}

    def _bwrap(self, limits: Limits, seccomp_fd: int | None) -> list[str]:
        binary = shutil.which("bwrap")
        if binary is None:
            raise SandboxError(
                "task code runs in a bubblewrap sandbox, and `bwrap` is not installed: "
                "`apt-get install bubblewrap` (make test does it), or set TRAINING_PIPELINE_SANDBOX=off "
                "in the deployment to run task code unconfined"
            )
        args = [binary, "--unshare-all", "--unshare-user", "--disable-userns"]
        args += ["--uid", "65534", "--gid", "65534"]
        args += ["--cap-drop", "ALL", "--as-pid-1", "--clearenv", "--hostname", "sandbox"]
        if seccomp_fd is not None:
            args += ["--seccomp", str(seccomp_fd)]
        for name, value in self.environment().items():
            args += ["--setenv", name, value]
        args += _system_binds()
        for path in sorted({*_python_roots(), INSIDE.parent, *self.readonly}):
            args += ["--ro-bind", str(path), str(path)]
        # shared memory is a tmpfs of its own, no larger than the sandbox's memory (and, where the
        # sandbox has a memory group, counted in it)
        args += ["--proc", "/proc", "--dev", "/dev", "--size", str(limits.memory_mb * 1024 * 1024)]
        args += ["--tmpfs", "/dev/shm"]
        args += ["--bind", str(self.workdir), str(self.workdir), "--chdir", str(self.workdir)]
        if self.relay is not None:  # the env's socket alone: not its database, not its folder
            args += ["--ro-bind", str(self.relay), str(RELAY_MOUNT / self.relay.name)]
        return [*args, "--remount-ro", "/"]

    def argv(self, command: list[str], lifeline: int | None = None) -> list[str]:
        """What to execute. Unless confinement is off, a shell opens the seccomp program as descriptor
        3 for bubblewrap (`--seccomp 3`) and makes and joins the sandbox's control groups (root only;
        see `cgroups`), then becomes bubblewrap: so it works the same for a caller that starts the
        process itself (the MCP client of a tool server). `lifeline`: as `command`."""
        mode = sandbox_mode()
        if mode == "off":
            return self.command(command, mode, lifeline=lifeline)
        limits = self.effective
        steps = [f"exec {SECCOMP_FD}< {shlex.quote(str(program_file()))}"]
        steps += cgroups.join_steps(limits.processes, limits.memory_mb)
        script = " && ".join([*steps, 'exec "$@"'])
        # the shell becomes bubblewrap (`exec`), which passes the lifeline's descriptor on as it is
        return ["/bin/sh", "-c", script, "sh", *self.command(command, mode, SECCOMP_FD, lifeline)]

    def spawn(
        self, command: list[str], lifeline: Owner | None = None, **popen: Any
    ) -> subprocess.Popen[bytes]:
        """Start the confined process in its own session (so stopping its group ends the sandbox).
        `lifeline`: the sandbox ends when its owner does, or at `ended(pid)` (see the module's
        docstring): this process for one it waits for, or for one that serves a run whose steps all
        run in this process; this process's parent for one that serves a run whose process that is."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        popen.setdefault("stdin", subprocess.DEVNULL)
        with lifeline_for(lifeline, popen) as (descriptor, hold):
            return hold(
                subprocess.Popen(
                    self.argv(command, descriptor),
                    env=self.environment(),
                    cwd=self.workdir,
                    start_new_session=True,
                    **popen,
                )
            )

    async def aspawn(
        self, command: list[str], lifeline: Owner | None = None, **popen: Any
    ) -> asyncio.subprocess.Process:
        """`spawn` for a caller on an event loop."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        with lifeline_for(lifeline, popen) as (descriptor, hold):
            return hold(
                await asyncio.create_subprocess_exec(
                    *self.argv(command, descriptor),
                    env=self.environment(),
                    cwd=self.workdir,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                    **popen,
                )
            )


def launched_with_lifeline(argv: list[str], lifeline: int) -> list[str]:
    """`argv` under the sandbox's launcher with no confinement and no limits: for a trusted server that
    must end with the process that owns it (the local model), the launcher watching `lifeline`."""
    return [sys.executable, "-I", str(INSIDE), f"--lifeline={lifeline}", "--", *argv]


def ended(pid: int) -> None:
    """The sandbox whose first process was `pid` has ended, or is to end now: its lifeline (if it has
    one) is cut and its control groups go."""
    cut_lifeline(pid)
    cgroups.release(pid)


def sandbox_mode() -> Mode:
    return settings().sandbox


def warn_if_unconfined(current: Settings) -> None:
    """Logged when the code location loads: unconfined task code is the deployment's explicit choice."""
    if current.sandbox == "off":
        _log.warning(
            "TRAINING_PIPELINE_SANDBOX=off: task code (run_code scripts, env servers) runs UNCONFINED, "
            "as the pipeline's own user, with its view of the file system and network"
        )
    elif os.geteuid() == 0 and cgroups.available() != {"pids", "memory"}:
        missing = {"pids", "memory"} - cgroups.available()
        if "pids" in missing:
            _log.warning(
                "running as root without a writable pids cgroup: a task's process count is not limited"
            )
        if "memory" in missing:
            _log.warning(
                "running as root without a writable memory cgroup: a task's memory is limited per process, "
                "not for its sandbox as a whole"
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
