"""A tool server that cannot start says why and where its stderr went, at once when it dies and after
the step's timeout when it hangs."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from tests.helpers import command_lines
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
