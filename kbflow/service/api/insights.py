"""``/v1/insights``: top queries, content gaps, most and never cited sources (a global key)."""

# no `from __future__ import annotations`: FastAPI reads the route signatures' annotations at run time
from typing import Annotated

from fastapi import APIRouter, Depends, Query

from kbflow.service.core import Service
from kbflow.service.http import caller, service_of
from kbflow.usage.keys import ApiKey

__all__ = ["router"]

router = APIRouter(tags=["insights"])


@router.get("/v1/insights", summary="Top queries, content gaps, most and never cited sources (global key)")
def insights(
    key: Annotated[ApiKey | None, Depends(caller)],
    service: Annotated[Service, Depends(service_of)],
    since: Annotated[str | None, Query(max_length=64, description="7d, 12h, an ISO date; empty: all")] = "7d",
    top: Annotated[int, Query(ge=1, le=1000)] = 20,
):
    return service.insights(key, since or None, top)
