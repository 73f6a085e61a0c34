"""Registering and removing a source, and finding the sources whose bytes changed since they were indexed.

:func:`register_source` is the one way a source enters the registry: the CLI
(``kbflow add``), the REST API, the web page and Python all call it, so each
checks the same options, applies the same path rules and stores the same
options.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kbflow import schema as S
from kbflow.errors import AccessDeniedError, ConfigError, KbflowError
from kbflow.lake.lake import Lake
from kbflow.lake.lease import lease
from kbflow.pipeline.common import source_filter
from kbflow.pipeline.results import RemoveResult, StaleSource
from kbflow.records import Source
from kbflow.sources.base import get_loader

__all__ = ["Registration", "register_source", "remove_source", "source_fingerprint", "stale_sources"]

#: how many of the files a loader will leave out a registration lists
MAX_LEFT_OUT = 100
#: the options :func:`register_source` takes (``options=``): what a source keeps between ingests
OPTION_NAMES = ("max_file_mb", "refresh", "all_pages", "crawl", "crawl_limits", "fields")


@dataclass(frozen=True)
class Registration:
    """A source as :func:`register_source` stored it, and what its loader will leave out (``"path: reason"``)."""

    source: Source
    left_out: tuple[str, ...] = ()
    #: how many files the loader will leave out in all (``left_out`` lists the first :data:`MAX_LEFT_OUT`)
    left_out_total: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The source's :meth:`~kbflow.records.Source.to_dict` plus ``will_be_left_out``."""
        return {**self.source.to_dict(), "will_be_left_out": list(self.left_out)}


def register_source(
    lake: Lake,
    uri: str,
    source_type: str,
    *,
    source_id: str | None = None,
    scope: str | None = None,
    title: str | None = None,
    options: Mapping[str, Any] | None = None,
    roots: Sequence[str] | None = None,
) -> Registration:
    """Register ``uri`` as a source of ``source_type`` (nothing is loaded until an ingest).

    ``uri`` is an http(s) URL or a local path (stored as its real absolute
    path: ``~`` expanded, symbolic links resolved). With ``roots`` (the server's
    ``--source-root`` folders) a local path must lie under one of them.
    ``source_id`` defaults to a slug of the uri, ``scope`` to ``"global"``.

    ``options`` sets what the source keeps between ingests (a re-registered
    source keeps every option not named, or named with ``None``):
    ``max_file_mb`` (a positive number), ``refresh`` (a 5-field cron
    expression; ``"none"`` removes it), and for web sources ``all_pages``
    (bool), ``crawl`` (bool: the site under the URL's folder) and
    ``crawl_limits`` (``depth``, ``max_pages``, ``delay``; they go with a crawl
    turned on now or before), and for jsonl sources ``fields`` (the keys of a
    record's ``id``, ``title`` and ``text``, a mapping or ``"id=K,text=K"``;
    see :class:`kbflow.sources.jsonl.RecordFields`).

    Raises
    ------
    ConfigError
        An option that is unknown, of the wrong type, or for another source type.
    AccessDeniedError
        A local path outside ``roots``.
    SourceError
        A path the loader cannot read, or an id or uri registered to another source.
    """
    from kbflow.sources.base import slugify
    from kbflow.sources.web import is_url

    loader = get_loader(source_type)
    if not isinstance(uri, str) or not uri.strip():
        raise ConfigError("a source needs a uri: a path or an http(s) URL")
    named = uri
    if not is_url(uri):
        uri = os.path.realpath(os.path.expanduser(uri))
        if roots is not None and not any(uri == r or uri.startswith(r.rstrip(os.sep) + os.sep) for r in roots):
            raise AccessDeniedError(
                f"{named}: a local path added over the network must lie under a --source-root folder "
                f"({', '.join(roots) or 'none configured'}); start kbflow serve with --source-root DIR, "
                "or add it on the command line with `kbflow add`"
            )
    sid = source_id or slugify(uri)
    known = {s.source_id: s for s in lake.sources()} if lake.has_table(S.SOURCES) else {}
    stored = dict(known[sid].options or {}) if sid in known else {}  # re-adding keeps what it does not change
    merged = source_options(stored, dict(options or {}), source_type, uri)
    loader.check(uri, merged)
    source = lake.register(Source(sid, source_type, uri, scope=scope or "global", title=title, options=merged))
    issues = [str(i) for i in loader.issues]
    return Registration(source, tuple(issues[:MAX_LEFT_OUT]), len(issues))


