"""The PDF worker processes, and the look-ahead that keeps them busy from one document to the next.

Each worker is a ``python -m kbflow.sources.pdf.worker`` subprocess (tasks in on
stdin, each page out on stdout as a JSON head line and the parsed page
pickled: pickle reads and writes a page's thousands of floats several times
faster than JSON, and only this process's own workers write it) with a reader
thread that takes the pages as they come, so a worker never waits on a full
pipe while this process builds a document's text. A document's tasks go out
at most :data:`WINDOW` per worker ahead of the pages taken, which bounds
memory to a few pages per worker.

A loader that knows the next file starts it early (:func:`ahead`): while this
process builds one document's page texts (its second pass, which needs every
page), the workers parse the next document's first pages. A run abandoned
half-way takes its pending pages off the workers, so that no worker ever
answers one document's task with another's pages.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Iterator

from kbflow.config.env import env

__all__ = ["WINDOW", "ahead", "pdf_workers", "run", "running"]

#: one parsed page as the workers hand it over: (page number, the page pickled or None, error or None, the keys
#: of its edge lines, for the header/footer decision)
Parsed = tuple[int, bytes | None, str | None, list[str]]
#: tasks in flight per worker
WINDOW = 2


def pdf_workers() -> int:
    """Worker processes for PDF parsing: ``$KBFLOW_PDF_WORKERS``, else the CPUs this process may use."""
    given = env("KBFLOW_PDF_WORKERS")
    if given:
        return max(1, int(given))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


class _Worker:
    """One worker subprocess, its output read by a thread into a queue of pages (``None``: it exited)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kbflow.sources.pdf.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        )
        self.pages: queue.Queue[Parsed | None] = queue.Queue()
        self.dead = False
        #: why it was given up while still running (its pages' error says so), else ``None``
        self.given_up: str | None = None
        threading.Thread(target=self._read, name="kbflow-pdf-reader", daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        stdout = self.proc.stdout
        try:
            while head := stdout.readline():
                number, error, edges, size = json.loads(head)
                body = stdout.read(size) if size else None
                if body is not None and len(body) < size:  # cut short: the worker died writing it
                    break
                self.pages.put((number, body, error, edges))
        except (ValueError, TypeError):  # not a page's head: the worker is out of step, and given up
            self.give_up("wrote something that is not a page")
        finally:
            self.pages.put(None)

    def send(self, path: str, numbers: list[int], ocr: bool, tables: bool) -> None:
        assert self.proc.stdin is not None
        try:
            task = {"path": path, "pages": numbers, "ocr": ocr, "tables": tables}
            self.proc.stdin.write(json.dumps(task).encode() + b"\n")
            self.proc.stdin.flush()
        except OSError:  # it died: its pages are reported as it answers them (receive)
            self.dead = True

    def receive(self, numbers: list[int]) -> list[Parsed]:
        """The task's pages (:func:`~kbflow.sources.pdf.worker.main`)."""
        out: list[Parsed] = []
        for n in numbers:
            page = None if self.dead else self.pages.get()
            if page is not None and page[0] != n:  # out of step with its tasks: nothing more it says is trusted
                self.give_up(f"answered page {page[0]} when asked for page {n}")
                page = None
            if page is None:  # the worker died (killed, out of memory): its pages are reported, the others go on
                self.dead = True
                why = self.given_up or f"died (exit status {self.proc.poll()})"
                out.append((n, None, f"the PDF worker process {why}", []))
                continue
            out.append(page)
        return out

    def give_up(self, why: str) -> None:
        """Kill a worker out of step with its tasks; ``why`` goes into its pages' errors."""
        self.given_up = self.given_up or f"was stopped: it {why}"
        self.proc.kill()

    def alive(self) -> bool:
        return not self.dead and self.proc.poll() is None

    def stop(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


_workers: list[_Worker] = []


def _pool(size: int) -> list[_Worker]:
    """``size`` live workers, started once per process and reused."""
    global _workers
    _workers = [w for w in _workers if w.alive()]
    while len(_workers) < size:
        _workers.append(_Worker())
    return _workers[:size]


def running() -> int:
    """How many workers are up now (started by an earlier parse in this process)."""
    return sum(1 for w in _workers if w.alive())


@atexit.register
def _stop_pool() -> None:
    for worker in _workers:
        worker.stop()


class Run:
    """One document's tasks on the pool: those sent and not yet taken, and those still to send."""

    def __init__(self, key: tuple, tasks: list[list[int]], workers: int) -> None:
        self.key, self.size = key, workers
        self.pool = _pool(workers)
        self.todo = deque(tasks)
        self.pending: deque[tuple[_Worker, list[int]]] = deque()  # in the order sent; each worker answers in order
        self.sent = 0

    def fill(self) -> None:
        path, ocr, tables = self.key
        while self.todo and len(self.pending) < WINDOW * len(self.pool):
            worker = self.pool[self.sent % len(self.pool)]
            numbers = self.todo.popleft()
            worker.send(path, numbers, ocr, tables)
            self.pending.append((worker, numbers))
            self.sent += 1

    def results(self) -> Iterator[Parsed]:
        """Every page of the document in order; the pages still pending are taken off if the caller stops."""
        try:
            self.fill()
            while self.pending:
                worker, numbers = self.pending.popleft()
                got = worker.receive(numbers)
                self.fill()
                yield from got
        finally:
            self.drain()

    def drain(self) -> None:
        """Take the pending pages off the workers, unread (the run is given up)."""
        self.todo.clear()
        while self.pending:
            worker, numbers = self.pending.popleft()
            worker.receive(numbers)


_ahead: list[Run] = []


def ahead(path: str, tasks: list[list[int]], workers: int, ocr: bool, tables: bool) -> None:
    """Start parsing ``path``'s first pages now, for the :func:`run` that will ask for them."""
    started = run(path, tasks, workers, ocr, tables)  # any other look-ahead given up first
    started.fill()
    _ahead.append(started)


def run(path: str, tasks: list[list[int]], workers: int, ocr: bool, tables: bool) -> Run:
    """The run of ``path``'s pages: the one :func:`ahead` started, else a new one (a look-ahead for another
    document, or with other settings, is given up first)."""
    key = (path, ocr, tables)
    found = None
    for started in _ahead:
        if started.key == key and started.size == workers:
            found = started
        else:
            started.drain()
    _ahead.clear()
    return found or Run(key, tasks, workers)
