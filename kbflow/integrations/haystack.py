"""kbflow as a Haystack component: ``from kbflow.integrations.haystack import KbflowRetriever``.

>>> retriever = KbflowRetriever(lake="data/lake", top_k=5)                  # doctest: +SKIP
>>> retriever.run(query="how are ranks fused")["documents"][0].meta["citation"]   # doctest: +SKIP

A ``@component`` over a lake (``lake=``) or a ``kbflow serve`` (``url=`` and
``api_key=``, a Haystack ``Secret``). ``run(query, top_k=None, filters=None)``
returns ``{"documents": [Document(id=chunk id, content=text, meta={"citation":
{...}, ...}, score=...)]}`` (:func:`kbflow.integrations.searcher.hit_metadata`
is ``meta``). ``filters`` narrows one search: kbflow's own filters
(``{"scope": "acme", "source_types": ["pdf"]}``) or Haystack's filter dicts on
``meta.scope``, ``meta.source_type``, ``meta.source_id`` and
``meta.content_kind`` with ``==`` or ``in``, joined by ``AND``. It runs in a
``Pipeline`` and serializes to YAML. Needs ``pip install 'kbflow[haystack]'``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kbflow._lazy import require
from kbflow.errors import QueryError
from kbflow.integrations.searcher import Searcher, hit_metadata
from kbflow.records import Hits

haystack = require("haystack")
_secrets = require("haystack.utils")

__all__ = ["KbflowRetriever", "documents_of", "filters_to_options"]

#: Haystack's filter fields -> kbflow's search options
_FIELDS = {
    "meta.scope": "scope",
    "meta.source_type": "source_types",
    "meta.source_id": "source_ids",
    "meta.content_kind": "kinds",
}
#: kbflow's own filter options, given directly
_OWN = ("scope", "kinds", "source_types", "source_ids")


def documents_of(hits: Hits) -> list[Any]:
    """Haystack ``Document``\\ s of ``hits``, in their order."""
    return [haystack.Document(id=h.chunk_id, content=h.text, meta=hit_metadata(h, hits), score=h.score) for h in hits]


def filters_to_options(filters: Mapping[str, Any] | None) -> dict[str, Any]:
    """kbflow's search options for Haystack ``filters`` (see the module docs); a :class:`QueryError` for a field or
    operator kbflow cannot filter on."""
    if not filters:
        return {}
    if "field" not in filters and "conditions" not in filters:
        unknown = sorted(set(filters) - set(_OWN))
        if unknown:
            raise QueryError(f"unknown filters {unknown}; use {', '.join(_OWN)} or Haystack's filter dicts")
        return dict(filters)
    conditions = filters.get("conditions") if "conditions" in filters else [filters]
    if "conditions" in filters and filters.get("operator", "AND") != "AND":
        raise QueryError(f"only AND joins kbflow's filters, not {filters.get('operator')!r}")
    out: dict[str, Any] = {}
    for condition in conditions or ():
        field, operator, value = condition.get("field"), condition.get("operator"), condition.get("value")
        if field not in _FIELDS or operator not in ("==", "in"):
            raise QueryError(
                f"cannot filter on {field!r} with {operator!r}: kbflow filters {', '.join(_FIELDS)} with == or in"
            )
        name = _FIELDS[field]
        out[name] = value if name == "scope" or isinstance(value, list) else [value]
    return out


@haystack.component
class KbflowRetriever:
    """Cited hybrid search over a kbflow lake or server, as a Haystack component (see the module docs)."""

    def __init__(
        self,
        lake: str | None = None,
        url: str | None = None,
        api_key: Any = None,
        top_k: int = 5,
        search_options: dict[str, Any] | None = None,
    ) -> None:
        self.lake, self.url, self.api_key, self.top_k = lake, url, api_key, top_k
        self.search_options = dict(search_options or {})
        key = api_key.resolve_value() if api_key is not None else None
        self._searcher = Searcher(lake, url=url, api_key=key, options=self.search_options, origin="haystack")

    @haystack.component.output_types(documents=list[haystack.Document])  # type: ignore[name-defined]  # lazy module
    def run(self, query: str, top_k: int | None = None, filters: dict[str, Any] | None = None) -> dict[str, Any]:
        hits = self._searcher.search(query, top_k or self.top_k, **filters_to_options(filters))
        return {"documents": documents_of(hits)}

    def to_dict(self) -> dict[str, Any]:
        """The component as Haystack serializes it (an API key only as the name of its environment variable)."""
        return haystack.default_to_dict(
            self,
            lake=self.lake,
            url=self.url,
            api_key=self.api_key.to_dict() if self.api_key is not None else None,
            top_k=self.top_k,
            search_options=self.search_options,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KbflowRetriever:
        init = data.get("init_parameters", {})
        if init.get("api_key") is not None:
            _secrets.deserialize_secrets_inplace(init, keys=["api_key"])
        return haystack.default_from_dict(cls, data)
