"""The sandbox's seccomp filter: system calls that confined code has no use for and that escapes are
made of (new mounts and namespaces, kernel keyrings, BPF, module loading, file handles that bypass
paths, `ptrace`) fail with `EPERM`; everything else is allowed.

Built with libseccomp (Debian's `libseccomp2`, which apt itself depends on), through ctypes: it knows
each architecture's system call numbers and writes the BPF program that bubblewrap loads (`--seccomp
FD`, the file opened for it by the launching shell) once it has set the sandbox up, so the filter
binds the task's processes and not bubblewrap. Flatpak builds its filter the same way. Nested user
namespaces are refused by bubblewrap itself (`--disable-userns`); the filter refuses `unshare` and
`setns` besides.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import ctypes.util
import errno
import functools
import hashlib
import os
import stat
import tempfile
from pathlib import Path

__all__ = ["BLOCKED", "NOT_IMPLEMENTED", "SeccompUnavailable", "filter_program", "program_file"]

#: clone3 passes its namespace flags in memory, where a filter cannot look: it fails as if the kernel
#: had none (ENOSYS), and libc falls back to clone, whose flags the kernel checks as usual
NOT_IMPLEMENTED = ("clone3",)
#: what confined code may not call (each fails with EPERM)
BLOCKED = (
    # mounts and namespaces: the shape of the sandbox is bubblewrap's to set
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "fsopen", "fsconfig", "fsmount",
    "fspick", "move_mount", "open_tree", "mount_setattr",
    # the kernel's own state
    "bpf", "perf_event_open", "userfaultfd", "kexec_load", "kexec_file_load", "init_module",
    "finit_module", "delete_module", "reboot", "swapon", "swapoff", "acct", "quotactl", "syslog",
    "iopl", "ioperm", "settimeofday", "clock_settime", "adjtimex", "clock_adjtime", "vhangup",
    "lookup_dcookie", "nfsservctl",
    # keyrings are not namespaced
    "add_key", "request_key", "keyctl",
    # a file handle opens a file without its path: the classic way out of a chroot
    "open_by_handle_at", "name_to_handle_at",
    # other processes' memory
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
)  # fmt: skip

_SCMP_ACT_ALLOW = 0x7FFF0000
_SCMP_ACT_ERRNO = 0x00050000


class SeccompUnavailable(RuntimeError):
    pass


@functools.cache
def _library() -> ctypes.CDLL:
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError:
        raise SeccompUnavailable(
            "the sandbox's seccomp filter needs libseccomp: `apt-get install libseccomp2`"
        ) from None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.restype = ctypes.c_int
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add.restype = ctypes.c_int
    lib.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint]
    lib.seccomp_export_bpf.restype = ctypes.c_int
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    return lib


@functools.cache
def filter_program() -> bytes:
    """The filter as a BPF program, for this machine's architecture."""
    lib = _library()
    context = lib.seccomp_init(_SCMP_ACT_ALLOW)
    if not context:
        raise SeccompUnavailable("seccomp_init failed")
    try:
        for names, code in ((BLOCKED, errno.EPERM), (NOT_IMPLEMENTED, errno.ENOSYS)):
            for name in names:
                number = lib.seccomp_syscall_resolve_name(name.encode())
                if number < 0:  # not a system call on this architecture
                    continue
                if lib.seccomp_rule_add(context, _SCMP_ACT_ERRNO | code, number, 0) < 0:
                    raise SeccompUnavailable(f"seccomp_rule_add({name}) failed")
        with tempfile.TemporaryFile() as out:
            if lib.seccomp_export_bpf(context, out.fileno()) < 0:
                raise SeccompUnavailable("seccomp_export_bpf failed")
            out.seek(0)
            return out.read()
    finally:
        lib.seccomp_release(context)


@functools.cache
def program_file() -> Path:
    """The program in a file for bubblewrap to read, named by its content and this user: written once
    and shared by every process that launches a sandbox. A file each process removed at exit was left
    behind by every one that never ran its exit handlers (a killed step, a worker ended by
    `os._exit`): a file in the temporary folder per step, for ever.

    The shared file is used only when it is this user's, a regular file no one else may write, and
    holds the program; otherwise (another user's name squatted first) this process writes its own."""
    program = filter_program()
    digest = hashlib.sha256(program).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"training_pipeline-seccomp-{os.geteuid()}-{digest}.bpf"
    if _holds(path, program):
        return path
    descriptor, name = tempfile.mkstemp(prefix="training_pipeline-seccomp-", suffix=".bpf")
    with os.fdopen(descriptor, "wb") as out:
        out.write(program)
    try:
        os.replace(name, path)  # whole or not at all: a process reading it never sees half a program
    except OSError:  # the name is another user's (a sticky folder refuses to replace it)
        atexit.register(_remove, name)
        return Path(name)
    return path


def _holds(path: Path, program: bytes) -> bool:
    """Whether `path` is this user's regular file, writable by no one else, holding `program`."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    with os.fdopen(descriptor, "rb") as file:
        status = os.fstat(descriptor)
        mine = status.st_uid == os.geteuid() and stat.S_ISREG(status.st_mode)
        return mine and not status.st_mode & 0o022 and file.read(len(program) + 1) == program


def _remove(name: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(name)
