"""A Python client for ``kbflow serve``: the same search signature and records as :class:`kbflow.Retriever`.

>>> from kbflow import Client                                          # doctest: +SKIP
>>> c = Client("http://127.0.0.1:8765", api_key="kbf_...")             # doctest: +SKIP
>>> hits = c.search("how do I rotate the signing key", k=5, scope="acme/payments")  # doctest: +SKIP
>>> c.cite(hits[:2], turn_id="conv-17#4")                               # doctest: +SKIP

Errors come back as the kbflow exceptions the server raised
(:class:`~kbflow.errors.QueryError` for a bad request,
:class:`~kbflow.errors.AuthError` for a missing or wrong key, ...).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any, Unpack

from kbflow import errors
from kbflow._lazy import require
from kbflow.records import (
    FlagReason,
    Hit,
    Hits,
    render,  # noqa: F401  (the hits it returns draw themselves in notebooks)
)
from kbflow.retrieve.request import SearchOptions

__all__ = ["Client"]

#: the server's error code -> the exception the client raises
_ERRORS: dict[str, type[errors.KbflowError]] = {
    "forbidden": errors.AccessDeniedError,
    "unauthorized": errors.AuthError,
    "source_not_found": errors.SourceNotFoundError,
    "not_found": errors.NotFoundError,
    "stale_citation": errors.StaleCitationError,
    "unresolvable": errors.ResolveError,
    "lake_busy": errors.LakeBusyError,
    "storage_error": errors.LakeStorageError,
    "lake_not_ready": errors.LakeNotFoundError,
    "version_not_found": errors.VersionNotFoundError,
    "conflict": errors.SourceConflictError,
    "unsafe_file": errors.UnsafeFileError,
    "overloaded": errors.OverloadedError,
    "cross_site": errors.AccessDeniedError,
    "lake_error": errors.LakeError,
    "invalid_request": errors.QueryError,
    "too_large": errors.QueryError,
    "invalid_source": errors.SourceError,
    "model_error": errors.EmbedError,
    "invalid_claim": errors.ClaimError,
    "invalid_transition": errors.ClaimTransitionError,
}


#: the search options the REST API takes (the rest are the server's settings)
REST_OPTIONS = ("mode", "fusion", "scope", "kinds", "source_types", "source_ids", "min_score")


def _search_params(query: str, k: int, options: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The query string of ``GET /v1/search`` for a search (a :class:`QueryError` for an option REST lacks)."""
    unsupported = set(options) - set(REST_OPTIONS)
    if unsupported:
        raise errors.QueryError(f"options not available over REST: {sorted(unsupported)}")
    params: list[tuple[str, Any]] = [("q", query), ("k", k)]
    for name in ("mode", "fusion", "scope", "min_score"):
        if options.get(name) is not None:
            params.append((name, options[name]))
    for name, param in (("kinds", "kind"), ("source_types", "source_type"), ("source_ids", "source")):
        values = options.get(name)
        if values is not None:
            params += [(param, v) for v in ([values] if isinstance(values, str) else values)]
    return params


def _hits_of(data: Mapping[str, Any]) -> Hits:
    """The :class:`Hits` of a ``GET /v1/search`` answer."""
    hits = Hits([Hit.from_dict(h) for h in data["hits"]], query=data["query"], mode=data["mode"])
    hits.query_id = data["query_id"]
    hits.confidence = data["confidence"]
    if data.get("flag"):
        hits.flag = FlagReason.from_dict(data["flag"])
    hits.latency_ms = data["latency_ms"]
    hits.expansion = data.get("expansion", "")  # a server from before query expansion sends none
    return hits


def _seconds(retry_after: str) -> float:
    """A ``Retry-After`` header's seconds (a date or anything else: one second)."""
    try:
        return max(0.0, float(retry_after))
    except ValueError:
        return 1.0


