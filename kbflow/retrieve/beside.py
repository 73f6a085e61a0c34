"""Work run beside a search's own thread: a few helper threads, kept for the process, and never a queue.

A hybrid search over a large table can run its keyword leg while its own
thread scans the vectors in memory (:mod:`kbflow.retrieve.ranking`). A
thread started for each search costs more than it saves there (hybrid p50
0.95-0.97x at 100,000 synthetic chunks against 0.89-0.92x with threads kept,
interleaved), so the helpers are started once. Where every
helper is busy (a server under load, each of its threads searching), the
work runs in the caller's thread at once: no search ever waits in a queue
behind another's leg.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["HELPERS", "Pending", "beside"]

#: helper threads kept for the process (a search hands one job to one helper at a time)
HELPERS = 4


class Pending:
    """The result of ``work``: computed by a helper (:func:`beside`), or at :meth:`result` where none was idle."""

    def __init__(self, work: Callable[[], Any], handed: bool) -> None:
        self._work = work
        self._inline = not handed
        self._done = threading.Event()
        self._value: Any = None
        self._error: BaseException | None = None

    def _run(self) -> None:
        try:
            self._value = self._work()
        except BaseException as exc:  # raised again by result(), in the caller's thread
            self._error = exc
        finally:
            self._done.set()

    def result(self) -> Any:
        """The work's value, waiting for its helper; its exception, raised here."""
        if self._inline:
            return self._work()
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value


class _Helpers:
    def __init__(self, count: int) -> None:
        self._jobs: queue.SimpleQueue[Pending] = queue.SimpleQueue()
        self._idle = threading.Semaphore(count)
        self._count = count
        self._started = False
        self._start_lock = threading.Lock()

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                job._run()
            finally:
                self._idle.release()

    def submit(self, work: Callable[[], Any]) -> Pending:
        if not self._idle.acquire(blocking=False):
            return Pending(work, handed=False)
        if not self._started:
            with self._start_lock:
                if not self._started:
                    for n in range(self._count):
                        threading.Thread(target=self._serve, name=f"kbflow-helper-{n}", daemon=True).start()
                    self._started = True
        pending = Pending(work, handed=True)
        self._jobs.put(pending)
        return pending


_HELPERS = _Helpers(HELPERS)


def _forked() -> None:
    """A forked child has none of its parent's threads: it starts helpers of its own (on its first search)."""
    global _HELPERS
    _HELPERS = _Helpers(HELPERS)


os.register_at_fork(after_in_child=_forked)


def beside(work: Callable[[], Any]) -> Pending:
    """Start ``work`` (no arguments) in an idle helper thread; where none is idle, it runs when its result is
    asked for, in the caller's thread."""
    return _HELPERS.submit(work)