def source_options(stored: dict[str, Any], changes: dict[str, Any], source_type: str, uri: str) -> dict[str, Any]:
    """``stored`` with ``changes`` applied, each checked (see :func:`register_source`); ``None`` leaves one as is."""
    from kbflow.sources.base import MAX_FILE_MB_OPTION, REFRESH_OPTION, check_cron

    unknown = sorted(set(changes) - set(OPTION_NAMES))
    if unknown:
        raise ConfigError(f"unknown source option(s) {', '.join(unknown)}; use {', '.join(OPTION_NAMES)}")
    out = dict(stored)
    for name, value in changes.items():
        if value is None or name in ("crawl", "crawl_limits"):
            continue
        if name == MAX_FILE_MB_OPTION:
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ConfigError(f"max_file_mb must be a positive number, got {value!r}")
            out[name] = float(value)
        elif name == "fields":
            _set_fields(out, value, source_type)
        elif name == REFRESH_OPTION:
            if not isinstance(value, str):
                raise ConfigError(f"refresh must be a cron expression or 'none', got {value!r}")
            if value.strip().lower() == "none":
                out.pop(name, None)
            else:
                out[name] = check_cron(value)
        else:  # all_pages
            if source_type != "web" or not isinstance(value, bool):
                raise ConfigError("all_pages (true or false) is for web sources")
            out[name] = value
    _set_crawl(out, changes.get("crawl"), changes.get("crawl_limits"), source_type, uri)
    return out


def _set_fields(options: dict[str, Any], value: Any, source_type: str) -> None:
    """Store a jsonl source's record keys (only those that differ from BEIR's)."""
    from kbflow.sources.jsonl import FIELDS_OPTION, RecordFields

    if source_type != "jsonl":
        raise ConfigError("fields (the keys of a record's id, title and text) is for jsonl sources")
    keys = RecordFields.of(value).to_option()
    if keys:
        options[FIELDS_OPTION] = keys
    else:
        options.pop(FIELDS_OPTION, None)


def _set_crawl(
    options: dict[str, Any], crawl: bool | None, limits: Mapping[str, Any] | None, kind: str, uri: str
) -> None:
    """Turn the crawl option on (``True``) or off (``False``), and merge ``limits`` into it (they go with a crawl
    turned on now or before)."""
    from kbflow.sources.web import is_url
    from kbflow.sources.web.crawl import CRAWL_OPTION, CrawlSettings

    if crawl is not None and not isinstance(crawl, bool):
        raise ConfigError(f"crawl must be true or false, got {crawl!r}")
    if limits is not None and not isinstance(limits, Mapping):
        raise ConfigError(f"crawl_limits must be a mapping of depth, max_pages, delay; got {limits!r}")
    limits = {k: v for k, v in (limits or {}).items() if v is not None}
    if crawl is False:
        options.pop(CRAWL_OPTION, None)
    if not (crawl or (crawl is None and options.get(CRAWL_OPTION))):
        if limits:
            raise ConfigError(f"the crawl limits ({', '.join(limits)}) go with crawl on")
        return
    if kind != "web" or not is_url(uri):
        raise ConfigError("crawl is for web sources given as an http(s):// URL")
    current = options.get(CRAWL_OPTION)
    merged = {**(current if isinstance(current, dict) else {}), **limits}
    CrawlSettings.of(merged or True)  # checked now, not at ingest
    options[CRAWL_OPTION] = merged or True


def remove_source(lake: Lake, source_id: str, *, wait: float = 0.0) -> RemoveResult:
    """Delete a source's rows from ``documents``, ``chunks`` and the search table, then unregister it.

    Idempotent: removing a source that is already gone (or half gone, after a
    crash) finishes the job. Data goes first and the registry row last, so no
    crash leaves rows the registry does not know about. Vectors stay in
    ``embeddings`` (keyed by text hash, they may serve other sources, and a
    re-added source re-uses them). Holds the lake's exclusive write lease
    (waiting up to ``wait`` seconds for another writer).
    """
    where = source_filter(source_id)
    with lease(lake.uri, f"kbflow remove {source_id}", wait=wait):
        registered = bool(lake.sources([source_id]))
        result = RemoveResult(source_id, registered)
        for name in (S.DOCUMENTS, S.CHUNKS, S.SEARCH, S.SOURCES):
            if not lake.has_table(name):
                continue
            table = lake.table(name)
            n = table.count_rows(where)
            if n:
                table.delete(where)
                result.versions[name] = lake.table(name).version
            result.rows_removed[name] = n
    return result


def source_fingerprint(lake: Lake, source: Source) -> str:
    """The fingerprint of everything ``source``'s loader would read now (nothing is parsed or kept);
    raises the loader's :class:`~kbflow.errors.KbflowError` when the source cannot be read."""
    loader = get_loader(source.source_type)
    loader.lake_uri, loader.keep_fetched = lake.uri, False
    return loader.fingerprint(source)


def stale_sources(lake: Lake, source_ids: Iterable[str] | None = None) -> list[StaleSource]:
    """Sources whose bytes no longer match what was indexed.

    Found by fingerprinting only: nothing is parsed or written.
    """
    out = []
    for source in lake.sources(source_ids):
        if source.content_hash is None:
            out.append(StaleSource(source.source_id, "never indexed"))
            continue
        try:
            fingerprint = source_fingerprint(lake, source)
        except KbflowError as exc:
            out.append(StaleSource(source.source_id, "unreadable", str(exc)))
            continue
        if fingerprint != source.content_hash:
            out.append(StaleSource(source.source_id, "changed", fingerprint=fingerprint))
        elif source.status == S.FAILED:
            out.append(StaleSource(source.source_id, "failed", source.last_error, fingerprint))
        elif source.status == S.PENDING:
            detail = "indexed but not yet in the search table"
            out.append(StaleSource(source.source_id, "not published", detail, fingerprint))
    return out
