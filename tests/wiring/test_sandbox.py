"""Task code runs confined: each escape a task author could try fails, the limits hold, and only the
deployment can turn confinement off (with a warning). The escapes run as a real `run_code` step of a
task job; the limits through the sandbox itself."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.dagster_servers import pipeline_free_env
from tests.helpers import CLI, REPO, command_lines, run_task_file, until_gone, write_task
from tests.planted_secrets import IN_ENVIRONMENT
from training_pipeline.sandbox import Limits, Sandbox, cgroups
from training_pipeline.sandbox.confine import ended
from training_pipeline.settings import settings
from training_pipeline.tasks.registry import build_registry
from training_pipeline.tasks.task import TaskError, load_task

ESCAPES = r"""
import json, os, socket, subprocess, sys, time
pipeline_pid, host_port, outside, marker = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
tried = {}

def attempt(name, action):
    try:
        tried[name] = ["escaped", str(action())[:200]]
    except Exception as err:
        tried[name] = ["blocked", type(err).__name__]

attempt("parent_environ", lambda: open(f"/proc/{pipeline_pid}/environ", "rb").read())
attempt("any_environ_with_secret", lambda: [p for p in os.listdir("/proc") if p.isdigit()
        and b"planted-env" in open(f"/proc/{p}/environ", "rb").read()] or 1 / 0)
attempt("etc_shadow", lambda: open("/etc/shadow").read())
attempt("home", lambda: os.listdir(os.path.expanduser(sys.argv[5])) or 1 / 0)
attempt("write_outside", lambda: open(outside, "w").write("x"))
attempt("write_tmp", lambda: open("/tmp/escaped", "w").write("x"))
attempt("host_loopback", lambda: socket.create_connection(("127.0.0.1", host_port), timeout=2))
attempt("env_database", lambda: open("/env/env.sqlite", "rb").read())  # only the env's socket is there
# the task's folder is not there, only this script: not a file kept beside it (a home's ~/.ssh)
attempt("task_folder", lambda: open(os.path.join(os.path.dirname(__file__), "id_ed25519")).read())
here = os.path.dirname(__file__)
attempt("task_folder_listing", lambda: [n for n in os.listdir(here) if n != "escape.py"] or 1 / 0)
with open("in-work-folder.txt", "w") as handle:
    handle.write("fine")
# a grandchild in its own session, meant to outlive the step
subprocess.Popen([sys.executable, "-c", f"import time; time.sleep(120)  # {marker}"], start_new_session=True)
import urllib.request
tools = json.load(urllib.request.urlopen(os.environ["ENV_URL"] + "/tools", timeout=10))["tools"]
print(json.dumps({"tried": tried, "environ": sorted(os.environ), "interfaces": socket.if_nameindex(),
                  "env_tools": len(tools), "cwd": os.getcwd()}))
