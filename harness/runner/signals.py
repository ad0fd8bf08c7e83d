"""Stop signals: SIGTERM and SIGHUP end a run like Ctrl-C, and nothing interrupts the writing
of its result.

``timeout``, CI runners, Slurm and Kubernetes stop a job with SIGTERM; a closed terminal sends
SIGHUP. Python only turns SIGINT into an exception, so :func:`stop_signals_raise` makes the
other two raise :class:`Terminated`. Once a run is stopping, :func:`deferred_signals` holds
every further stop signal back until the stop and the result are done (a second Ctrl-C 0.3 s
after the first must not land inside them).
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived. A BaseException, like KeyboardInterrupt, so that ordinary
    ``except Exception`` handlers do not swallow it."""

    def __init__(self, signum: int):
        super().__init__(f"terminated by {signal.Signals(signum).name}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


_last_terminating: list[int] = []


def _raise_terminated(signum, _frame) -> None:
    _last_terminating.append(signum)
    raise Terminated(signum)


def terminations_received() -> int:
    """How many SIGTERM/SIGHUP this process has received while they raise: a caller compares
    the count before and after a run to tell its own termination from a run whose training
    process was killed from outside."""
    return len(_last_terminating)


def terminated_exit_code() -> int:
    """128 + the SIGTERM/SIGHUP that terminated the last run (143 when none is known)."""
    return 128 + (_last_terminating[-1] if _last_terminating else signal.SIGTERM)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def stop_signals_raise() -> Iterator[None]:
    """While inside, SIGTERM and SIGHUP raise :class:`Terminated` (SIGINT raises
    KeyboardInterrupt as always). Does nothing outside the main thread."""
    if not _in_main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _raise_terminated) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class _Deferred:
    def __init__(self) -> None:
        self.received: list[int] = []

    def __call__(self, signum, _frame) -> None:
        self.received.append(signum)


@contextmanager
def deferred_signals() -> Iterator[list[int]]:
    """While inside, stop signals are recorded instead of acted on; yields the list of the
    signals that arrived. The caller decides what they mean afterwards (a run that is
    already stopping ignores them)."""
    deferred = _Deferred()
    if not _in_main_thread():
        yield deferred.received
        return
    previous = {sig: signal.signal(sig, deferred) for sig in STOP_SIGNALS}
    try:
        yield deferred.received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def stop_wrapped_in(exc: BaseException) -> BaseException | None:
    """The stop a library wrapped: a stop signal's handler runs in whatever Python code is
    executing, and pydantic's serializer turns an exception raised in its Python callbacks into
    a ``PydanticSerializationError`` ("Error serializing to JSON: Terminated: ..."), which no
    ``except Terminated`` catches. Returns the stop to raise instead, or None when ``exc`` holds
    none."""
    text = str(exc)
    if "Terminated: terminated by" in text:
        return Terminated(_last_terminating[-1] if _last_terminating else signal.SIGTERM)
    if "KeyboardInterrupt: " in text:
        return KeyboardInterrupt()
    return None


def raise_for(signum: int) -> None:
    """Act on a signal that was held back: raise what it would have raised."""
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)
