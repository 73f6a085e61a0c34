"""JSONL record sets, BEIR style: one ``{"_id", "title", "text"}`` object per line."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from typing import Any

from kbflow.errors import SourceError
from kbflow.records import Locator, RawUnit, Source
from kbflow.sources.base import Loader, file_hash, read_bytes, register_loader


def record_text(obj: Mapping[str, Any]) -> tuple[str, str]:
    """The unit text of a record and the field name its locator carries.

    ``title`` and ``text`` joined by a blank line when there is a title; the
    resolver rebuilds the text the same way.
    """
    title = str(obj.get("title") or "").strip()
    text = str(obj.get("text") or "")
    if title:
        return f"{title}\n\n{text}", "title+text"
    return text, "text"


def iter_records(path: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, record)``, reading the file a line at a time; raise
    :class:`SourceError` naming ``path:line`` on bad lines."""
    try:
        fh = open(path, "rb")
    except OSError:
        read_bytes(path)  # raises the SourceError naming the reason
        raise
    with fh:
        offset = 0
        for lineno, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise SourceError(
                    f"{path}:{lineno}: not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {offset + exc.start}); "
                    "convert the file to UTF-8"
                ) from None
            offset += len(raw)
            if lineno == 1:
                line = line.removeprefix("\ufeff")
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SourceError(
                    f"{path}:{lineno}: invalid JSON ({exc.msg}); each line must be one JSON object"
                ) from None
            if not isinstance(obj, dict):
                raise SourceError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
            if "_id" not in obj or obj["_id"] in (None, ""):
                raise SourceError(f'{path}:{lineno}: record has no "_id"; BEIR records are {{"_id", "title", "text"}}')
            if not isinstance(obj.get("text", ""), str) or not isinstance(obj.get("title", ""), (str, type(None))):
                raise SourceError(f'{path}:{lineno}: "text" and "title" must be strings')
            yield lineno, obj


@register_loader
class JsonlLoader(Loader):
    name = "jsonl"
    description = 'a JSONL record set, one {"_id", "title", "text"} object per line (BEIR corpus.jsonl)'

    def check(self, uri: str) -> None:
        if not os.path.isfile(uri):
            raise SourceError(f"{uri}: a jsonl source must be a file")

    def fingerprint(self, source: Source) -> str:
        self.check(source.uri)
        return file_hash(source.uri)

    def load(self, source: Source) -> Iterator[RawUnit]:
        """Stream the records: the file is read a line at a time, never whole.

        Nothing per record is kept: a duplicate ``_id`` is found after loading
        (:meth:`duplicate_key_error` then names its lines).
        """
        self.check(source.uri)
        digest = file_hash(source.uri)
        records = 0
        for _, obj in iter_records(source.uri):
            records += 1
            rid = str(obj["_id"])
            text, field = record_text(obj)
            if not text.strip():
                continue
            yield RawUnit(
                source_id=source.source_id,
                unit_key=f"record:{rid}",
                text=text,
                content_kind="record",
                locator=Locator(kind="record", record_id=rid, field=field, char_start=0, char_end=len(text)),
                title=str(obj.get("title") or "") or None,
                file_hash=digest,
            )
        if not records:
            raise SourceError(f"{source.uri}: no records (the file is empty)")

    def duplicate_key_error(self, source: Source, unit_key: str) -> str:
        rid = unit_key.removeprefix("record:")
        lines = [lineno for lineno, obj in iter_records(source.uri) if str(obj["_id"]) == rid][:2]
        if len(lines) < 2:  # the file changed since it was loaded
            return super().duplicate_key_error(source, unit_key)
        return f"{source.uri}:{lines[1]}: duplicate _id {rid!r} (first on line {lines[0]})"
