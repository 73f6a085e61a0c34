"""The lake's raw area: bytes kbflow fetched for a source (web pages by URL), kept by content hash.

A page fetched by URL is stored exactly as it arrived, under
``<lake>/raw/<source id>/<hash>.html`` with a small JSON note (its URL and
charset), so ingest, ``kbflow resolve`` and freshness checks work on exactly
what was fetched, not on what the server says today. ``fetch.json`` beside
them keeps the source's last fetch (validators for conditional requests).
Copies are never rewritten (the name is the hash) and stay for older
versions and tags to resolve.

Any lake URI works (a local folder or object storage, through pyarrow's
file systems).
"""

from __future__ import annotations

import json
import re
from typing import Any

from kbflow._lazy import require
from kbflow.errors import LakeError
from kbflow.records import ids

__all__ = ["RawStore"]

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


class RawStore:
    """One source's raw area in the lake at ``lake_uri``."""

    def __init__(self, lake_uri: str, source_id: str) -> None:
        fs = require("pyarrow.fs")
        if "://" in lake_uri and not lake_uri.startswith("file://"):
            self.fs, root = fs.FileSystem.from_uri(lake_uri)
        else:
            self.fs, root = fs.LocalFileSystem(), lake_uri.removeprefix("file://")
        self.dir = f"{root.rstrip('/')}/raw/{_SAFE.sub('_', source_id)}"

    def _write(self, name: str, data: bytes) -> None:
        self.fs.create_dir(self.dir, recursive=True)
        tmp = f"{self.dir}/.{name}.tmp"
        with self.fs.open_output_stream(tmp) as out:
            out.write(data)
        self.fs.move(tmp, f"{self.dir}/{name}")

    def _read(self, name: str) -> bytes | None:
        try:
            with self.fs.open_input_stream(f"{self.dir}/{name}") as src:
                return src.read()
        except (FileNotFoundError, OSError):
            return None

    def put(self, data: bytes, note: dict[str, Any]) -> str:
        """Keep ``data`` (and its note); returns its hash (:func:`kbflow.records.ids.bytes_hash`)."""
        digest = ids.bytes_hash(data)
        if self._read(f"{digest}.json") is None:
            self._write(f"{digest}.html", data)
            self._write(f"{digest}.json", json.dumps(note).encode())
        return digest

    def get(self, digest: str) -> tuple[bytes, dict[str, Any]]:
        """The bytes kept under ``digest`` and their note; :class:`LakeError` when they are not there."""
        data, note = self._read(f"{digest}.html"), self._read(f"{digest}.json")
        if data is None:
            raise LakeError(f"{self.dir}/{digest}.html: the fetched copy is not in the lake's raw area")
        return data, json.loads(note or b"{}")

    def state(self) -> dict[str, Any]:
        """The source's last fetch: ``{"url", "hash", "etag", "last_modified", "fetched_at"}`` ({} if none)."""
        raw = self._read("fetch.json")
        return json.loads(raw) if raw else {}

    def set_state(self, state: dict[str, Any]) -> None:
        self._write("fetch.json", json.dumps(state).encode())
