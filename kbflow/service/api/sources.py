"""``/v1/sources``: the source registry (registering, removing and refreshing need an editor's key)."""

# no `from __future__ import annotations`: FastAPI reads the route signatures' annotations at run time
from typing import Annotated

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from kbflow.service.http import caller, sources_of
from kbflow.service.sources import SourceService
from kbflow.usage.keys import ApiKey

__all__ = ["SourceIn", "router"]

router = APIRouter(tags=["sources"])
Caller = Annotated[ApiKey | None, Depends(caller)]
Served = Annotated[SourceService, Depends(sources_of)]


class SourceIn(BaseModel):
    """``POST /v1/sources``: what ``kbflow add`` takes (:func:`kbflow.pipeline.register_source`)."""

    uri: str = Field(max_length=4096, description="A path on the server (under --source-root) or an http(s) URL")
    type: str = Field(max_length=32, description="docs, repo, jsonl, pdf, web or ticket")
    id: str | None = Field(None, max_length=200)
    scope: str | None = Field(None, max_length=512)
    title: str | None = Field(None, max_length=1000)
    max_file_mb: float | None = Field(None, gt=0)
    refresh: str | None = Field(None, max_length=200, description="A cron schedule for Dagster ('none' removes it)")
    all_pages: bool | None = Field(None, description="web: keep the pages the site marks as not for search")
    crawl: bool | None = Field(None, description="web, an http(s) URL: the whole site under the URL's folder")
    crawl_limits: dict[str, float] | None = Field(None, description="crawl: depth, max_pages, delay")
    fields: dict[str, str] | None = Field(None, description="jsonl: the keys of a record's id, title and text")
    allow_private: list[str] | None = Field(
        None, max_length=50, description="web: private hosts or networks it may reach (a global editor only)"
    )


@router.get("/v1/sources", summary="Registered sources: status, last indexed, last error, skipped files")
def sources(key: Caller, service: Served):
    return {"sources": service.list(key)}


@router.get("/v1/sources/{source_id}", summary="One source")
def source(key: Caller, service: Served, source_id: str):
    return service.get(key, source_id)


@router.post("/v1/sources", status_code=201, summary="Register a source (editor)")
def add_source(key: Caller, service: Served, body: SourceIn):
    return service.add(key, body.model_dump())


@router.delete("/v1/sources/{source_id}", summary="Remove a source and its rows (editor)")
def remove_source(key: Caller, service: Served, source_id: str):
    return service.remove(key, source_id)


@router.post("/v1/sources/{source_id}/refresh", summary="Ingest one source now, through the Dagster assets (editor)")
def refresh_source(key: Caller, service: Served, source_id: str):
    return service.refresh(key, source_id)
