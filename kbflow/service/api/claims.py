"""``/v1/claims``: recall, learn, read and move claims (writing needs an editor's key)."""

# no `from __future__ import annotations`: FastAPI reads the route signatures' annotations at run time
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException

from kbflow.service.claims import ClaimService
from kbflow.service.http import caller, claims_of
from kbflow.usage.keys import ApiKey

__all__ = ["ClaimActionIn", "ClaimIn", "RelationActionIn", "RelationIn", "router"]

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
    valid_from: str | None = Field(None, max_length=40, description="When it starts to hold (YYYY-MM-DD)")
    valid_to: str | None = Field(None, max_length=40, description="When it stops holding (YYYY-MM-DD, included)")
    actor_type: str | None = Field(None, description="agent, user (default) or tool; the key names the actor")


class ClaimActionIn(BaseModel):
    """``POST /v1/claims/{id}/verify|dispute|supersede``."""

    reason: str | None = Field(None, max_length=4000)
    evidence: list[dict[str, Any]] = Field(default_factory=list, max_length=50)
    confidence: float | None = Field(None, ge=0, le=1, description="verify: the claim's new confidence")
    expect: str | None = Field(None, description="refuse unless the claim is still in this status")
    new_id: str | None = Field(None, max_length=200, description="supersede: the claim that replaces this one")
    because: str | None = Field(None, max_length=200, description="supersede: the relation that led to it")
    actor_type: str | None = None


class RelationIn(BaseModel):
    """``POST /v1/relations``: claim ``source`` entails|contradicts|refines|derived_from claim ``target``."""

    source: str = Field(max_length=200)
    type: str = Field(description="entails, contradicts, refines or derived_from")
    target: str = Field(max_length=200)
    evidence: list[dict[str, Any]] = Field(default_factory=list, max_length=50, description="As for claims")
    reason: str | None = Field(None, max_length=4000)
    actor_type: str | None = Field(None, description="agent, user (default) or tool; the key names the actor")


class RelationActionIn(BaseModel):
    """``POST /v1/relations/{id}/confirm|reject|unrelate``."""

    reason: str | None = Field(None, max_length=4000)
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
    valid_at: Annotated[str | None, Query(max_length=40, description="Only claims that hold on this date")] = None,
    as_of: Annotated[str | None, Query(max_length=40, description="As the store believed at this time")] = None,
):
    return service.recall(
        key,
        q,
        k,
        scope=scope,
        statuses=status,
        domain=domain,
        tags=tag,
        all_statuses=all_statuses,
        valid_at=valid_at,
        as_of=as_of,
    )


@router.post("/v1/claims", status_code=201, summary="Learn a claim, with evidence (editor)")
def learn_claim(key: Caller, service: Served, body: ClaimIn):
    return service.learn(key, body.model_dump())


@router.post("/v1/claims/check", summary="Flag claims whose cited sources changed (global editor)")
def claims_check(key: Caller, service: Served):
    return service.check(key)


@router.get("/v1/claims/conflicts", summary="Candidate contradictions for a person to decide (changes nothing)")
def claims_conflicts(
    key: Caller,
    service: Served,
    scope: Annotated[str | None, Query(max_length=512)] = None,
    confirmed: Annotated[bool | None, Query(description="true: confirmed only; false: undecided only")] = None,
):
    return service.conflicts(key, scope=scope, confirmed=confirmed)


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


@router.get("/v1/claims/{claim_id}/relations", summary="A claim's relations (default: proposed and confirmed)")
def claim_relations(
    key: Caller,
    service: Served,
    claim_id: str,
    type: Annotated[list[str] | None, Query(description="Types; repeatable")] = None,
    status: Annotated[list[str] | None, Query(description="Statuses; repeatable")] = None,
):
    return service.relations(key, claim_id, types=type, statuses=status)


@router.get("/v1/relations", summary="Relations between claims (default: proposed and confirmed)")
def relations(
    key: Caller,
    service: Served,
    type: Annotated[list[str] | None, Query(description="Types; repeatable")] = None,
    status: Annotated[list[str] | None, Query(description="Statuses; repeatable")] = None,
    scope: Annotated[str | None, Query(max_length=512)] = None,
):
    return service.relations(key, None, types=type, statuses=status, scope=scope)


@router.post("/v1/relations", status_code=201, summary="Propose a relation between two claims (editor)")
def relate(key: Caller, service: Served, body: RelationIn):
    return service.relate(key, body.model_dump())


@router.get("/v1/relations/{relation_id}", summary="A relation: its claims, status, evidence")
def relation(key: Caller, service: Served, relation_id: str):
    return service.relation(key, relation_id)


@router.get("/v1/relations/{relation_id}/history", summary="A relation's events in order, applied and refused")
def relation_history(key: Caller, service: Served, relation_id: str):
    service.relation(key, relation_id)
    return {"relation_id": relation_id, "events": [e.to_dict() for e in service.store().history(relation_id)]}


@router.post("/v1/relations/{relation_id}/{action}", summary="confirm, reject or unrelate a relation (editor)")
def relation_action(key: Caller, service: Served, relation_id: str, action: str, body: RelationActionIn):
    if action not in ("confirm", "reject", "unrelate"):
        raise HTTPException(404, f"no relation action {action!r}; confirm, reject or unrelate")
    return service.relation_action(key, relation_id, action, body.model_dump())
