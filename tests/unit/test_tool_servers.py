"""A tool server that cannot start says why and where its stderr went, at once when it dies and after
the step's timeout when it hangs; and it never outlives the process that started it."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.helpers import REPO, command_lines, until_gone
from training_pipeline.sandbox import Sandbox
from training_pipeline.tasks.toolservers import ToolServer, ToolServerError


def _server(tmp_path: Path, code: str, timeout: float) -> ToolServer:
    return ToolServer(
        "broken", Sandbox(tmp_path / "work"), [sys.executable, "-c", code], tmp_path / "err.log", timeout
    )


def test_a_server_that_exits_is_reported_at_once_with_its_stderr_file(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(ToolServerError, match="did not start") as raised:
        _server(tmp_path, "import sys; print('no such tool', file=sys.stderr); sys.exit(3)", 30).__enter__()
    assert time.monotonic() - started < 20
    assert str(tmp_path / "err.log") in str(raised.value)
    assert "no such tool" in (tmp_path / "err.log").read_text()


def test_a_server_that_never_answers_names_the_timeout_to_raise_and_is_stopped(tmp_path: Path) -> None:
    marker = f"hang-{tmp_path.name}"
    with pytest.raises(ToolServerError, match=r"within 1 s.*timeout_seconds") as raised:
        _server(tmp_path, f"import time; time.sleep(60)  # {marker}", 1).__enter__()
    assert str(tmp_path / "err.log") in str(raised.value)
    assert command_lines(marker) == {}


def test_a_server_that_ignores_its_input_ends_with_the_process_that_started_it(tmp_path: Path) -> None:
    """Its starter killed (`kill -9`, the OOM killer) while the server runs: an MCP server ends when its
    input does, but task code need not; the sandbox ends all the same."""
    marker = f"deaf-{uuid.uuid4().hex}"
    deaf = f"import time; time.sleep(120)  # {marker}"  # never reads its input, never answers
    starter = tmp_path / "starter.py"  # a file: the marker is then on the server's command line alone
    starter.write_text(
        "import sys\nfrom pathlib import Path\nfrom training_pipeline.sandbox import Sandbox\n"
        "from training_pipeline.tasks.toolservers import ToolServer\n"
        f"ToolServer('deaf', Sandbox(Path({str(tmp_path / 'work')!r})), [sys.executable, '-c', {deaf!r}],"
        f" Path({str(tmp_path / 'err.log')!r}), 60).__enter__()\n"
    )
    process = subprocess.Popen([sys.executable, str(starter)], cwd=REPO)
    try:
        deadline = time.monotonic() + 30
        while not [argv for argv in command_lines(marker).values() if "python" in argv[0]]:
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        process.kill()
        process.wait()
    until_gone(marker, seconds=10)
