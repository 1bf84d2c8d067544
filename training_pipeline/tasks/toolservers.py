"""Tool servers for agents: an MCP server (Model Context Protocol) over stdio, started confined, its
tools offered to the agent beside its envs' tools.

The server is code from the task folder, so it runs in a sandbox like any task code (see
`training_pipeline.sandbox`); when it names a deployed sandbox it works in that sandbox's folder, so
the files its tools write are the ones later steps (tests, downloads) see. The MCP client is
asynchronous and the agent loop calls tools from threads, so each server's session lives on its own
event loop in a thread, and `call_tool` hands calls to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from training_pipeline.sandbox import Sandbox
from training_pipeline.tasks.sandboxes import argv_of

if TYPE_CHECKING:
    from mcp import ClientSession

#: a tool's reply longer than this goes back to the agent cut, with a note
RESULT_LIMIT = 64 * 1024


class ToolServerError(RuntimeError):
    pass


class ToolServer:
    """One running MCP server and its session; use as a context manager."""

    def __init__(
        self, name: str, sandbox: Sandbox, command: list[str], errlog: Path, timeout_seconds: float = 30.0
    ) -> None:
        """`errlog`: where the server's stderr goes (a file of the run, scrubbed when the run ends:
        never the pipeline's own stderr, which Dagster keeps)."""
        self.name = name
        self.errlog = errlog
        self.sandbox = sandbox
        self.command = command
        self.timeout_seconds = timeout_seconds
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"mcp-{name}", daemon=True)
        self._session: ClientSession | None = None
        self._stop: asyncio.Event | None = None
        self._done: Future[None] | None = None
        self._tools: list[dict[str, Any]] = []
        #: how far the start got, for the error that says it did not finish
        self._reached = "its event loop was not started"

    def __enter__(self) -> ToolServer:
        self._thread.start()
        ready: Future[None] = Future()
        self._done = asyncio.run_coroutine_threadsafe(self._serve(ready), self._loop)
        # the initialize's timeout is the coroutine's (so the MCP client's shielded clean-up stops the
        # process); this wait only needs to outlast it and that clean-up
        waited = self.timeout_seconds + 30
        try:
            ready.result(timeout=waited)
        except TimeoutError as err:
            reached = self._reached  # before `close`, which ends the start wherever it was
            self.close()
            raise ToolServerError(
                f"tool server {self.name!r} did not start within "
                f"{self.timeout_seconds if ready.done() else waited:g} s ({reached}; a slow start: raise "
                f"the step's timeout_seconds); its stderr is in {self.errlog}"
            ) from err
        except Exception as err:
            self.close()
            raise ToolServerError(
                f"tool server {self.name!r} did not start: {err}; its stderr is in {self.errlog}"
            ) from err
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def _serve(self, ready: Future[None]) -> None:
        # here, not at the top: the `mcp` package costs every process that loads the code location
        # (each run's among them) most of a second, and only a task with a tool server needs it
        self._reached = "importing the MCP client"
        import anyio
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        self._reached = "preparing its sandbox"
        self.sandbox.workdir.mkdir(parents=True, exist_ok=True)
        # its lifeline is its stdin, the MCP client's pipe, which only this process writes: the server ends
        # when this process does, however it died, whether or not it reads its input to the end
        argv = self.sandbox.argv(argv_of(self.command), lifeline=0)
        parameters = StdioServerParameters(
            command=argv[0], args=argv[1:], env=self.sandbox.environment(), cwd=str(self.sandbox.workdir)
        )
        self._stop = asyncio.Event()
        self.errlog.parent.mkdir(parents=True, exist_ok=True)
        errlog = self.errlog.open("a", encoding="utf-8")
        try:
            async with (
                stdio_client(parameters, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                self._reached = "started, waiting for its answer to MCP's initialize"
                with anyio.fail_after(self.timeout_seconds):
                    await session.initialize()
                    listed = await session.list_tools()
                self._tools = [
                    {
                        "type": "function",
                        "function": {
                            "name": tool.name,
                            "description": tool.description or "",
                            "parameters": tool.input_schema,
                        },
                    }
                    for tool in listed.tools
                ]
                self._session = session
                ready.set_result(None)
                await self._stop.wait()
        except BaseException as err:
            if not ready.done():
                ready.set_exception(_first_cause(err))
            raise
        finally:
            self._session = None
            errlog.close()

    def tools(self) -> list[dict[str, Any]]:
        """The server's tools as OpenAI function schemas."""
        return list(self._tools)

    def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """The tool's result: its structured content when it gives one, else its text."""
        session = self._session
        if session is None:
            raise ToolServerError(f"tool server {self.name!r} is not running")
        call = asyncio.run_coroutine_threadsafe(session.call_tool(name, arguments), self._loop)
        result = call.result(timeout=self.timeout_seconds)
        structured = result.structured_content
        text = "\n".join(getattr(part, "text", "") for part in result.content)
        if result.is_error:
            raise ValueError(text or f"tool {name!r} failed")
        if isinstance(structured, dict) and set(structured) == {"result"}:
            structured = structured["result"]  # how the SDK wraps a tool's non-object return value
        value: Any = structured if structured is not None else text
        shown = json.dumps(value) if not isinstance(value, str) else value
        if len(shown) > RESULT_LIMIT:
            return shown[:RESULT_LIMIT] + f"… [cut at {RESULT_LIMIT} characters]"
        return value

    def close(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._done is not None:
            # the server's own exit status does not matter once we are done with it
            with contextlib.suppress(Exception):
                self._done.result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self._loop.close()


def _first_cause(err: BaseException) -> BaseException:
    """What went wrong, out of the task groups the MCP client wraps it in."""
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    return err
