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

from tests.helpers import run_task_file
from tests.planted_secrets import IN_ENVIRONMENT
from training_pipeline.sandbox import Limits, Sandbox, confine
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


def _processes_with(marker: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            continue
    return found


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
    return subprocess.CompletedProcess(process.args, process.returncode, out.decode(), err.decode())


def test_memory_cpu_and_process_limits_hold(tmp_path: Path) -> None:
    if os.geteuid() == 0 and confine._pids_cgroup_root() is None:
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
