"""The write lease of a lake on S3: a lease object changed only by conditional puts, with expiry and renewal.

An object store has no ``flock``, and Lance's own commit handling is not
enough: two writers' appends both commit (Lance rebases one on the other),
so two ingests would both embed and leave duplicate rows. The lease is one
small JSON object, ``<lake>/_kbflow.lease.json``, listing its holders, each
with an expiry. Every change is a compare-and-swap: a put with ``If-Match:
<the ETag read>`` (or ``If-None-Match: *`` when there is no object yet), so of
two writers racing, exactly one wins and the other reads again. A holder
renews its expiry every third of :data:`LEASE_SECONDS` from a thread; a
holder that died stops renewing and its entry expires, so a killed ingest
never leaves the lake locked for longer than that. A writer whose renewal
found its entry taken over (it was stalled past its expiry) is told so when
its lease is released (:class:`~kbflow.errors.LakeBusyError`): another writer
may have written meanwhile, and the next ingest's repair step removes any
duplicate it left.

Works on AWS S3 and on S3-compatible stores with conditional writes
(``AWS_ENDPOINT_URL``); the same credentials as the lake (the ``AWS_*``
variables, or ``aws_*`` keys of ``$KBFLOW_STORAGE_OPTIONS``).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import threading
import time
from datetime import UTC, datetime
from typing import Any

from kbflow._lazy import require
from kbflow.config.env import env
from kbflow.errors import LakeBusyError, LakeError

log = logging.getLogger("kbflow")

__all__ = ["LEASE_OBJECT", "LEASE_SECONDS", "ObjectLease", "describe", "is_s3"]

LEASE_OBJECT = "_kbflow.lease.json"
#: how long a holder's entry lives without renewal (``$KBFLOW_LEASE_SECONDS``)
LEASE_SECONDS = float(env("KBFLOW_LEASE_SECONDS") or 60)
_POLL = 0.5


def is_s3(uri: str) -> bool:
    """Whether the lake at ``uri`` lives on S3 (or an S3-compatible store)."""
    return uri.startswith(("s3://", "s3a://"))


def _client(options: dict[str, str]) -> Any:
    boto3 = require("boto3")
    endpoint = options.get("aws_endpoint") or options.get("endpoint") or env("AWS_ENDPOINT_URL")
    return boto3.client(
        "s3",
        endpoint_url=endpoint or None,
        region_name=options.get("aws_region") or options.get("region") or env("AWS_REGION") or None,
        aws_access_key_id=options.get("aws_access_key_id") or None,
        aws_secret_access_key=options.get("aws_secret_access_key") or None,
        aws_session_token=options.get("aws_session_token") or None,
    )


def _precondition_failed(exc: Exception) -> bool:
    code = str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))
    return code in ("PreconditionFailed", "ConditionalRequestConflict", "412", "409")


def describe(note: dict[str, Any] | None) -> str:
    """A lease holder's note as the busy message names it (command, process, host, mode, since when)."""
    if not note:
        return "another kbflow process"
    return (
        f"`{note.get('command', 'kbflow')}` (pid {note.get('pid')} on {note.get('host')}, "
        f"{'exclusive' if note.get('exclusive') else 'shared'}, since {note.get('since')})"
    )


