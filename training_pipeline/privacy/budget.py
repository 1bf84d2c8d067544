"""A wall-clock budget for redacting one text or one record.

Every rule is audited to match in linear time (`tests/unit/test_redos.py` runs each family against
adversarial strings), but a linear pattern can still cost a minute on megabytes built to be its worst
case, and a rule set refreshed from upstream may bring a pattern nobody audited yet. So the redaction
of one record, or of one stored text, runs under a budget: past it, `OverBudget` is raised inside the
matching itself (`re` checks for signals while it backtracks), the record is quarantined with the
reason, and a stored text becomes a placeholder. Nothing is kept unredacted and the day goes on.

The budget is a `SIGALRM` timer, so it holds on the main thread of a process (the pool's workers, a
step's process, the CLI); elsewhere the audit alone bounds the time. Budgets do not nest: an inner one
runs under the outer one's timer.
"""

from __future__ import annotations

import _signal  # the handler as it is, without `signal.getsignal`'s enum lookup (asked every record)
import signal
import threading
from types import TracebackType

__all__ = ["OverBudget", "budget"]

_active = False
#: the SIGALRM handler that was in place when `budget` installed its own, which it hands other alarms to
_previous: object = signal.SIG_DFL


class OverBudget(RuntimeError):
    """Redaction ran past its budget: the text is treated as one that could not be redacted."""


def _expire(signum: int, frame: object) -> None:
    if _active:
        raise OverBudget("redaction ran past its time budget")
    if callable(_previous):  # an alarm of someone else's, outside any budget: theirs to handle
        _previous(signum, frame)
    elif _previous == signal.SIG_DFL:  # what the default would have done: end the process
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.raise_signal(signal.SIGALRM)


def budget(seconds: float) -> _Budget:
    """A block that raises `OverBudget` once it has run `seconds` (0: no budget): `with budget(s):`.

    The handler is installed once and stays (handing alarms outside a budget to the one it replaced),
    put back if something else replaced it: installing and restoring it around each record costs far
    more than the two timer calls."""
    return _Budget(seconds)


class _Budget:
    """The block of one `budget`: a plain class, as it is entered once per record."""

    __slots__ = ("_armed", "_seconds")

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds
        self._armed = False

    def __enter__(self) -> None:
        global _active, _previous
        if self._seconds <= 0 or _active or threading.current_thread() is not threading.main_thread():
            return
        if _signal.getsignal(signal.SIGALRM) is not _expire:
            _previous = signal.signal(signal.SIGALRM, _expire)
        _active = self._armed = True
        signal.setitimer(signal.ITIMER_REAL, self._seconds)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        global _active
        if self._armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            _active = self._armed = False
