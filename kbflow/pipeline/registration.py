"""The source registry's rules: registering and removing a source (its id, path, scope, options and refresh
schedule checked), and finding the sources whose bytes changed since they were indexed.

:func:`register_source` is the one way a source enters the registry: the CLI
(``kbflow add``), the REST API, the web page and Python all call it, so each
checks the same options, applies the same path rules and stores the same
options.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kbflow import schema as S
from kbflow.errors import AccessDeniedError, ConfigError, KbflowError, SourceConflictError, SourceError
from kbflow.lake.lake import Lake
from kbflow.lake.lease import lease
from kbflow.pipeline.common import source_filter
from kbflow.pipeline.results import RemoveResult, StaleSource
from kbflow.records import Source, scopes
from kbflow.records.paths import inside
from kbflow.records.source_ids import MAX_SOURCE_ID, check_source_id
from kbflow.sources.base import get_loader

__all__ = [
    "ALLOW_PRIVATE_OPTION",
    "REFRESH_OPTION",
    "Editor",
    "Registration",
    "check_cron",
    "register_source",
    "remove_source",
    "rename_source",
    "slugify",
    "source_fingerprint",
    "stale_sources",
    "uri_scheme",
]

#: a source's refresh schedule, a cron expression (``kbflow add --refresh``; a Dagster schedule per source)
REFRESH_OPTION = "refresh"
_CRON_FIELD = re.compile(r"^(\*|\d+(-\d+)?)(/\d+)?(,(\*|\d+(-\d+)?)(/\d+)?)*$|^[A-Za-z]{3}(-[A-Za-z]{3})?$")


def check_cron(expr: str) -> str:
    """``expr`` if it is a 5-field cron expression, else a :class:`SourceError` showing a valid one."""
    fields = expr.split() if isinstance(expr, str) else []
    if len(fields) != 5 or not all(_CRON_FIELD.match(f) for f in fields):
        raise SourceError(
            f"refresh schedule {expr!r} is not a cron expression of 5 fields (minute hour day month weekday), "
            "e.g. '0 */6 * * *' (every 6 hours) or '30 2 * * mon-fri'"
        )
    return " ".join(fields)


_SLUG = re.compile(r"[^a-z0-9._-]+")


def slugify(uri: str) -> str:
    """A readable default source id from a path or URL: ``/x/My Docs/`` -> ``my-docs``,
    ``https://example.com/a/Page.html`` -> ``example.com-page``; always a valid source id
    (:data:`~kbflow.records.source_ids.SOURCE_ID_PATTERN`: at most 64 characters, starting with a letter or digit)."""
    if uri.lower().startswith(("http://", "https://")):
        from urllib.parse import urlsplit

        parts = urlsplit(uri)
        last = os.path.splitext(parts.path.rstrip("/").rsplit("/", 1)[-1])[0]
        text, fallback = f"{parts.hostname or 'web'}-{last}", "web"
    else:
        base = os.path.basename(os.path.normpath(uri)) or "source"
        text, fallback = (os.path.splitext(base)[0] if os.path.isfile(uri) else base), "source"
    slug = _SLUG.sub("-", text.lower()).strip("-._")[:MAX_SOURCE_ID].rstrip("-._")
    return slug or fallback


#: how many of the files a loader will leave out a registration lists
MAX_LEFT_OUT = 100
#: a uri's scheme (two characters at least, so a Windows drive letter is a path)
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):")
#: the options :func:`register_source` takes (``options=``): what a source keeps between ingests
OPTION_NAMES = ("max_file_mb", "refresh", "all_pages", "crawl", "crawl_limits", "fields", "allow_private")
#: a web source's private hosts and networks (:class:`kbflow.sources.web.fetch.PrivateHosts`)
ALLOW_PRIVATE_OPTION = "allow_private"


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


class Editor(Protocol):
    """Who registers a source over the network: what their key may see and edit
    (an :class:`~kbflow.usage.keys.ApiKey`)."""

    def can_see(self, scope: str) -> bool: ...

    def can_edit(self, scope: str) -> bool: ...


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
    editor: Editor | None = None,
    default_scope: str = S.GLOBAL_SCOPE,
) -> Registration:
    """Register ``uri`` as a source of ``source_type`` (nothing is loaded until an ingest).

    ``uri`` is an http(s) URL (for the loaders that fetch, ``web``) or a local
    path (stored as its real absolute path: ``~`` expanded, symbolic links
    resolved); a local source type refuses a uri with any other scheme. With
    ``roots`` (the server's ``--source-root`` folders) a local path must lie
    under one of them. ``source_id`` defaults to a slug of the uri; a new id
    follows :data:`~kbflow.records.source_ids.SOURCE_ID_PATTERN`. ``scope``
    defaults to the source's own where it is registered already, else to
    ``default_scope``.

    ``editor`` is the key of a caller over the network (``None``: the command
    line or Python, which may do anything). It must be able to edit the
    source's scope, and, where the source exists, its current scope too (so
    moving a source between scopes needs both); an id or path held by a source
    it cannot see is refused without naming that source.

    ``options`` sets what the source keeps between ingests (a re-registered
    source keeps every option not named, or named with ``None``):
    ``max_file_mb`` (a positive number), ``refresh`` (a 5-field cron
    expression; ``"none"`` removes it), and for web sources ``all_pages``
    (bool), ``crawl`` (bool: the site under the URL's folder) and
    ``crawl_limits`` (``depth``, ``max_pages``, ``delay``; they go with a crawl
    turned on now or before), and for jsonl sources ``fields`` (the keys of a
    record's ``id``, ``title`` and ``text``, a mapping or ``"id=K,text=K"``;
    see :class:`kbflow.sources.jsonl.RecordFields`), and for web sources
    ``allow_private`` (private hosts, ``host:port`` pairs or networks its
    fetches may reach past the guard; :class:`kbflow.sources.web.fetch.PrivateHosts`;
    over the network, a global editor's only).

    Raises
    ------
    ConfigError
        An option that is unknown, of the wrong type, or for another source type.
    AccessDeniedError
        A local path outside ``roots``, or a scope ``editor`` may not edit.
    SourceConflictError
        An id or uri registered to another source.
    SourceError
        A path the loader cannot read, or an id that does not follow the pattern.
    """
    loader = get_loader(source_type)
    if not isinstance(uri, str) or not uri.strip():
        raise ConfigError("a source needs a uri: a path or an http(s) URL")
    named = uri
    scheme = uri_scheme(uri)
    if scheme is not None and scheme not in loader.schemes:
        takes = f"{', '.join(loader.schemes)} URLs or a local path" if loader.schemes else "a local path"
        raise ConfigError(f"{named}: a {source_type} source takes {takes}, not a {scheme}: URI")
    if scheme is None:
        uri = os.path.realpath(os.path.expanduser(uri))
        if roots is not None and not any(inside(uri, r) for r in roots):
            raise AccessDeniedError(
                f"{named}: a local path added over the network must lie under a --source-root folder "
                f"({', '.join(roots) or 'none configured'}); start kbflow serve with --source-root DIR, "
                "or add it on the command line with `kbflow add`"
            )
    sid = source_id or slugify(uri)
    known = {s.source_id: s for s in lake.sources()} if lake.has_table(S.SOURCES) else {}
    if sid not in known:
        check_source_id(sid)  # before anything is looked up under it
    scope = scopes.normalize(scope if scope is not None else (known[sid].scope if sid in known else default_scope))
    if editor is not None:
        _check_ownership(editor, known, sid, uri, source_type, scope)
        if (options or {}).get(ALLOW_PRIVATE_OPTION) and not editor.can_edit(S.GLOBAL_SCOPE):
            raise AccessDeniedError("allow_private opens the guard to private hosts: only a global editor may set it")
    stored = dict(known[sid].options or {}) if sid in known else {}  # re-adding keeps what it does not change
    merged = source_options(stored, dict(options or {}), source_type, uri)
    loader.check(uri, merged)
    source = lake.register(Source(sid, source_type, uri, scope=scope, title=title, options=merged))
    issues = [str(i) for i in loader.issues]
    return Registration(source, tuple(issues[:MAX_LEFT_OUT]), len(issues))


def uri_scheme(uri: str) -> str | None:
    """The scheme a uri names (``http``, ``file``, ``s3``), lower case; ``None`` for a path."""
    found = _SCHEME.match(uri.strip())
    return found.group(1).lower() if found else None


def _check_ownership(
    editor: Editor, known: Mapping[str, Source], sid: str, uri: str, source_type: str, scope: str
) -> None:
    """Refuse what ``editor`` may not do: register in a scope it cannot edit, take over or move a source of a scope
    it cannot edit, or re-use another source's path; nothing it cannot see is named."""
    if not editor.can_edit(scope):
        raise AccessDeniedError(f"your key cannot reach scope {scope!r} to edit it")
    old = known.get(sid)
    if old is not None and not editor.can_edit(old.scope):
        if editor.can_see(old.scope):
            raise AccessDeniedError(f"source {sid!r} is in scope {old.scope!r}, which your key cannot edit")
        raise SourceConflictError(f"source id {sid!r} is taken; choose another id")
    for other in known.values():
        if other.source_id != sid and other.uri == uri and other.source_type == source_type:
            if editor.can_see(other.scope):
                raise SourceConflictError(f"{uri} is already registered as source {other.source_id!r}")
            raise SourceConflictError(f"{uri} is already registered as another source, outside your key's reach")


def source_options(stored: dict[str, Any], changes: dict[str, Any], source_type: str, uri: str) -> dict[str, Any]:
    """``stored`` with ``changes`` applied, each checked (see :func:`register_source`); ``None`` leaves one as is."""
    from kbflow.sources.base import MAX_FILE_MB_OPTION

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
        elif name == ALLOW_PRIVATE_OPTION:
            _set_private(out, value, source_type)
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


def _set_private(options: dict[str, Any], value: Any, source_type: str) -> None:
    """Store a web source's private hosts and networks (checked now; an empty list removes them)."""
    from kbflow.sources.web.fetch import PrivateHosts

    if source_type != "web":
        raise ConfigError("allow_private (the private hosts a fetch may reach) is for web sources")
    entries = [value] if isinstance(value, str) else value
    if not isinstance(entries, list | tuple) or not all(isinstance(e, str) for e in entries):
        raise ConfigError(f"allow_private must be a list of hosts, host:port pairs or networks, got {value!r}")
    PrivateHosts.of(entries)
    if entries:
        options[ALLOW_PRIVATE_OPTION] = list(entries)
    else:
        options.pop(ALLOW_PRIVATE_OPTION, None)


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
        for name in (S.DOCUMENTS, S.CHUNKS, S.SEARCH, S.SOURCES):  # in this order: the registry row goes last
            removed = lake.delete_where([name], where)
            if removed.get(name):
                result.versions[name] = lake.table(name).version
            result.rows_removed.update(removed)
    return result


def rename_source(lake: Lake, old_id: str, new_id: str, *, wait: float = 0.0) -> Source:
    """Give the source ``old_id`` the id ``new_id`` (say, one registered under an older, looser id rule).

    The source keeps its path, type, scope, title and options. Its rows are
    deleted under the old id and it is registered under the new one, pending:
    the next ingest of ``new_id`` loads it again, re-using its vectors (they
    are keyed by text). Chunk ids derive from the source id, so citations and
    claims' evidence of the old chunks then read as stale.

    Raises
    ------
    SourceNotFoundError
        No source ``old_id``.
    SourceError
        ``new_id`` does not follow :data:`~kbflow.records.source_ids.SOURCE_ID_PATTERN`.
    SourceConflictError
        A source ``new_id`` exists already.
    """
    check_source_id(new_id)
    source = lake.get_source(old_id)
    if new_id != old_id and lake.sources([new_id]):
        raise SourceConflictError(f"source id {new_id!r} is taken; choose another id")
    remove_source(lake, old_id, wait=wait)
    renamed = Source(
        new_id,
        source.source_type,
        source.uri,
        scope=source.scope,
        title=source.title,
        options=dict(source.options or {}),
    )
    return lake.register(renamed)


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