class ObjectLease:
    """One holder's lease on an S3 lake: :meth:`acquire`, renewed from a thread, then :meth:`release`."""

    def __init__(
        self, uri: str, options: dict[str, str], command: str, exclusive: bool, name: str = LEASE_OBJECT
    ) -> None:
        """``name``: the lease object's name in the lake (the claims store keeps a lease of its own)."""
        bucket, _, prefix = uri.split("://", 1)[1].partition("/")
        self.uri, self.bucket = uri, bucket
        self.key = f"{prefix.strip('/')}/{name}" if prefix.strip("/") else name
        self.client = _client(options)
        self.token, self.exclusive = secrets.token_hex(8), exclusive
        self.note = {
            "command": command,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "exclusive": exclusive,
            "since": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        }
        self.lost = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _read(self) -> tuple[dict[str, Any], str | None]:
        """``(holders, ETag)`` of the lease object; ``({}, None)`` when there is none."""
        try:
            got = self.client.get_object(Bucket=self.bucket, Key=self.key)
        except Exception as exc:
            if getattr(exc, "response", {}).get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return {}, None
            raise LakeError(f"{self.uri}: cannot read the lake's lease object {self.key} ({exc})") from None
        try:
            holders = json.loads(got["Body"].read()).get("holders", {})
        except ValueError:
            holders = {}
        return holders, got["ETag"]

    def _swap(self, holders: dict[str, Any], etag: str | None) -> bool:
        """Write ``holders`` if the object is still the one read (``etag``); ``False`` when another won."""
        body = json.dumps({"holders": holders}).encode()
        condition = {"IfMatch": etag} if etag else {"IfNoneMatch": "*"}
        try:
            self.client.put_object(Bucket=self.bucket, Key=self.key, Body=body, **condition)
        except Exception as exc:
            if _precondition_failed(exc):
                return False
            raise LakeError(f"{self.uri}: cannot write the lake's lease object {self.key} ({exc})") from None
        return True

    def _change(self, update) -> dict[str, Any] | None:
        """Compare-and-swap ``update(live holders)`` until it lands; ``update`` returns ``None`` to give up (the
        holders it saw are returned then, else ``None``)."""
        while True:
            holders, etag = self._read()
            now = time.time()
            live = {k: v for k, v in holders.items() if v.get("expires", 0) > now}
            new = update(live)
            if new is None:
                return live
            if self._swap(new, etag):
                return None

    def _entry(self) -> dict[str, Any]:
        return {**self.note, "expires": time.time() + LEASE_SECONDS}

    def acquire(self, wait: float) -> None:
        """Take the lease, waiting up to ``wait`` seconds; :class:`LakeBusyError` naming the holder after."""
        deadline = time.monotonic() + max(0.0, wait)

        def join(live: dict[str, Any]) -> dict[str, Any] | None:
            if live and (self.exclusive or any(h.get("exclusive") for h in live.values())):
                return None
            return {**live, self.token: self._entry()}

        while True:
            busy = self._change(join)
            if busy is None:
                break
            if time.monotonic() >= deadline:
                who = describe(next(iter(busy.values())))
                hint = "wait for it to finish, or pass --wait SECONDS" if wait <= 0 else f"waited {wait:g}s"
                raise LakeBusyError(f"{self.uri}: the lake is being written by {who}; {hint}")
            time.sleep(_POLL)
        self._thread = threading.Thread(target=self._renew, name="kbflow-lease", daemon=True)
        self._thread.start()

    def _renew(self) -> None:
        while not self._stop.wait(LEASE_SECONDS / 3) and not self._renew_once():
            pass

    def _renew_once(self) -> bool:
        """Extend this holder's expiry; ``True`` when its entry was gone (the lease is lost)."""

        def extend(live: dict[str, Any]) -> dict[str, Any] | None:
            if self.token not in live:
                self.lost = True
                return None
            return {**live, self.token: self._entry()}

        try:
            self._change(extend)
        except LakeError as exc:  # the store did not answer: try again at the next turn
            log.warning("%s", exc)
        if self.lost:
            log.error("%s: this writer's lease expired and may have been taken over", self.uri)
        return self.lost

    def release(self) -> None:
        """Give the lease back; :class:`LakeBusyError` when it was lost while held."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._change(lambda live: {k: v for k, v in live.items() if k != self.token} if self.token in live else None)
        if self.lost:
            raise LakeBusyError(
                f"{self.uri}: this writer's lease expired while it wrote (stalled past {LEASE_SECONDS:g} s) and "
                "another writer may have written too; run `kbflow ingest` again (it repairs duplicate rows first)"
            )