"""


def _processes_with(marker: str, inside: bool = False) -> list[int]:
    """Processes whose command line holds `marker`; `inside`: only those run by Python (the sandbox's
    launcher and what it runs), not the shell or bubblewrap that start them."""
    return [pid for pid, argv in command_lines(marker).items() if not inside or "python" in argv[0]]


def test_a_run_code_script_cannot_escape_its_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, tasks = tmp_path / "data", tmp_path / "tasks"
    tasks.mkdir()
    monkeypatch.setenv("TRAINING_PIPELINE_DATA", str(data))
    monkeypatch.setenv("PLANTED_SERVICE_TOKEN", IN_ENVIRONMENT)
    (tasks / "escape.py").write_text(ESCAPES)
    (tasks / "id_ed25519").write_text("a key kept beside the task file")
    outside, marker = tmp_path / "outside.txt", f"outlive-{uuid.uuid4().hex}"
    with socket.create_server(("127.0.0.1", 0)) as host_server:
        args = [str(os.getpid()), str(host_server.getsockname()[1]), str(outside), marker, str(Path.home())]
        steps = [
            {"id": "email", "type": "deploy_env", "env_type": "email", "env_name": "email"},
            {"id": "escape", "type": "run_code", "env_name": "email", "script": "escape.py", "args": args},
        ]
        (tasks / "t.json").write_text(json.dumps(steps))
        result, _, _ = run_task_file(tasks / "t.json")
    assert result.success
    context = json.loads((data / "task_runs" / result.run_id / "context.json").read_text())
    report = context["metadata"]["script_results"]["escape"]["output"]
    # the host's home shows at most the way to the Python installation, which is bound read-only
    home = report["tried"].pop("home")
    python_path = {part for root in (sys.base_prefix, sys.prefix) for part in Path(root).parts}
    assert home[0] == "blocked" or set(json.loads(home[1].replace("'", '"'))) <= python_path
    assert {name: verdict for name, (verdict, _) in report["tried"].items()} == {
        name: "blocked"
        for name in (
            "parent_environ",
            "any_environ_with_secret",
            "etc_shadow",
            "write_outside",
            "write_tmp",
            "host_loopback",
            "env_database",
            "task_folder",
            "task_folder_listing",
        )
    }
    assert not outside.exists() and not Path("/tmp/escaped").exists()
    assert set(report["environ"]) <= {
        "PATH",
        "HOME",
        "TMPDIR",
        "LANG",
        "PYTHONDONTWRITEBYTECODE",
        "ENV_URL",
        "PWD",
    }
    assert [name for _, name in report["interfaces"]] == ["lo"]  # no network but its own loopback
    assert report["env_tools"] > 0  # ...through which its env, and only its env, answers
    work = data / "task_runs" / result.run_id / "work" / "escape"
    assert report["cwd"] == str(work) and (work / "in-work-folder.txt").read_text() == "fine"
    assert _processes_with(marker) == []  # the setsid grandchild died with the step


def _confined(tmp_path: Path, code: str, limits: Limits, timeout: float = 60) -> subprocess.CompletedProcess:
    sandbox = Sandbox(tmp_path / "work", limits)
    sandbox.workdir.mkdir(parents=True, exist_ok=True)
    process = sandbox.spawn(
        [sys.executable, "-I", "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = process.communicate(timeout=timeout)
    ended(process.pid)
    return subprocess.CompletedProcess(process.args, process.returncode, out.decode(), err.decode())


def test_memory_cpu_and_process_limits_hold(tmp_path: Path) -> None:
    if os.geteuid() == 0 and "pids" not in cgroups.available():
        pytest.skip("root without a writable pids cgroup: the kernel exempts root from RLIMIT_NPROC")
    memory = _confined(
        tmp_path, "b = bytearray(600 * 1024 * 1024)\nprint('allocated')", Limits(memory_mb=200)
    )
    assert memory.returncode != 0 and "MemoryError" in memory.stderr
    started = time.monotonic()
    cpu = _confined(tmp_path, "while True: pass", Limits(cpu_seconds=1))
    assert cpu.returncode != 0 and time.monotonic() - started < 30  # SIGXCPU after one CPU second
    fork = (
        "import os, time\nn = 0\ntry:\n    for _ in range(200):\n        if os.fork() == 0:\n"
        "            time.sleep(5)\n            os._exit(0)\n        n += 1\n"
        "except OSError as err:\n    print('stopped at', n)\nelse:\n    print('forked', n)\n"
    )
    processes = _confined(tmp_path, fork, Limits(processes=16))
    assert processes.stdout.startswith("stopped at"), processes.stdout + processes.stderr
    assert int(processes.stdout.split()[-1]) < 16


def test_a_script_over_its_time_is_stopped_with_everything_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = f"slow-{uuid.uuid4().hex}"
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "slow.py").write_text(
        "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)  # {marker}'])\n"
        "time.sleep(120)\n"
    )
    steps = [
        {"id": "email", "type": "deploy_env", "env_type": "email", "env_name": "email"},
        {"id": "slow", "type": "run_code", "env_name": "email", "script": "slow.py", "timeout_seconds": 2},
    ]
    (tmp_path / "tasks" / "t.json").write_text(json.dumps(steps))
    monkeypatch.setenv("TRAINING_PIPELINE_DATA", str(tmp_path / "data"))
    result, _, _ = run_task_file(tmp_path / "tasks" / "t.json")
    assert not result.success
    context = json.loads((tmp_path / "data" / "task_runs" / result.run_id / "context.json").read_text())
    assert "ran longer than 2.0s" in context["metadata"]["failed_steps"][0]["error"]
    assert _processes_with(marker) == []


@pytest.mark.parametrize("when", ["starting", "running"])
def test_task_code_dies_with_the_worker_that_waits_for_it(tmp_path: Path, when: str) -> None:
    """A run's worker killed while a `run_code` script runs (`kill -9`, the OOM killer, a stopped
    daemon's group): nothing would stop the script after that, so its sandbox dies with the worker;
    killed as the sandbox starts (its shell up, bubblewrap not yet), the sandbox still ends."""
    marker = f"orphan-{uuid.uuid4().hex}"
    worker = tmp_path / "worker.py"
    worker.write_text(
        "import asyncio\nfrom pathlib import Path\n"
        "from training_pipeline.sandbox import Sandbox\n"
        "from training_pipeline.tasks.sandboxes import run_confined\n"
        f"command = ['python', '-c', 'import time; time.sleep(120)  # {marker}']\n"
        f"asyncio.run(run_confined(Sandbox(Path({str(tmp_path / 'work')!r})), command, 300))\n"
    )
    process = subprocess.Popen([sys.executable, str(worker)])
    try:
        deadline = time.monotonic() + 30
        while not _processes_with(marker, inside=when == "running"):
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.001 if when == "starting" else 0.1)
    finally:
        process.kill()
        process.wait()
    until_gone(marker, seconds=10)


def test_a_runs_env_and_script_die_with_the_process_its_steps_run_in(tmp_path: Path) -> None:
    """`kill -9` of the process a task run's steps all run in (the async executor, task jobs' default:
    here the CLI's own, on an instance with no daemon): the run's clean-up, which stops its envs, never
    comes, so its env server and its running script end with that process."""
    data = _run_killed_while_its_script_runs(tmp_path, [], script_seconds=120, start_seconds=60)
    until_gone(str(data), seconds=10)


def test_a_runs_env_ends_with_the_run_process_whose_step_processes_started_it(tmp_path: Path) -> None:
    """The same under the multiprocess executor: the env was started by a step's process, which has
    exited, for later steps' processes; `kill -9` of the run's process (the CLI's) ends it too. The
    orphaned step process finishes its short script on its own, as Dagster leaves it to."""
    data = _run_killed_while_its_script_runs(
        tmp_path, ["--executor", "multiprocess"], script_seconds=3, start_seconds=120
    )
    until_gone(str(data), seconds=15)


def _run_killed_while_its_script_runs(
    tmp_path: Path, options: list[str], script_seconds: int, start_seconds: float
) -> Path:
    """`task run` from the CLI (on an instance with no daemon, so its own process runs the run) of an
    email env, a `wait` step's script of `script_seconds` on it and a step after that, killed with
    `kill -9` once the env and the script both run; the run's data folder, which every sandbox of the
    run names on its bubblewrap command line."""
    scripts = tmp_path / "task"
    wait = {"type": "run_code", "env_name": "email", "script": "wait.py"}
    task = write_task(
        scripts,
        [
            {"id": "email", "type": "deploy_env", "env_type": "email", "env_name": "email"},
            {"id": "wait", **wait, "depends_on": [{"task_step_id": "email"}]},
            # a step left to run after it: the run's end (which stops its envs) is no step's to reach
            {"id": "later", **wait, "depends_on": [{"task_step_id": "wait"}]},
        ],
    )
    (scripts / "wait.py").write_text(f"import time\ntime.sleep({script_seconds})\n")
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").symlink_to(REPO / "dagster.yaml")
    data = tmp_path / "data"
    env = {**pipeline_free_env(), "DAGSTER_HOME": str(home), "TRAINING_PIPELINE_DATA": str(data)}
    process = subprocess.Popen(
        [str(CLI), "task", "run", str(task), *options], env=env, stdout=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + start_seconds
        # bubblewrap's command line names the folders it binds, which are the run's; each sandbox is
        # alive exactly as long as its bubblewrap
        while not {"env", "wait"} <= {_sandbox_of(argv) for argv in command_lines(str(data)).values()}:
            assert process.poll() is None and time.monotonic() < deadline, command_lines(str(data))
            time.sleep(0.2)
    finally:
        process.kill()
        process.wait()
    return data


def _sandbox_of(argv: list[str]) -> str:
    """Which of the test's sandboxes a bubblewrap command line starts: the env's server, the `wait`
    step's script, else ''."""
    if "bwrap" not in argv[0]:
        return ""
    return "env" if "env.sqlite" in argv else "wait" if argv[-1].endswith("wait.py") else ""


def test_a_task_cannot_turn_confinement_off(tmp_path: Path) -> None:
    (tmp_path / "x.py").write_text("print(1)")
    for sneaky in ({"sandbox": "off"}, {"limits": {"sandbox": "off"}}, {"confined": False}):
        step = {"id": "s", "type": "run_code", "env_name": "e", "script": "x.py", **sneaky}
        (tmp_path / "t.json").write_text(json.dumps([step]))
        with pytest.raises(TaskError):
            load_task(tmp_path / "t.json", build_registry())


def test_unconfined_is_a_deployment_setting_warned_about_at_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = subprocess.run(
        [sys.executable, "-c", "import training_pipeline.definitions"],
        env={**os.environ, "TRAINING_PIPELINE_SANDBOX": "off", "TRAINING_PIPELINE_DATA": str(tmp_path)},
        capture_output=True,
        text=True,
    )
    assert loaded.returncode == 0 and "UNCONFINED" in loaded.stderr
    monkeypatch.setenv("TRAINING_PIPELINE_SANDBOX", "off")
    settings.cache_clear()
    try:
        # and it still runs: the same launcher, limits and relay, without the namespaces
        done = _confined(tmp_path, "import os; print(sorted(os.environ))", Limits())
        assert done.returncode == 0 and "PLANTED" not in done.stdout
    finally:
        settings.cache_clear()
    monkeypatch.setenv("TRAINING_PIPELINE_SANDBOX", "nope")
    with pytest.raises(ValueError, match="TRAINING_PIPELINE_SANDBOX"):
        settings()
    settings.cache_clear()


def test_a_task_can_lower_its_limits_but_never_exceed_the_deployments_ceilings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0 used to mean no limit at all: 4 GB allocated and 2,000 processes started."""
    ceiling = Limits(cpu_seconds=100, memory_mb=256, processes=32, file_size_mb=10, disk_mb=50)
    assert Limits(cpu_seconds=0, memory_mb=0, processes=0, file_size_mb=0).within(ceiling) == ceiling
    huge = Limits(cpu_seconds=10**6, memory_mb=10**6, processes=10**6, file_size_mb=10**6, disk_mb=10**6)
    assert huge.within(ceiling) == ceiling
    assert Limits(memory_mb=64).within(ceiling).memory_mb == 64  # lowering is the task's to do
    monkeypatch.setenv("TRAINING_PIPELINE_SANDBOX_MAX_MEMORY_MB", "256")
    settings.cache_clear()
    try:
        unlimited = _confined(
            tmp_path, "b = bytearray(600 * 1024 * 1024)\nprint('allocated')", Limits(memory_mb=0)
        )
    finally:
        settings.cache_clear()
    assert unlimited.returncode != 0 and "allocated" not in unlimited.stdout


def test_shared_memory_and_the_whole_tree_count_against_the_sandboxs_memory(tmp_path: Path) -> None:
    """Per-process limits let five processes take five times the memory, and `/dev/shm` was the host's."""
    shm = _confined(
        tmp_path,
        "data = b'x' * (1024 * 1024)\nwith open('/dev/shm/fill', 'wb') as out:\n"
        "    for _ in range(400): out.write(data)\nprint('wrote')",
        Limits(memory_mb=200),
    )
    # the tmpfs is full (ENOSPC), or the memory group stops the tree first: either way it is bounded,
    # and the host's /dev/shm never saw it
    assert "wrote" not in shm.stdout and shm.returncode != 0
    assert not Path("/dev/shm/fill").exists()
    if "memory" not in cgroups.available():
        pytest.skip("no memory cgroup can be made here: the tree is limited per process only")
    tree = (
        "import os, time\nfor _ in range(4):\n    if os.fork() == 0:\n"
        "        b = bytearray(120 * 1024 * 1024)\n        b[::4096] = b'x' * len(b[::4096])\n"
        "        time.sleep(3)\n        os._exit(0)\n"
        "codes = [os.wait()[1] for _ in range(4)]\nprint('children', sum(1 for c in codes if c == 0))"
    )
    together = _confined(tmp_path, tree, Limits(memory_mb=300))
    assert together.stdout.strip() != "children 4", together.stdout + together.stderr


def test_a_command_that_fills_its_folder_past_the_disk_limit_is_stopped(tmp_path: Path) -> None:
    import asyncio

    from training_pipeline.tasks.sandboxes import run_confined

    fill = (
        "import time\nfor i in range(200):\n"
        "    open(f'f{i}', 'wb').write(b'x' * 5 * 1024 * 1024)\n    time.sleep(0.05)\nprint('filled')"
    )
    sandbox = Sandbox(tmp_path / "work", Limits(disk_mb=30, file_size_mb=8))
    with pytest.raises(RuntimeError, match="past 30 MB"):
        asyncio.run(run_confined(sandbox, ["python", "-c", fill], 60))
    assert sum(p.stat().st_size for p in sandbox.workdir.iterdir()) < 200 * 5 * 1024 * 1024


ESCAPE_SYSCALLS = r"""
import ctypes, os, threading
libc = ctypes.CDLL(None, use_errno=True)
tried = {}
def attempt(name, call):
    result = call()
    tried[name] = "blocked" if result == -1 else "allowed"
CLONE_NEWUSER, CLONE_NEWNS = 0x10000000, 0x00020000
attempt("unshare_user", lambda: libc.unshare(CLONE_NEWUSER))
attempt("unshare_mount", lambda: libc.unshare(CLONE_NEWNS))
attempt("mount", lambda: libc.mount(b"none", b"/tmp", b"tmpfs", 0, None))
attempt("keyctl", lambda: libc.syscall(250, 0, 0, 0, 0, 0))  # keyctl on x86_64
attempt("ptrace", lambda: libc.ptrace(16, 1, None, None))  # PTRACE_ATTACH to PID 1
worked = []
thread = threading.Thread(target=lambda: worked.append(1))
thread.start(); thread.join()
tried["threads"] = "allowed" if worked else "blocked"
print(tried)
"""


def test_the_sandbox_refuses_namespaces_mounts_keyrings_and_ptrace_but_threads_work(tmp_path: Path) -> None:
    import platform

    if platform.machine() != "x86_64":
        pytest.skip("the probe names x86_64's system call numbers")
    done = _confined(tmp_path, ESCAPE_SYSCALLS, Limits())
    assert done.returncode == 0, done.stderr
    tried = eval(done.stdout)  # a dict literal printed by the probe
    assert tried == {
        "unshare_user": "blocked",
        "unshare_mount": "blocked",
        "mount": "blocked",
        "keyctl": "blocked",
        "ptrace": "blocked",
        "threads": "allowed",
    }


def test_a_sandboxs_control_groups_are_removed_when_it_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from training_pipeline.tasks.sandboxes import run_confined

    if not cgroups.available():
        pytest.skip("no control group can be made here")
    roots = {Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup/memory")}
    # this test's sandboxes' groups, told by their first processes (other tests may run sandboxes now)
    sandboxes: list[int] = []
    release = cgroups.release
    monkeypatch.setattr(cgroups, "release", lambda pid: (sandboxes.append(pid), release(pid)))
    for _ in range(3):
        asyncio.run(run_confined(Sandbox(tmp_path / "work"), ["python", "-c", "print(1)"], 60))
    assert len(sandboxes) == 3
    made = {root / f"{cgroups.PREFIX}{pid}" for root in roots for pid in sandboxes}
    assert not {group for group in made if group.exists()}


def test_the_seccomp_program_is_one_file_however_its_processes_end(tmp_path: Path) -> None:
    """Every process that launches a sandbox needs the filter in a file; one killed or ended by
    `os._exit` (as step processes are) runs no exit handler, so a file of its own stayed behind. They
    share one, named by its content, and use it only when nobody else could have written it."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    write = (
        "import os; from training_pipeline.sandbox.seccomp import program_file; "
        "print(program_file()); os._exit(0)"
    )
    env = {**os.environ, "TMPDIR": str(folder)}
    paths = {
        subprocess.run(
            [sys.executable, "-c", write], env=env, capture_output=True, text=True, check=True
        ).stdout
        for _ in range(3)
    }
    assert len(paths) == 1 and [p.name for p in folder.iterdir()] == [Path(paths.pop().strip()).name]
    shared = next(folder.iterdir())
    program = shared.read_bytes()
    shared.write_bytes(b"\x06\x00\x00\x00\x00\x00\xff\x7f")  # a program allowing everything
    again = subprocess.run([sys.executable, "-c", write], env=env, capture_output=True, text=True, check=True)
    assert again.stdout.strip() == str(shared) and shared.read_bytes() == program
    if os.geteuid() == 0:  # a name another user took first: never read, whoever's file is used
        shared.write_bytes(b"\x06\x00\x00\x00\x00\x00\xff\x7f")
        os.chown(shared, 65534, 65534)
        folder.chmod(0o1777)
        used = subprocess.run(
            [sys.executable, "-c", write], env=env, capture_output=True, text=True, check=True
        )
        path = Path(used.stdout.strip())
        assert path.read_bytes() == program and path.stat().st_uid == 0
