"""The bounded process pool both builds share: the CLI's `build-datasets` and a day of the daily assets.

Shares of the input go to worker processes and come back in input order, so the files written are the
same, byte for byte, as a one-process run's. At most `IN_FLIGHT` shares per worker are in flight
(submitted and not yet written): memory holds that many shares and their results whatever the input's
size and however slow the writer or busy the machine is. A share waits to be submitted until the oldest
one is written, so a slow writer (or a starved parent) throttles the reading instead of piling up
results.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import select
import sys
import threading
import time
import types
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, TypeVar

Share = TypeVar("Share")
Result = TypeVar("Result")

#: shares in flight per worker: one being processed, one queued so the worker never waits on the parent
IN_FLIGHT = 2


def default_workers() -> int:
    return os.cpu_count() or 1


def ordered_map(
    shares: Iterable[Share],
    here: Callable[[Share], Result],
    workers: int,
    remote: Callable[[Share], Result],
    initializer: Callable[..., None],
    initargs: tuple[Any, ...],
    start_method: str = "fork",
    preload: Sequence[str] = (),
    again: Callable[[Share, Result], Share | None] | None = None,
) -> Iterator[Result]:
    """`here(share)` for each share in this process when `workers` <= 1; else `remote(share)` on
    `workers` processes set up by `initializer(*initargs)`, results yielded in input order.

    `again(share, result)`, called in input order, may return a share to process instead, where the
    first was (a worker could not know what the shares before it held): its result takes the first's
    place, and is offered to `again` in turn.

    `start_method`: `fork` where this process runs no other threads (the CLI); `forkserver` inside a
    host with threads of its own (a Dagster step, with Arrow's and Dagster's threads): workers are forked
    from a clean server process, which imports `remote`'s module once for all of them (its pages then
    shared, not copied per worker), and the modules named in `preload` (what the shares bring along,
    which each worker would otherwise import on its first)."""
    if workers <= 1 or multiprocessing.current_process().daemon:
        # a daemonic process (a step on a Celery prefork worker) may not start processes: the shares
        # run here, and the deployment's scale-out is its workers
        for share in shares:
            yield _settled(share, here(share), again, here)
        return
    context = multiprocessing.get_context(start_method)
    if start_method == "forkserver":
        context.set_forkserver_preload([remote.__module__, *preload])
    pool = ProcessPoolExecutor(
        workers,
        mp_context=context,
        initializer=_start_worker,
        initargs=(os.getpid(), initializer, *initargs),
    )
    pending: deque[tuple[Share, Future[Result]]] = deque()

    def submitted(share: Share) -> Future[Result]:
        with _host_main_hidden(start_method):  # a submit may start a worker
            return pool.submit(remote, share)

    def settled() -> Result:
        share, future = pending.popleft()
        return _settled(share, future.result(), again, lambda retry: submitted(retry).result())

    try:
        for share in shares:
            pending.append((share, submitted(share)))
            if len(pending) >= IN_FLIGHT * workers:
                yield settled()
        while pending:
            yield settled()
    finally:
        pool.shutdown(cancel_futures=True)


def _settled(
    share: Share,
    result: Result,
    again: Callable[[Share, Result], Share | None] | None,
    process: Callable[[Share], Result],
) -> Result:
    while again is not None and (retry := again(share, result)) is not None:
        share, result = retry, process(retry)
    return result


def _start_worker(pipeline: int, initializer: Callable[..., None], *initargs: Any) -> None:
    """A worker's set-up: it dies with the process that started the pool, then `initializer` runs.

    A worker's parent is the fork server, not the pipeline, and every worker holds the pipe whose end
    tells the fork server (and the resource tracker) that the pipeline is gone: after a `kill -9` of
    the pipeline they all waited for ever. Each worker watches the pipeline's process through a pidfd
    and exits when it ends; with the workers gone, the fork server and the tracker see their pipes close
    and exit too.

    What the worker was forked with (the fork server's imports: Presidio and spaCy when personal data is
    looked for) is frozen out of its garbage collections first: a collection writes to every object it
    visits, which would copy each page shared with the fork server and its other workers into this one."""
    gc.freeze()
    _die_with(pipeline)
    initializer(*initargs)


def _die_with(pid: int) -> None:
    try:
        watched: int | None = os.pidfd_open(pid)
    except ProcessLookupError:  # gone already: nothing to work for
        os._exit(1)
    except OSError:  # a kernel without pidfds: asked once a second instead
        watched = None

    def watch() -> None:
        if watched is not None:
            select.select([watched], [], [])
        else:
            while _alive(pid):
                time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="die-with-pipeline", daemon=True).start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_main_lock = threading.Lock()
_main_hidden: list[types.ModuleType] = []  # the host's `__main__` while hidden, once per holder


@contextlib.contextmanager
def _host_main_hidden(start_method: str) -> Iterator[None]:
    """While a worker starts from the fork server, the host's `__main__` is an empty module.

    multiprocessing runs the host's main script again in every such worker (`__mp_main__`): inside a
    Dagster step that is the `dagster` command or the script that called `materialize`, which imports
    Dagster (seconds per worker) or, without a main guard, starts a second run. The workers need only
    `remote`'s module, which the fork server has already imported. Two pools starting at once (two
    threads) hide it once and the last to finish puts it back."""
    if start_method == "fork":
        yield
        return
    with _main_lock:
        _main_hidden.append(sys.modules["__main__"] if not _main_hidden else _main_hidden[0])
        sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        with _main_lock:
            host = _main_hidden.pop()
            if not _main_hidden:
                sys.modules["__main__"] = host
