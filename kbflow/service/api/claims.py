"""``/v1/claims``: recall, learn, read and move claims (writing needs an editor's key)."""

# no `from __future__ import annotations`: FastAPI reads the route signatures' annotations at run time
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException

from kbflow.service.claims import ClaimService
from kbflow.service.http import caller, claims_of
from kbflow.usage.keys import ApiKey

__all__ = ["ClaimActionIn", "ClaimIn", "router"]

router = APIRouter(tags=["claims"])
Caller = Annotated[ApiKey | None, Depends(caller)]
Served = Annotated[ClaimService, Depends(claims_of)]
#: what ``POST /v1/claims/{id}/{action}`` does
ACTIONS = ("verify", "dispute", "supersede")


class ClaimIn(BaseModel):
    """``POST /v1/claims``: a claim and its evidence."""

    text: str = Field(max_length=4000)
    evidence: list[dict[str, Any]] = Field(
        max_length=50,
        description='At least one: {"kind": "citation", "ref": CHUNK_ID}, {"kind": "url", "ref": URL, "text"?}, '
        '{"kind": "tool_output", "ref": TOOL, "text": OUTPUT}, {"kind": "model_inference", "ref": MODEL, "text": WHY}',
    )
    scope: str | None = Field(None, max_length=512)
    status: str | None = Field(None, description="observed (default), inferred or hypothesis")
    confidence: float | None = Field(None, ge=0, le=1)
    domain: str | None = Field(None, max_length=200)
    tags: list[str] = Field(default_factory=list, max_length=50)
    actor_type: str | None = Field(None, description="agent, user (default) or tool; the key names the actor")


class ClaimActionIn(BaseModel):
    """``POST /v1/claims/{id}/verify|dispute|supersede``."""

    reason: str | None = Field(None, max_length=4000)
    evidence: list[dict[str, Any]] = Field(default_factory=list, max_length=50)
    confidence: float | None = Field(None, ge=0, le=1, description="verify: the claim's new confidence")
    expect: str | None = Field(None, description="refuse unless the claim is still in this status")
    new_id: str | None = Field(None, max_length=200, description="supersede: the claim that replaces this one")
    actor_type: str | None = None


@router.get("/v1/claims", summary="Recall claims matching q (hybrid search), or list the newest without q")
def claims(
    key: Caller,
    service: Served,
    q: Annotated[str | None, Query(max_length=1000)] = None,
    k: Annotated[int, Query(ge=1, le=100)] = 5,
    scope: Annotated[str | None, Query(max_length=512)] = None,
    status: Annotated[list[str] | None, Query(description="Statuses; repeatable (default active)")] = None,
    all_statuses: bool = False,
    domain: Annotated[str | None, Query(max_length=200)] = None,
    tag: Annotated[list[str] | None, Query()] = None,
):
    return service.recall(key, q, k, scope=scope, statuses=status, domain=domain, tags=tag, all_statuses=all_statuses)


@router.post("/v1/claims", status_code=201, summary="Learn a claim, with evidence (editor)")
def learn_claim(key: Caller, service: Served, body: ClaimIn):
    return service.learn(key, body.model_dump())


@router.post("/v1/claims/check", summary="Flag claims whose cited sources changed (global editor)")
def claims_check(key: Caller, service: Served):
    return service.check(key)


@router.get("/v1/claims/{claim_id}", summary="A claim: status, evidence, stale evidence, links")
def claim(key: Caller, service: Served, claim_id: str):
    return service.get(key, claim_id)


@router.get("/v1/claims/{claim_id}/history", summary="A claim's events in order, applied and refused")
def claim_history(key: Caller, service: Served, claim_id: str):
    return service.history(key, claim_id)


@router.post("/v1/claims/{claim_id}/{action}", summary="verify, dispute or supersede a claim (editor)")
def claim_action(key: Caller, service: Served, claim_id: str, action: str, body: ClaimActionIn):
    if action not in ACTIONS:
        raise HTTPException(404, f"no claim action {action!r}; verify, dispute or supersede")
    return service.transition(key, claim_id, action, body.model_dump())
