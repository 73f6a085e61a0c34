"""The lake's write lease: one writer at a time, and everyone else told who holds it.

Two ``kbflow ingest`` runs on one lake would both embed, both append, and
leave duplicate rows behind (Lance lets two appends commit side by side). So
every command that writes the lake's tables (``ingest``, ``remove``, ``tag``,
``gc``, and each Dagster asset body) holds the lake's lease while it writes:

- ``exclusive`` (an ingest run, ``remove``, ``tag``, ``gc``): no one else writes;
- ``shared`` (a Dagster asset materialized on its own, e.g. from the UI):
  compatible with other shared holders, not with an exclusive one.

A second writer waits up to ``wait`` seconds, then gets :class:`LakeBusyError`
naming the holder (command, process id, host, since when). Nested leases in
one process are free: an ingest run holding the lease runs its Dagster steps,
which ask for it again, without blocking itself.

On a local lake the lease is an ``flock`` on ``<lake>/_kbflow.lock`` (the
kernel releases it when the holder dies, so a killed ingest never leaves the
lake locked) plus a note of who holds it in ``<lake>/_kbflow.lock.json``.
On S3 the lease is a lease object changed only by conditional puts, with
expiry and renewal (:mod:`kbflow.lake.object_lease`). Other object stores
have no lease: concurrent writers there are guarded only by the
key-uniqueness check and the repair every ingest starts with
(:func:`kbflow.lake.repair.repair_duplicates`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from kbflow.config.env import env
from kbflow.errors import LakeBusyError, LakeError
from kbflow.lake.object_lease import describe, is_s3

__all__ = ["LOCK_FILE", "describe", "holder", "lease"]

LOCK_FILE = "_kbflow.lock"
_POLL = 0.2

# lake path -> [fd, exclusive, depth]: what this process holds (flock locks belong to the open file)
_held: dict[str, list[Any]] = {}
_guard = threading.Lock()


def _path(uri: str) -> str | None:
    if "://" in uri and not uri.startswith("file://"):
        return None
    return uri.removeprefix("file://")


def holder(uri: str) -> dict[str, Any] | None:
    """Who holds (or last held) the lease of the lake at ``uri``, as its note says; ``None`` if no note."""
    path = _path(uri)
    if path is None:
        return None
    try:
        with open(os.path.join(path, LOCK_FILE + ".json"), encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def _write_note(path: str, command: str, exclusive: bool) -> None:
    note = {
        "command": command,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "exclusive": exclusive,
        "since": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
    }
    tmp = os.path.join(path, f"{LOCK_FILE}.{os.getpid()}.tmp")
    with contextlib.suppress(OSError):
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(note, fh)
        os.replace(tmp, os.path.join(path, LOCK_FILE + ".json"))


def _acquire_local(path: str, uri: str, exclusive: bool, wait: float) -> int:
    """The ``flock``-ed lock file of a local lake (its descriptor), waiting up to ``wait`` seconds."""
    try:
        fd = os.open(os.path.join(path, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        from kbflow.lake.storage import storage_error

        raise storage_error(exc, path) or LakeError(
            f"{path}: cannot open the lake's lock file ({exc.strerror or exc})"
        ) from None
    deadline = time.monotonic() + max(0.0, wait)
    try:
        while True:
            try:
                fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    busy = describe(holder(uri))
                    hint = "wait for it to finish, or pass --wait SECONDS" if wait <= 0 else f"waited {wait:g}s"
                    raise LakeBusyError(f"{path}: the lake is being written by {busy}; {hint}") from None
                time.sleep(_POLL)
    except BaseException:
        os.close(fd)
        raise


def _release_local(fd: int) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextlib.contextmanager
def lease(uri: str, command: str | None = None, *, exclusive: bool = True, wait: float = 0.0) -> Iterator[None]:
    """Hold the lake's write lease while the ``with`` block runs.

    Parameters
    ----------
    uri:
        The lake.
    command:
        What holds it, as the busy message names it (default: this process's command line).
    exclusive:
        An exclusive lease (no other writer) or a shared one (other shared holders allowed).
    wait:
        Seconds to wait for a busy lease before giving up.

    Raises
    ------
    LakeBusyError
        Another process holds the lease (the message names it) and ``wait`` ran out.
    """
    path = _path(uri)
    key = path if path is not None else uri
    if (path is None and not is_s3(uri)) or env("KBFLOW_LEASE_HELD") == key:
        yield  # object storage other than S3: no lease; or a worker of a run that holds it already
        return
    with _guard:
        mine = _held.get(key)
        if mine is not None and (mine[1] or not exclusive):
            mine[2] += 1  # nested in a lease this process holds: free
            nested = True
        else:
            nested = False
    if nested:
        try:
            yield
        finally:
            with _guard:
                _held[key][2] -= 1
        return
    if mine is not None:  # shared held, exclusive wanted: upgrading would deadlock another upgrader
        raise LakeError(f"{key}: this process holds a shared lease and asks for an exclusive one")
    command = command or " ".join(os.path.basename(a) for a in sys.argv[:3])
    if path is None:
        from kbflow.lake.object_lease import ObjectLease
        from kbflow.lake.storage import env_storage_options

        held: Any = ObjectLease(uri, env_storage_options(), command, exclusive)
        held.acquire(wait)
    else:
        held = _acquire_local(path, uri, exclusive, wait)
        if exclusive:
            _write_note(path, command, exclusive)
    with _guard:
        _held[key] = [held, exclusive, 1]
    try:
        yield
    finally:
        with _guard:
            del _held[key]
        if path is None:
            held.release()
        else:
            _release_local(held)
