"""The first process inside a sandbox: it sets the step's resource limits, optionally relays a
loopback port to its env's Unix socket, runs the command, and exits with its exit code.

Standard library only, and run as a file (`python -I inside.py ...`): the sandbox holds no copy of the
pipeline. As the namespace's PID 1 its exit ends every process left inside, `setsid` ones included,
and SIGTERM (the run stopping its envs) makes it exit at once; so does its lifeline, when it has one
(`--lifeline`: the process that owns the sandbox has died, or let it go).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import select
import signal
import socket
import subprocess
import sys
import threading

_MB = 1024 * 1024


def _limit(kind: int, value: int) -> None:
    if value > 0:
        resource.setrlimit(kind, (value, value))


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)


def short_path(path: str) -> str:
    """A Unix socket path within the 108-byte limit: through an open descriptor of its folder."""
    if len(path.encode()) < 100:
        return path
    folder = os.open(os.path.dirname(path) or ".", os.O_PATH | os.O_DIRECTORY)
    return f"/proc/self/fd/{folder}/{os.path.basename(path)}"


def _relay(listener: socket.socket, target: str) -> None:
    """Forward each loopback connection to the env's socket: the only way out of the sandbox."""
    target = short_path(target)
    while True:
        client, _ = listener.accept()
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(target)
        except OSError:
            client.close()
            upstream.close()
            continue
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=_pump, args=(a, b), daemon=True).start()


def _end_with_owner(lifeline: int) -> None:
    """Wait until the lifeline says its owner is gone (`processes.lifeline_for`: a pipe whose writing
    end is the owner's alone hangs up, a pidfd turns readable), without reading from it, then end the
    sandbox: every process of its group, then this one (as PID 1, the namespace with it; unconfined,
    the group is the sandbox's session). A tool server's stdin, which only its MCP client writes, is its
    lifeline too; the server reads it, so there only the hang-up counts."""
    watch = select.poll()
    # on stdin no event is asked for: a hang-up or an error is reported all the same
    watch.register(lifeline, 0 if lifeline == 0 else select.POLLIN)
    with contextlib.suppress(OSError):
        while not watch.poll():
            pass
    with contextlib.suppress(OSError):
        os.killpg(0, signal.SIGKILL)
    os._exit(137)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cpu-seconds", type=int, default=0)
    parser.add_argument("--memory-mb", type=int, default=0)
    parser.add_argument("--processes", type=int, default=0)
    parser.add_argument("--file-size-mb", type=int, default=0)
    parser.add_argument("--relay", help="a Unix socket to reach as http://127.0.0.1:PORT ($ENV_URL)")
    parser.add_argument("--lifeline", type=int, help="a pipe's reading end or a pidfd: ends the sandbox")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    signal.signal(signal.SIGTERM, lambda *_: os._exit(143))
    if args.lifeline is not None:
        threading.Thread(target=_end_with_owner, args=(args.lifeline,), daemon=True).start()
    environ = dict(os.environ)
    if args.relay:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        environ["ENV_URL"] = f"http://127.0.0.1:{listener.getsockname()[1]}"
        threading.Thread(target=_relay, args=(listener, args.relay), daemon=True).start()
    _limit(resource.RLIMIT_CPU, args.cpu_seconds)
    _limit(resource.RLIMIT_AS, args.memory_mb * _MB)
    _limit(resource.RLIMIT_FSIZE, args.file_size_mb * _MB)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # last: the relay's threads above count against it too
    _limit(resource.RLIMIT_NPROC, args.processes)
    try:
        child = subprocess.Popen(command, env=environ)
    except OSError as err:
        print(f"sandbox: cannot start {command[:1]}: {err}", file=sys.stderr)
        return 127
    code = child.wait()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