class Client:
    """Talk to a ``kbflow serve`` at ``url`` (``api_key`` where the server has keys).

    A server past saturation answers 503 with ``Retry-After``; the client waits
    that long and asks again, up to ``retries`` times, then raises
    :class:`~kbflow.errors.OverloadedError`.
    """

    def __init__(self, url: str, api_key: str | None = None, *, timeout: float = 60.0, retries: int = 3) -> None:
        httpx = require("httpx")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.url = url.rstrip("/")
        self.retries = retries
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def __repr__(self) -> str:
        return f"Client({self.url!r})"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        httpx = require("httpx")
        for attempt in range(self.retries + 1):
            try:
                response = self._http.request(method, path, **kwargs)
            except httpx.HTTPError as exc:
                raise errors.LakeError(f"{self.url}: cannot reach the kbflow server ({exc})") from None
            if response.status_code != 503 or attempt == self.retries or "retry-after" not in response.headers:
                break
            time.sleep(min(_seconds(response.headers["retry-after"]), 30.0))
        return self._answer(response)

    def _answer(self, response: Any) -> Any:
        """The JSON of a successful answer, else the kbflow error it carries."""
        if response.is_success:
            return response.json()
        try:
            error = response.json()["error"]
            code, message = error["code"], error["message"]
        except Exception:
            code, message = "internal", response.text[:500]
        cls = _ERRORS.get(code, errors.KbflowError)
        if cls is errors.StaleCitationError:
            raise cls(message, error.get("current_text"), error.get("indexed_text"))
        if cls is errors.OverloadedError:
            raise cls(f"{message} (HTTP 503)", _seconds(response.headers.get("retry-after", "1")))
        if cls is errors.ClaimTransitionError:
            raise cls(f"{message} (HTTP {response.status_code})", "", "", "", ())
        raise cls(f"{message} (HTTP {response.status_code})")

    def search(self, query: str, k: int = 10, **options: Unpack[SearchOptions]) -> Hits:
        """As :meth:`kbflow.Retriever.search`, answered by the server (fusion weights, reranker and depth
        overrides are the server's settings)."""
        return _hits_of(self._call("GET", "/v1/search", params=_search_params(query, k, options)))

    async def asearch(self, query: str, k: int = 10, **options: Unpack[SearchOptions]) -> Hits:
        """:meth:`search` without blocking the event loop (an agent's ``ainvoke``): the same request, sent with
        an asynchronous HTTP client; a 503 is retried as :meth:`search` retries it."""
        import asyncio

        httpx = require("httpx")
        params = _search_params(query, k, options)
        async with httpx.AsyncClient(base_url=self.url, headers=self._http.headers, timeout=self._http.timeout) as http:
            for attempt in range(self.retries + 1):
                try:
                    response = await http.get("/v1/search", params=params)
                except httpx.HTTPError as exc:
                    raise errors.LakeError(f"{self.url}: cannot reach the kbflow server ({exc})") from None
                if response.status_code != 503 or attempt == self.retries or "retry-after" not in response.headers:
                    break
                await asyncio.sleep(min(_seconds(response.headers["retry-after"]), 30.0))
        return _hits_of(self._answer(response))

    def cite(self, hits: Iterable[Hit], *, turn_id: str | None = None) -> int:
        """Record that ``hits`` were put in front of a model; returns how many were recorded."""
        hits = list(hits)
        if not hits:
            return 0
        query_ids = {h.query_id for h in hits}
        body = {
            "chunk_ids": [h.chunk_id for h in hits],
            "query_id": query_ids.pop() if len(query_ids) == 1 else None,
            "turn_id": turn_id,
        }
        return self._call("POST", "/v1/citations", json=body)["recorded"]

    def chunk(self, chunk_id: str) -> dict[str, Any]:
        return self._call("GET", f"/v1/chunks/{chunk_id}")

    def resolve(self, chunk_id: str, *, indexed: bool = False) -> str:
        """The source text the chunk's citation points at (raises ``StaleCitationError`` if it changed)."""
        return self._call("GET", f"/v1/resolve/{chunk_id}", params={"indexed": indexed})["text"]

    def sources(self) -> list[dict[str, Any]]:
        return self._call("GET", "/v1/sources")["sources"]

    def add_source(self, uri: str, type: str, **fields: Any) -> dict[str, Any]:
        return self._call("POST", "/v1/sources", json={"uri": uri, "type": type, **fields})

    def remove_source(self, source_id: str) -> dict[str, Any]:
        return self._call("DELETE", f"/v1/sources/{source_id}")

    def refresh_source(self, source_id: str) -> dict[str, Any]:
        return self._call("POST", f"/v1/sources/{source_id}/refresh")

    def insights(self, since: str | None = "7d", top: int = 20) -> dict[str, Any]:
        return self._call("GET", "/v1/insights", params={"since": since or "", "top": top})

    def health(self) -> dict[str, Any]:
        return self._call("GET", "/v1/health")

    # --- claims (see kbflow.claims; the server acts as the key's holder) -------------------------------
    @staticmethod
    def _evidence(items: Iterable[Any]) -> list[dict[str, Any]]:
        """Evidence as the API takes it: a hit or a citation evidence by its chunk id, others as they are."""
        out = []
        for item in items:
            if isinstance(item, Hit):
                out.append({"kind": "citation", "ref": item.chunk_id})
            elif hasattr(item, "to_dict"):
                data = item.to_dict()
                out.append({"kind": "citation", "ref": data["ref"]} if data["kind"] == "citation" else data)
            else:
                out.append(dict(item))
        return out

    def learn(self, text: str, evidence: Iterable[Any], **fields: Any) -> dict[str, Any]:
        """Learn a claim (``scope``, ``status``, ``confidence``, ``domain``, ``tags``, ``actor_type``); returns it."""
        return self._call("POST", "/v1/claims", json={"text": text, "evidence": self._evidence(evidence), **fields})

    def recall(self, query: str, k: int = 5, **filters: Any) -> list[dict[str, Any]]:
        """Claims matching ``query`` (``scope``, ``status``, ``all_statuses``, ``domain``, ``tag``; ``valid_at``:
        a date, only claims that hold then; ``as_of``: a timestamp, as the store believed then)."""
        return self._call("GET", "/v1/claims", params={"q": query, "k": k, **filters})["hits"]

    def claim(self, claim_id: str) -> dict[str, Any]:
        return self._call("GET", f"/v1/claims/{claim_id}")

    def claim_history(self, claim_id: str) -> list[dict[str, Any]]:
        return self._call("GET", f"/v1/claims/{claim_id}/history")["events"]

    def verify(self, claim_id: str, *, evidence: Iterable[Any] = (), **fields: Any) -> dict[str, Any]:
        body = {"evidence": self._evidence(evidence), **fields}
        return self._call("POST", f"/v1/claims/{claim_id}/verify", json=body)

    def dispute(self, claim_id: str, reason: str, *, evidence: Iterable[Any] = (), **fields: Any) -> dict[str, Any]:
        body = {"reason": reason, "evidence": self._evidence(evidence), **fields}
        return self._call("POST", f"/v1/claims/{claim_id}/dispute", json=body)

    def supersede(
        self, claim_id: str, new_id: str, *, reason: str | None = None, because: str | None = None
    ) -> dict[str, Any]:
        body = {"new_id": new_id, "reason": reason, "because": because}
        return self._call("POST", f"/v1/claims/{claim_id}/supersede", json=body)

    # --- relations and conflicts ---------------------------------------------------------------------
    def relate(
        self, source: str, type: str, target: str, *, evidence: Iterable[Any] = (), **fields: Any
    ) -> dict[str, Any]:
        """Propose that claim ``source`` entails|contradicts|refines|derived_from ``target`` (``reason``,
        ``actor_type``); returns the relation."""
        body = {"source": source, "type": type, "target": target, "evidence": self._evidence(evidence), **fields}
        return self._call("POST", "/v1/relations", json=body)

    def relation(self, relation_id: str) -> dict[str, Any]:
        return self._call("GET", f"/v1/relations/{relation_id}")

    def relations(self, claim_id: str | None = None, **filters: Any) -> list[dict[str, Any]]:
        """Relations (of ``claim_id``): ``type``, ``status`` (default proposed and confirmed), ``scope``."""
        path = f"/v1/claims/{claim_id}/relations" if claim_id else "/v1/relations"
        return self._call("GET", path, params=filters)["relations"]

    def confirm_relation(self, relation_id: str, **fields: Any) -> dict[str, Any]:
        return self._call("POST", f"/v1/relations/{relation_id}/confirm", json=fields)

    def reject_relation(self, relation_id: str, **fields: Any) -> dict[str, Any]:
        return self._call("POST", f"/v1/relations/{relation_id}/reject", json=fields)

    def unrelate(self, relation_id: str, **fields: Any) -> dict[str, Any]:
        return self._call("POST", f"/v1/relations/{relation_id}/unrelate", json=fields)

    def conflicts(self, *, scope: str | None = None, confirmed: bool | None = None) -> list[dict[str, Any]]:
        """Candidate contradictions among the claims the key sees (``confirmed``: True only those confirmed,
        False only the undecided)."""
        params = {k: v for k, v in (("scope", scope), ("confirmed", confirmed)) if v is not None}
        return self._call("GET", "/v1/claims/conflicts", params=params)["conflicts"]
