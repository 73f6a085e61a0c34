"""JSONL record sets, BEIR style: one ``{"_id", "title", "text"}`` object per line.

A record set written with other keys (``{"id", "contents"}``, ``{"doc_id",
"headline", "abstract"}``) names them in the source's ``fields`` option
(``kbflow add FILE --type jsonl --fields id=doc_id,title=headline,text=abstract``):
:class:`RecordFields`. A record's locator carries the keys its text was read
from (``field``: ``title+text``, or ``doc_id:headline+abstract`` where the id
is not ``_id``), so a citation resolves without the source's options.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kbflow.errors import ConfigError, SourceError
from kbflow.records import Locator, RawUnit, Source, ids
from kbflow.sources import jsontext
from kbflow.sources.base import FileIssue, IssueTally, Loader, listed_with_rest, register_loader
from kbflow.sources.files import file_hash, read_bytes

#: the source option naming a record set's keys (``{"id": ..., "title": ..., "text": ...}``)
FIELDS_OPTION = "fields"
_ROLES = ("id", "title", "text")


@dataclass(frozen=True)
class RecordFields:
    """The keys of a record's id, title and text (BEIR's by default)."""

    id: str = "_id"
    title: str = "title"
    text: str = "text"

    @classmethod
    def of(cls, spec: Mapping[str, Any] | str | None) -> RecordFields:
        """From the ``fields`` option: a mapping of ``id``/``title``/``text`` to keys, or ``"id=K,text=K"``;
        a :class:`~kbflow.errors.ConfigError` saying what is wrong with it."""
        if spec is None:
            return cls()
        if isinstance(spec, str):
            pairs = [part.split("=", 1) for part in spec.split(",") if part.strip()]
            if any(len(pair) != 2 for pair in pairs):
                raise ConfigError(f"fields {spec!r}: write them as id=KEY,title=KEY,text=KEY (any of the three)")
            spec = {role.strip(): key.strip() for role, key in pairs}
        if not isinstance(spec, Mapping) or set(spec) - set(_ROLES):
            raise ConfigError(f"fields {spec!r}: name only {', '.join(_ROLES)} (e.g. id=doc_id,text=abstract)")
        for role, key in spec.items():
            if not isinstance(key, str) or not key or ":" in key or "+" in key:
                raise ConfigError(f"fields: {role}={key!r} is not a record key (one without ':' or '+')")
        return cls(**dict(spec))

    @classmethod
    def of_locator(cls, field: str | None) -> RecordFields:
        """The keys a record locator's ``field`` names (``title+text``, ``doc_id:headline+abstract``)."""
        id_key, _, keys = (field or "text").rpartition(":")
        *title, text = keys.split("+")
        return cls(id=id_key or "_id", title=title[0] if title else "title", text=text)

    def to_option(self) -> dict[str, str]:
        """The keys that differ from BEIR's (``{}``: BEIR's own)."""
        return {role: getattr(self, role) for role in _ROLES if getattr(self, role) != getattr(RecordFields, role)}

    def locator_field(self, titled: bool) -> str:
        keys = f"{self.title}+{self.text}" if titled else self.text
        return keys if self.id == "_id" else f"{self.id}:{keys}"


BEIR = RecordFields()


def _joined(value: Any) -> str:
    """A record's text: a string, or a list of strings (a set's sentences or paragraphs, as SciFact's original
    ``abstract`` holds them) one a line."""
    if isinstance(value, list):
        return "\n".join(value)
    return str(value or "")


def record_text(obj: Mapping[str, Any], fields: RecordFields = BEIR) -> tuple[str, str]:
    """The unit text of a record and the field its locator carries (:meth:`RecordFields.locator_field`).

    Its title and text joined by a blank line when there is a title (a text given as a list of strings is
    one string a line); the resolver rebuilds the text the same way.
    """
    title = str(obj.get(fields.title) or "").strip()
    text = _joined(obj.get(fields.text))
    if title:
        return f"{title}\n\n{text}", fields.locator_field(True)
    return text, fields.locator_field(False)


def iter_records(
    path: str, on_problem: Callable[[int, str], None] | None = None, fields: RecordFields = BEIR
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, record)``, reading the file a line at a time.

    A bad line (not UTF-8, not a JSON object, no id) raises
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
                obj = _record(raw, lineno, offset, fields)
            except ValueError as exc:
                if on_problem is None:
                    raise SourceError(f"{path}:{lineno}: {exc}") from None
                on_problem(lineno, str(exc))
                obj = None
            offset += len(raw)
            if obj is not None:
                yield lineno, obj


_FIELDS_HINT = "kbflow add FILE --type jsonl --fields id=KEY,title=KEY,text=KEY"


class _NoId(ValueError):
    """A record without the id its source's fields name."""


