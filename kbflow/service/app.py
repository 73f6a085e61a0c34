"""The REST API (FastAPI) of ``kbflow serve``, with the MCP tools mounted at ``/mcp``.

Every route calls :class:`kbflow.service.core.Service`; kbflow's errors map
onto HTTP statuses in one place (:data:`ERRORS`), as
``{"error": {"code", "message"}}``. Requests carry an API key as
``Authorization: Bearer kbf_...`` (or ``X-API-Key``) when the lake has keys;
bodies are limited to :data:`MAX_BODY` bytes and query strings to
:data:`MAX_QUERY_STRING`. The OpenAPI schema is at ``/openapi.json`` and
browsable at ``/docs``.
"""

# no `from __future__ import annotations`: FastAPI reads the route signatures' annotations at run time
import contextlib
import logging
import urllib.parse
from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import Body, FastAPI, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException

from kbflow import __version__
from kbflow.errors import (
    AccessDeniedError,
    AuthError,
    ClaimError,
    ClaimTransitionError,
    ConfigError,
    DatasetError,
    EmbedError,
    KbflowError,
    LakeBusyError,
    LakeError,
    LakeNotFoundError,
    LakeStorageError,
    MissingDependencyError,
    NotFoundError,
    QueryError,
    ResolveError,
    SourceError,
    SourceNotFoundError,
    StaleCitationError,
)
from kbflow.service.core import Service, hits_dict
from kbflow.service.security import Policy, cookie_value, install_guards, page_csp

__all__ = ["ERRORS", "MAX_BODY", "MAX_QUERY_STRING", "create_app", "error_body", "token_of"]

log = logging.getLogger("kbflow.service")

MAX_BODY = 256 * 1024
MAX_QUERY_STRING = 8 * 1024

#: kbflow error class -> (HTTP status, error code); the first match wins (subclasses first)
ERRORS: list[tuple[type[Exception], int, str]] = [
    (AccessDeniedError, 403, "forbidden"),
    (AuthError, 401, "unauthorized"),
    (SourceNotFoundError, 404, "source_not_found"),
    (NotFoundError, 404, "not_found"),
    (StaleCitationError, 409, "stale_citation"),
    (ResolveError, 422, "unresolvable"),
    (LakeBusyError, 409, "lake_busy"),
    (LakeStorageError, 507, "storage_error"),
    (LakeNotFoundError, 503, "lake_not_ready"),
    (LakeError, 500, "lake_error"),
    (ClaimTransitionError, 409, "invalid_transition"),
    (ClaimError, 400, "invalid_claim"),
    (QueryError, 400, "invalid_request"),
    (ConfigError, 400, "invalid_request"),
    (DatasetError, 400, "invalid_request"),
    (SourceError, 400, "invalid_source"),
    (EmbedError, 500, "model_error"),
    (MissingDependencyError, 500, "missing_dependency"),
    (KbflowError, 500, "error"),
]

_OPEN_PATHS = ("/v1/health", "/docs", "/openapi.json", "/docs/oauth2-redirect", "/login")


def error_body(code: str, message: str, **details: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **details}}


def status_of(exc: Exception) -> tuple[int, str]:
    for cls, status, code in ERRORS:
        if isinstance(exc, cls):
            return status, code
    return 500, "internal"


def token_of(headers) -> str | None:
    """The API key a request carries: ``Authorization: Bearer <key>``, ``X-API-Key: <key>``, or the web page's
    sign-in cookie."""
    auth = headers.get("authorization")
    if auth and auth.lower().startswith("bearer "):
        return auth[7:].strip()
    if headers.get("x-api-key"):
        return headers.get("x-api-key")
    from kbflow.service.web import COOKIE

    return cookie_value(headers, COOKIE)


def _is_page(path: str) -> bool:
    """A web page (answered with a sign-in redirect), not the API or MCP (answered with JSON)."""
    return not (path.startswith("/v1/") or path.startswith("/mcp") or path in _OPEN_PATHS)


class _Guard:
    """ASGI middleware: size limits, then the API key (checked once; kept in ``scope["state"]``)."""

    def __init__(self, app, service: Service) -> None:
        self.app = app
        self.service = service

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        from starlette.datastructures import Headers
        from starlette.responses import JSONResponse

        async def refuse(status: int, code: str, message: str) -> None:
            await JSONResponse(error_body(code, message), status_code=status)(scope, receive, send)

        if len(scope.get("query_string") or b"") > MAX_QUERY_STRING:
            return await refuse(414, "too_large", f"the query string is over {MAX_QUERY_STRING} bytes")
        headers = Headers(scope=scope)
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
            return await refuse(413, "too_large", f"the request body is over {MAX_BODY} bytes")
        if scope["path"] not in _OPEN_PATHS:
            try:
                import anyio

                key = await anyio.to_thread.run_sync(self.service.principal, token_of(headers))
            except AuthError as exc:
                if _is_page(scope["path"]):
                    from starlette.responses import RedirectResponse

                    target = "/login?" + urllib.parse.urlencode({"next": scope["path"], "error": str(exc)})
                    return await RedirectResponse(target, 303)(scope, receive, send)
                return await refuse(401, "unauthorized", str(exc))
            scope.setdefault("state", {})["kbflow_key"] = key
        received = 0

        async def limited():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > MAX_BODY:
                    raise _TooLarge()
            return message

        try:
            await self.app(scope, limited, send)
        except _TooLarge:
            await refuse(413, "too_large", f"the request body is over {MAX_BODY} bytes")


