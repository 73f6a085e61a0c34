"""The source registry over HTTP (``/v1/sources``, the page's sources): list and read what a key may see;
register, remove and refresh as its editor, through the one :func:`kbflow.pipeline.register_source` every surface
calls."""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from kbflow import schema as S
from kbflow.errors import AccessDeniedError, ConfigError, QueryError, SourceNotFoundError
from kbflow.records import Source, scopes
from kbflow.usage.keys import ApiKey

if TYPE_CHECKING:
    from kbflow.config import Settings
    from kbflow.lake.lake import Lake

__all__ = ["SourceService", "source_dict"]


def source_dict(source: Source) -> dict[str, Any]:
    """A registered source as the REST API and MCP show it: :meth:`Source.to_dict`, the one JSON shape."""
    return source.to_dict()


class _Core(Protocol):
    """What the sources part reads of its :class:`~kbflow.service.core.Service`."""

    lake: Lake
    settings: Settings
    source_roots: builtins.list[str]


class SourceService:
    """The sources part of a :class:`~kbflow.service.core.Service` (``service.sources``)."""

    def __init__(self, service: _Core) -> None:
        self.service = service

    def __call__(self, key: ApiKey | None) -> builtins.list[dict[str, Any]]:
        """``service.sources(key)``, as before the service had parts: :meth:`list`."""
        return self.list(key)

    def list(self, key: ApiKey | None) -> builtins.list[dict[str, Any]]:
        """The sources the key may see, as ``source_dict`` shows them."""
        registered = self.service.lake.sources() if self.service.lake.has_table(S.SOURCES) else []
        return [source_dict(s) for s in registered if key is None or key.can_see(s.scope)]

    def get(self, key: ApiKey | None, source_id: str) -> dict[str, Any]:
        """One source the key may see (:class:`~kbflow.errors.SourceNotFoundError` otherwise, the same answer)."""
        found = [s for s in self.list(key) if s["source_id"] == source_id]
        if not found:
            raise SourceNotFoundError(f"no source {source_id!r} in this lake")
        return found[0]

    def _editable(self, key: ApiKey | None, source_id: str) -> Source:
        try:
            source = self.service.lake.get_source(source_id)
        except SourceNotFoundError:
            raise SourceNotFoundError(f"no source {source_id!r} in this lake") from None
        if key is not None:
            if not key.can_see(source.scope):
                raise SourceNotFoundError(f"no source {source_id!r} in this lake")
            key.require(source.scope, write=True)
        return source

    def add(self, key: ApiKey | None, body: Mapping[str, Any]) -> dict[str, Any]:
        """Register a source (``{"uri", "type", "id"?, "scope"?, "title"?}`` plus the options of
        :func:`kbflow.pipeline.register_source`: ``max_file_mb``, ``refresh``, ``all_pages``, ``crawl``,
        ``crawl_limits``, ``fields``), as ``kbflow add`` does. An editor's key must reach the source's scope, and its
        current scope where it is registered already (moving a source needs both); a local path must lie under a
        ``source_roots`` folder (with keys or without). Without ``scope`` a new source takes the key's, a registered
        one keeps its own. Returns the source and the files its loader will leave out."""
        from kbflow.pipeline import register_source
        from kbflow.pipeline.registration import OPTION_NAMES

        uri, source_type = body.get("uri"), body.get("type")
        if not isinstance(uri, str) or not uri or not isinstance(source_type, str):
            raise QueryError("a source needs 'uri' (a path on the server or an http(s) URL) and 'type'")
        if key is not None and key.role != "editor":
            raise AccessDeniedError(f"key {key.key_id} is a reader; adding, removing or refreshing needs an editor")
        options = {name: body.get(name) for name in OPTION_NAMES}
        try:
            added = register_source(
                self.service.lake,
                uri,
                source_type,
                source_id=body.get("id"),
                scope=body.get("scope") or None,
                title=body.get("title"),
                options=options,
                roots=list(self.service.source_roots),
                editor=key,
                default_scope=key.scope if key is not None else scopes.GLOBAL,
            )
        except ConfigError as exc:
            raise QueryError(str(exc)) from None
        return added.to_dict()

    def remove(self, key: ApiKey | None, source_id: str) -> dict[str, Any]:
        """Remove a source and its rows (an editor of its scope)."""
        from kbflow.pipeline import remove_source

        self._editable(key, source_id)
        return remove_source(self.service.lake, source_id).to_dict()

    def refresh(self, key: ApiKey | None, source_id: str) -> dict[str, Any]:
        """Run the ingest (Dagster assets where installed) for one source; returns its summary."""
        from kbflow.pipeline import run_ingest

        self._editable(key, source_id)
        summary = run_ingest(self.service.settings, [source_id], runner="auto")
        return summary.to_dict()
