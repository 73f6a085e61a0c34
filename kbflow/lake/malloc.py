"""Keep the ingesting process's memory from creeping: glibc arenas capped, freed memory handed back.

glibc gives threads that allocate at the same time separate arenas (up to 8 per
core), and memory freed in one arena is not reused by another. Lance builds its
indexes on a pool of worker threads that allocate and free large blocks, so
with the default every segment built leaves the process a little larger.
Capping the arenas makes freed memory reusable, so an ingest's memory stays
what one batch or segment needs: ``python bench/ingest_memory.py`` peaks at
829 MiB at 354,869 chunks, 1,079 MiB with ``--default-malloc``.

It only takes full effect before the threads that allocate start, so the entry
points call it first: ``kbflow`` (the CLI), the Dagster code location
(``assets``) and :func:`kbflow.ingest`. Where ``MALLOC_ARENA_MAX`` is set,
glibc already honours it and this does nothing; off glibc it does nothing.

Arrow's memory pool (mimalloc) and glibc both keep freed memory for reuse
rather than returning it to the system, so the id arrays and batches one
step frees would raise the floor the next step starts from.
:func:`release_memory` hands it back; the pipeline's steps call it when they
finish (:func:`releases_memory`) and between their large phases.
"""

from __future__ import annotations

import ctypes
import functools
import platform
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from kbflow.config.env import env

__all__ = ["limit_malloc_arenas", "release_memory", "releases_memory"]

F = TypeVar("F", bound=Callable[..., Any])

#: ``M_ARENA_MAX`` in glibc's ``<malloc.h>``
_M_ARENA_MAX = -8
_done: bool | None = None


def limit_malloc_arenas(arenas: int = 2) -> bool:
    """Cap glibc's malloc arenas at ``arenas`` for this process (once); True where the cap is set."""
    global _done
    if _done is not None:
        return _done
    _done = False
    if env("MALLOC_ARENA_MAX"):
        return _done
    libc = _glibc()
    _done = bool(libc is not None and libc.mallopt(_M_ARENA_MAX, arenas))
    return _done


@functools.lru_cache(maxsize=1)
def _glibc() -> Any:
    if sys.platform != "linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


def release_memory() -> None:
    """Return the memory Arrow's pool and glibc hold freed to the system (a few milliseconds)."""
    if "pyarrow" in sys.modules:
        sys.modules["pyarrow"].default_memory_pool().release_unused()
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


def releases_memory(fn: F) -> F:
    """Decorate a pipeline step so that it calls :func:`release_memory` when it returns or fails."""

    @functools.wraps(fn)
    def step(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        finally:
            release_memory()

    return step  # type: ignore[return-value]  # the wrapper has fn's signature
