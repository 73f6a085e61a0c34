"""JSONL record sets, BEIR style: one ``{"_id", "title", "text"}`` object per line."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kbflow.errors import SourceError
from kbflow.records import Locator, RawUnit, Source
from kbflow.sources import jsontext
from kbflow.sources.base import FileIssue, IssueTally, Loader, file_hash, listed_with_rest, read_bytes, register_loader


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


def iter_records(
    path: str, on_problem: Callable[[int, str], None] | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, record)``, reading the file a line at a time.

    A bad line (not UTF-8, not a JSON object, no ``_id``) raises
    :class:`SourceError` naming ``path:line``, or, with ``on_problem``, is
    passed to ``on_problem(line number, reason)`` and left out.
    """
    try:
        fh = open(path, "rb")
    except OSError:
        read_bytes(path)  # raises the SourceError naming the reason
        raise
    with fh:
        offset = 0
        for lineno, raw in enumerate(fh, start=1):
            try:
                obj = _record(raw, lineno, offset)
            except ValueError as exc:
                if on_problem is None:
                    raise SourceError(f"{path}:{lineno}: {exc}") from None
                on_problem(lineno, str(exc))
                obj = None
            offset += len(raw)
            if obj is not None:
                yield lineno, obj


def _record(raw: bytes, lineno: int, offset: int) -> dict[str, Any] | None:
    """The record on one line (``None`` for a blank line); ``ValueError`` saying what is wrong with it."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {offset + exc.start}); convert the file to UTF-8"
        ) from None
    if lineno == 1:
        line = line.removeprefix("\ufeff")
    if not line.strip():
        return None
    try:
        obj = jsontext.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON ({exc.msg}); each line must be one JSON object") from None
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    if "_id" not in obj or obj["_id"] in (None, ""):
        raise ValueError('record has no "_id"; BEIR records are {"_id", "title", "text"}')
    text, title = obj.get("text"), obj.get("title")
    if not isinstance(text, (str, type(None))) or not isinstance(title, (str, type(None))):
        raise ValueError('"text" and "title" must be strings')
    return obj


@register_loader
class JsonlLoader(Loader):
    """A BEIR-style record set, streamed a line at a time.

    A bad line is reported (``corpus.jsonl:7``, with its reason) and the other
    records are loaded. Record sets have no size limit unless the source sets
    one (``--max-file-mb``): they are read a line at a time.
    """

    name = "jsonl"
    description = 'a JSONL record set, one {"_id", "title", "text"} object per line (BEIR corpus.jsonl)'
    max_file_mb = None

    def check(self, uri: str, options: Mapping[str, Any] | None = None) -> None:
        if not os.path.isfile(uri):
            raise SourceError(f"{uri}: a jsonl source must be a file")
        reason = self.over_limit(os.path.getsize(uri), options)
        if reason:
            raise SourceError(f"{uri}: {reason}")

    def fingerprint(self, source: Source) -> str:
        self.issues = []
        self.check(source.uri)
        return file_hash(source.uri)

    def load(self, source: Source) -> Iterator[RawUnit]:
        """Stream the records: the file is read a line at a time, never whole.

        Nothing per record is kept: a duplicate ``_id`` is found after loading
        (the first record is kept; :meth:`duplicate_issues` names the lines of the others).
        """
        self.issues = []
        self.check(source.uri)
        reason = self.over_limit(os.path.getsize(source.uri), source.options)
        name = os.path.basename(source.uri)
        if reason:
            self.issues.append(FileIssue(name, reason))
            raise self.nothing_loaded(source)
        digest = file_hash(source.uri)
        bad = IssueTally(name, "more bad lines")
        empty = IssueTally(name, "more records without text", failed=False)
        records = 0
        for lineno, obj in iter_records(source.uri, on_problem=lambda n, why: bad.add(f"{name}:{n}", why)):
            records += 1
            rid = str(obj["_id"])
            text, field = record_text(obj)
            if not text.strip():
                empty.add(f"{name}:{lineno}", f'record {rid!r} has no text (empty "title" and "text")')
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
        self.issues += bad.close() + empty.close()
        if not records:
            if self.issues:
                raise self.nothing_loaded(source)
            raise SourceError(f"{source.uri}: no records (the file is empty)")

    def duplicate_issues(self, source: Source, keys: list[str]) -> list[FileIssue]:
        """Each record left out for a repeated ``_id``, by line, with the line of the one kept (one read)."""
        wanted = {key.removeprefix("record:") for key in keys}
        lines: dict[str, list[int]] = {}
        for lineno, obj in iter_records(source.uri, lambda *_: None):
            rid = str(obj["_id"])
            if rid in wanted:
                lines.setdefault(rid, []).append(lineno)
        name = os.path.basename(source.uri)
        repeats = sorted((n, rid, at[0]) for rid, at in lines.items() for n in at[1:])
        if not repeats:  # the file changed since it was loaded
            return super().duplicate_issues(source, keys)
        reasons = [
            (f"{name}:{n}", f"duplicate _id {rid!r} (first on line {first}, which is kept)")
            for n, rid, first in repeats
        ]
        return listed_with_rest(reasons, name, "more duplicate _ids")
