"""How many searches ``kbflow serve`` runs at once, and what it answers past that.

A search is CPU work (embedding the query, scanning vectors, ranking). On a
machine with few cores, running more of them at once does not answer more per
second: it makes every caller wait longer. So the server admits at most
``limit`` searches at a time, lets at most ``queue`` more wait for a slot, and
answers the rest at once with ``503 Service Unavailable`` and ``Retry-After``,
before spending any work on them (:class:`Admission`). A caller that gets a
503 retries later; the ones admitted are answered in about the time one search
takes, whatever the load.

Only the routes that search are metered (:func:`searches`): ``/v1/search``,
recalling claims with ``q``, the web page's search and MCP tool calls. Health,
chunks, sources and the pages stay answered past saturation.
"""

from __future__ import annotations

import asyncio
import os
import urllib.parse
from dataclasses import dataclass, field

__all__ = ["Admission", "default_limit", "searches"]

#: seconds a refused caller is told to wait before trying again
RETRY_AFTER = 1
#: searches that may wait per slot by default: enough that a slot freed finds the next search waiting (no idle
#: gap while refused callers sleep), few enough that one admitted waits at most three searches' time
QUEUE_PER_SLOT = 2


def default_limit(workers: int = 1) -> int:
    """Searches at once per server process: the machine's cores shared among ``workers`` processes (at least 1)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cores // max(1, workers))


def searches(method: str, path: str, query_string: bytes) -> bool:
    """Whether a request runs a search (the routes :class:`Admission` meters)."""
    if path == "/v1/search" or (method == "POST" and path.startswith("/mcp")):
        return True
    if method == "GET" and path in ("/", "/v1/claims"):
        asked = urllib.parse.parse_qs(query_string.decode("latin-1")).get("q", [""])
        return any(q.strip() for q in asked)
    return False


@dataclass
class Admission:
    """At most ``limit`` searches at once and ``queue`` waiting (default :data:`QUEUE_PER_SLOT` per slot); the rest
    refused (``limit`` 0: no bound).

    One per server process, used from its event loop: :meth:`enter` answers
    ``True`` once the request holds a slot (it must then :meth:`leave`), or
    ``False`` at once when the slots and the queue are full.
    """

    limit: int = field(default_factory=default_limit)
    queue: int | None = None
    running: int = 0
    waiting: int = 0
    refused: int = 0
    _free: asyncio.Condition | None = field(default=None, repr=False)
    _loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.limit < 0:
            raise ValueError(f"limit must be >= 0 (0: no bound), got {self.limit}")
        if self.queue is None:
            self.queue = QUEUE_PER_SLOT * self.limit
        if self.queue < 0:
            raise ValueError(f"queue must be >= 0, got {self.queue}")

    @property
    def full(self) -> bool:
        """Whether a search arriving now would be refused (every slot taken and the queue full)."""
        return bool(self.limit) and self.running >= self.limit and self.waiting >= (self.queue or 0)

    def _condition(self) -> asyncio.Condition:
        loop = asyncio.get_running_loop()
        if self._free is None or self._loop is not loop:
            self._free, self._loop = asyncio.Condition(), loop
        return self._free

    async def enter(self) -> bool:
        """Take a slot, waiting in the queue if there is room in it; ``False``: refused."""
        if not self.limit:
            return True
        if self.running < self.limit and not self.waiting:
            self.running += 1
            return True
        if self.waiting >= (self.queue or 0):
            self.refused += 1
            return False
        free = self._condition()
        self.waiting += 1
        try:
            async with free:
                await free.wait_for(lambda: self.running < self.limit)
                self.running += 1
        finally:
            self.waiting -= 1
        return True

    async def leave(self) -> None:
        """Give the slot back and wake one waiting request."""
        if not self.limit:
            return
        self.running -= 1
        if self.waiting:
            free = self._condition()
            async with free:
                free.notify(1)