class _TooLarge(Exception):
    pass


class SourceIn(BaseModel):
    """``POST /v1/sources``: what ``kbflow add`` takes."""

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


class CitationsIn(BaseModel):
    """``POST /v1/citations``: the chunks put in front of a model."""

    chunk_ids: list[str] = Field(min_length=1, max_length=100)
    query_id: str | None = Field(None, max_length=200)
    turn_id: str | None = Field(None, max_length=200)


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


def create_app(
    service: Service,
    *,
    mcp: bool = True,
    web: bool = True,
    host: str = "127.0.0.1",
    allow_hosts: Sequence[str] = (),
    allow_origins: Sequence[str] = (),
):
    """The FastAPI app of ``kbflow serve`` over ``service`` (``mcp``: mount the MCP tools at ``/mcp``; ``web``:
    the web page at ``/``, :mod:`kbflow.service.web`).

    ``host`` is the address the server binds; it answers only to its own names
    and ``allow_hosts``, and takes writes from browsers only of its own origin and
    ``allow_origins`` (:mod:`kbflow.service.security`)."""
    policy = Policy.of(host, allow_hosts, allow_origins)
    mcp_server = None
    if mcp:
        from kbflow.service.mcp import build_mcp

        mcp_server = build_mcp(service)
        mcp_app = mcp_server.streamable_http_app(
            streamable_http_path="/mcp", host=host, transport_security=policy.mcp_settings()
        )

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        if mcp_server is None:
            yield
            return
        async with mcp_server.session_manager.run():
            yield

    app = FastAPI(
        title="kbflow",
        version=__version__,
        description='Cited hybrid search over a kbflow lake. Errors are `{"error": {"code", "message"}}`.',
        lifespan=lifespan,
        docs_url=None,
    )
    app.state.policy = policy
    _mount_docs(app)
    if mcp_server is not None:
        app.router.routes.extend(mcp_app.routes)

    @app.exception_handler(KbflowError)
    async def kbflow_error(_request: Request, exc: KbflowError):
        status, code = status_of(exc)
        details: dict[str, Any] = {}
        if isinstance(exc, StaleCitationError):
            details = {"indexed_text": exc.indexed_text, "current_text": exc.current_text}
        if status >= 500:
            log.error("%s: %s", code, exc)
        return JSONResponse(error_body(code, str(exc), **details), status_code=status)

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, exc: RequestValidationError):
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'] if p not in ('query', 'body', 'path'))}: {e['msg']}"
            for e in exc.errors()
        )
        return JSONResponse(error_body("invalid_request", problems or "invalid request"), status_code=400)

    @app.exception_handler(HTTPException)
    async def http_error(_request: Request, exc: HTTPException):
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse(error_body(code, str(exc.detail)), status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def unexpected(_request: Request, exc: Exception):
        log.exception("unexpected error")
        return JSONResponse(error_body("internal", f"internal error: {type(exc).__name__}"), status_code=500)

    def key(request: Request):
        return request.scope.get("state", {}).get("kbflow_key")

    @app.get("/v1/health", summary="Liveness, the lake, its search-table version and model")
    async def health():
        return await run_in_threadpool(service.health)

    @app.get("/v1/search", summary="Hybrid search; every hit carries its citation")
    async def search(
        request: Request,
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
        hits, at = await run_in_threadpool(
            service.search,
            key(request),
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

    @app.get("/v1/chunks/{chunk_id}", summary="A chunk: text, citation, and its neighbours in the unit")
    async def chunk(request: Request, chunk_id: str):
        return await run_in_threadpool(service.chunk, key(request), chunk_id)

    @app.get("/v1/resolve/{chunk_id}", summary="The source text a chunk's citation points at, re-read")
    async def resolve(request: Request, chunk_id: str, indexed: bool = False):
        return await run_in_threadpool(service.resolve, key(request), chunk_id, indexed=indexed)

    @app.get("/v1/sources", summary="Registered sources: status, last indexed, last error, skipped files")
    async def sources(request: Request):
        return {"sources": await run_in_threadpool(service.sources, key(request))}

    @app.get("/v1/sources/{source_id}", summary="One source")
    async def source(request: Request, source_id: str):
        return await run_in_threadpool(service.source, key(request), source_id)

    @app.post("/v1/sources", status_code=201, summary="Register a source (editor)")
    async def add_source(request: Request, body: SourceIn):
        return await run_in_threadpool(service.add_source, key(request), body.model_dump())

    @app.delete("/v1/sources/{source_id}", summary="Remove a source and its rows (editor)")
    async def remove_source(request: Request, source_id: str):
        return await run_in_threadpool(service.remove_source, key(request), source_id)

    @app.post("/v1/sources/{source_id}/refresh", summary="Ingest one source now, through the Dagster assets (editor)")
    async def refresh_source(request: Request, source_id: str):
        return await run_in_threadpool(service.refresh_source, key(request), source_id)

    @app.post("/v1/citations", status_code=201, summary="Record the chunks put in front of a model")
    async def citations(request: Request, body: Annotated[CitationsIn, Body()]):
        count = await run_in_threadpool(
            service.cite, key(request), body.chunk_ids, query_id=body.query_id, turn_id=body.turn_id
        )
        return {"recorded": count}

    @app.get("/v1/claims", summary="Recall claims matching q (hybrid search), or list the newest without q")
    async def claims(
        request: Request,
        q: Annotated[str | None, Query(max_length=1000)] = None,
        k: Annotated[int, Query(ge=1, le=100)] = 5,
        scope: Annotated[str | None, Query(max_length=512)] = None,
        status: Annotated[list[str] | None, Query(description="Statuses; repeatable (default active)")] = None,
        all_statuses: bool = False,
        domain: Annotated[str | None, Query(max_length=200)] = None,
        tag: Annotated[list[str] | None, Query()] = None,
    ):
        return await run_in_threadpool(
            service.recall_claims, key(request), q, k, scope=scope, statuses=status, domain=domain, tags=tag,
            all_statuses=all_statuses,
        )  # fmt: skip

    @app.post("/v1/claims", status_code=201, summary="Learn a claim, with evidence (editor)")
    async def learn_claim(request: Request, body: ClaimIn):
        return await run_in_threadpool(service.learn_claim, key(request), body.model_dump())

    @app.get("/v1/claims/{claim_id}", summary="A claim: status, evidence, stale evidence, links")
    async def claim(request: Request, claim_id: str):
        return await run_in_threadpool(service.claim, key(request), claim_id)

    @app.get("/v1/claims/{claim_id}/history", summary="A claim's events in order, applied and refused")
    async def claim_history(request: Request, claim_id: str):
        return await run_in_threadpool(service.claim_history, key(request), claim_id)

    @app.post("/v1/claims/{claim_id}/{action}", summary="verify, dispute or supersede a claim (editor)")
    async def claim_action(request: Request, claim_id: str, action: str, body: ClaimActionIn):
        if action not in ("verify", "dispute", "supersede"):
            raise HTTPException(404, f"no claim action {action!r}; verify, dispute or supersede")
        return await run_in_threadpool(service.transition_claim, key(request), claim_id, action, body.model_dump())

    @app.post("/v1/claims/check", summary="Flag claims whose cited sources changed (global editor)")
    async def claims_check(request: Request):
        return await run_in_threadpool(service.check_claims, key(request))

    @app.get("/v1/insights", summary="Top queries, content gaps, most and never cited sources (global key)")
    async def insights(
        request: Request,
        since: Annotated[str | None, Query(max_length=64, description="7d, 12h, an ISO date; empty: all")] = "7d",
        top: Annotated[int, Query(ge=1, le=1000)] = 20,
    ):
        return await run_in_threadpool(service.insights, key(request), since or None, top)

    if web:
        from kbflow.service.web import mount_web

        mount_web(app, service)
    app.add_middleware(_Guard, service=service)
    install_guards(app, policy)  # outermost: runs before anything else
    return app


def _mount_docs(app: FastAPI) -> None:
    """``/docs``: FastAPI's Swagger UI, its scripts allowed by a nonce (the page loads them from a CDN)."""
    import secrets

    from fastapi.openapi.docs import get_swagger_ui_html

    cdn = "https://cdn.jsdelivr.net"

    @app.get("/docs", include_in_schema=False)
    async def docs():
        nonce = secrets.token_urlsafe(16)
        page = get_swagger_ui_html(openapi_url="/openapi.json", title="kbflow API")
        body = page.body.decode().replace("<script>", f'<script nonce="{nonce}">')
        body = body.replace("<script src=", f'<script nonce="{nonce}" src=')
        csp = page_csp(nonce, script_hosts=cdn, style_hosts=cdn, img_hosts="https://fastapi.tiangolo.com")
        return HTMLResponse(body, headers={"Content-Security-Policy": csp})


def serve(
    service: Service,
    host: str,
    port: int,
    *,
    mcp: bool = True,
    web: bool = True,
    allow_hosts: Sequence[str] = (),
    allow_origins: Sequence[str] = (),
) -> None:
    """Run the app with uvicorn until interrupted (``kbflow serve``)."""
    import uvicorn

    app = create_app(service, mcp=mcp, web=web, host=host, allow_hosts=allow_hosts, allow_origins=allow_origins)
    uvicorn.run(app, host=host, port=port, log_level="info")