class _NotLines(ValueError):
    """A file that is not JSON Lines at all (a JSON array)."""


_ARRAY = "a JSON array, not JSON Lines (one object a line); convert it first: jq -c '.[]' FILE > FILE.jsonl"


def _record(raw: bytes, lineno: int, offset: int, fields: RecordFields) -> dict[str, Any] | None:
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
        if lineno == 1 and line.lstrip().startswith("["):
            raise _NotLines(_ARRAY) from None
        raise ValueError(f"invalid JSON ({exc.msg}); each line must be one JSON object") from None
    if lineno == 1 and isinstance(obj, list):
        raise _NotLines(_ARRAY)
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    if obj.get(fields.id) in (None, ""):
        keys = ", ".join(f'"{k}"' for k in list(obj)[:8]) + (", ..." if len(obj) > 8 else "")
        hint = 'BEIR records are {"_id", "title", "text"}' if fields == BEIR else "check the source's fields"
        raise _NoId(f'record has no "{fields.id}" (its keys: {keys}); {hint}, or name yours: {_FIELDS_HINT}')
    text, title = obj.get(fields.text), obj.get(fields.title)
    sentences = isinstance(text, list) and all(isinstance(t, str) for t in text)
    if not (isinstance(text, (str, type(None))) or sentences) or not isinstance(title, (str, type(None))):
        raise ValueError(f'"{fields.text}" must be a string or a list of strings, "{fields.title}" a string')
    return obj


def _check_first_record(path: str, fields: RecordFields) -> None:
    """A :class:`SourceError` where the first record of ``path`` lacks the id ``fields`` name."""
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                if _record(raw, lineno, 0, fields) is not None or lineno >= 1000:
                    return
            except (_NoId, _NotLines) as exc:
                raise SourceError(f"{path}:{lineno}: {exc}") from None
            except ValueError:
                return  # another problem of one line: reported at ingest, the others loaded


@register_loader
class JsonlLoader(Loader):
    """A BEIR-style record set, streamed a line at a time.

    A bad line is reported (``corpus.jsonl:7``, with its reason) and the other
    records are loaded. Record sets have no size limit unless the source sets
    one (``--max-file-mb``): they are read a line at a time.
    """

    name = "jsonl"
    description = 'a JSONL record set, one {"_id", "title", "text"} object per line (BEIR corpus.jsonl; --fields)'
    max_file_mb = None

    def check(self, uri: str, options: Mapping[str, Any] | None = None) -> None:
        """The file exists and is within its limit; with ``options`` (at ``kbflow add``), its first record
        also has the id the source's ``fields`` name (else every record would be left out)."""
        if not os.path.isfile(uri):
            raise SourceError(f"{uri}: a jsonl source must be a file")
        reason = self.over_limit(os.path.getsize(uri), options)
        if reason:
            raise SourceError(f"{uri}: {reason}")
        if options is not None:
            _check_first_record(uri, RecordFields.of(options.get(FIELDS_OPTION)))

    def fingerprint(self, source: Source) -> str:
        self.issues = []
        self.check(source.uri)
        fields = RecordFields.of(source.options.get(FIELDS_OPTION)).to_option()
        if not fields:
            return file_hash(source.uri)
        return ids.combine([("file", file_hash(source.uri)), ("fields", json.dumps(fields, sort_keys=True))])

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
        fields = RecordFields.of(source.options.get(FIELDS_OPTION))
        lines = iter_records(source.uri, lambda n, why: bad.add(f"{name}:{n}", why), fields)
        for lineno, obj in lines:
            records += 1
            rid = str(obj[fields.id])
            text, field = record_text(obj, fields)
            if not text.strip():
                empty.add(
                    f"{name}:{lineno}", f'record {rid!r} has no text (empty "{fields.title}" and "{fields.text}")'
                )
                continue
            yield RawUnit(
                source_id=source.source_id,
                unit_key=f"record:{rid}",
                text=text,
                content_kind="record",
                locator=Locator(kind="record", record_id=rid, field=field, char_start=0, char_end=len(text)),
                title=str(obj.get(fields.title) or "") or None,
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
        fields = RecordFields.of(source.options.get(FIELDS_OPTION))
        for lineno, obj in iter_records(source.uri, lambda *_: None, fields):
            rid = str(obj[fields.id])
            if rid in wanted:
                lines.setdefault(rid, []).append(lineno)
        name = os.path.basename(source.uri)
        repeats = sorted((n, rid, at[0]) for rid, at in lines.items() for n in at[1:])
        if not repeats:  # the file changed since it was loaded
            return super().duplicate_issues(source, keys)
        reasons = [
            (f"{name}:{n}", f"duplicate {fields.id} {rid!r} (first on line {first}, which is kept)")
            for n, rid, first in repeats
        ]
        return listed_with_rest(reasons, name, "more duplicate _ids")
