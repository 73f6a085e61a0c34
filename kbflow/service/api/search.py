"""``/v1/health``, ``/v1/search``, ``/v1/chunks``, ``/v1/resolve`` and ``/v1/citations``."""

# no `from __future__ import annotations`: FastAPI reads the route signatures' annotations at run time
from typing import Annotated

from fastapi import APIRouter, Body, Depends, Query, Request
from pydantic import BaseModel, Field

from kbflow.service.core import Service, hits_dict
from kbflow.service.http import caller, service_of
from kbflow.usage.keys import ApiKey

__all__ = ["CitationsIn", "router"]

router = APIRouter(tags=["search"])
Caller = Annotated[ApiKey | None, Depends(caller)]
Served = Annotated[Service, Depends(service_of)]


class CitationsIn(BaseModel):
    """``POST /v1/citations``: the chunks put in front of a model."""

    chunk_ids: list[str] = Field(min_length=1, max_length=100)
    query_id: str | None = Field(None, max_length=200)
    turn_id: str | None = Field(None, max_length=200)


@router.get("/v1/health", summary="Liveness; with a key (or keyless), the lake, its search-table version and model")
def health(request: Request, service: Served):
    return service.health(anonymous=request.scope.get("state", {}).get("kbflow_anonymous", False))


@router.get("/v1/search", summary="Hybrid search; every hit carries its citation")
def search(
    key: Caller,
    service: Served,
    # the caps (q 1-1,000 characters, k 1-100) are the library's, checked by it with its messages
    q: Annotated[str, Query(description="The query, 1-1,000 characters")],
    k: Annotated[int, Query(description="Hits, 1-100")] = 10,
    mode: Annotated[str | None, Query(description="hybrid, dense or bm25")] = None,
    fusion: Annotated[str | None, Query(description="convex or rrf")] = None,
    scope: Annotated[str | None, Query(description="A scope path: it, its ancestors and global")] = None,
    kind: Annotated[list[str] | None, Query(description="Content kinds; repeatable")] = None,
    source_type: Annotated[list[str] | None, Query(description="Source types; repeatable")] = None,
    source: Annotated[list[str] | None, Query(description="Source ids; repeatable")] = None,
    min_score: Annotated[float | None, Query(ge=0, le=1)] = None,
    version: Annotated[int | None, Query(ge=1, description="A search-table version")] = None,
    tag: Annotated[str | None, Query(max_length=200, description="A lake snapshot tag")] = None,
):
    hits, at = service.search(
        key,
        q,
        k,
        origin="rest",
        mode=mode,
        fusion=fusion,
        scope=scope,
        kinds=kind,
        source_types=source_type,
        source_ids=source,
        min_score=min_score,
        version=version,
        tag=tag,
    )
    return hits_dict(hits, at)


@router.get("/v1/chunks/{chunk_id}", summary="A chunk: text, citation, and its neighbours in the unit")
def chunk(key: Caller, service: Served, chunk_id: str):
    return service.chunk(key, chunk_id)


@router.get("/v1/resolve/{chunk_id}", summary="The source text a chunk's citation points at, re-read")
def resolve(key: Caller, service: Served, chunk_id: str, indexed: bool = False):
    return service.resolve(key, chunk_id, indexed=indexed)


@router.post("/v1/citations", status_code=201, summary="Record the chunks put in front of a model")
def citations(key: Caller, service: Served, body: Annotated[CitationsIn, Body()]):
    return {"recorded": service.cite(key, body.chunk_ids, query_id=body.query_id, turn_id=body.turn_id)}
