"""The app of ``kbflow serve``: the REST API's routers, the web page and the MCP tools at ``/mcp``, assembled.

The routes live in :mod:`kbflow.service.api` (one router per resource) and
:mod:`kbflow.service.web`; what they share (the caller, the service, the
error table) in :mod:`kbflow.service.http`. This module adds what wraps
them: the guard that checks size limits and the API key once per request,
the browser protections (:mod:`kbflow.service.security`), the error
handlers and ``/docs``. Requests carry an API key as ``Authorization:
Bearer kbf_...`` (or ``X-API-Key``) when the lake has keys; bodies are
limited to :data:`~kbflow.service.http.MAX_BODY` bytes and query strings to
:data:`~kbflow.service.http.MAX_QUERY_STRING`. The OpenAPI schema is at
``/openapi.json`` and browsable at ``/docs``.
"""

# no `from __future__ import annotations`: FastAPI reads the route signatures' annotations at run time
import asyncio
import contextlib
import json
import logging
import os
import urllib.parse
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.responses import HTMLResponse

from kbflow import usage
from kbflow.errors import AuthError
from kbflow.service.admission import RETRY_AFTER, Admission, default_limit, searches
from kbflow.service.core import Service
from kbflow.service.http import (
    ERRORS,
    MAX_BODY,
    MAX_JSON_DEPTH,
    MAX_QUERY_STRING,
    error_body,
    install_error_handlers,
    json_too_deep,
    status_of,
    token_of,
)
from kbflow.service.security import Policy, install_guards, page_csp
from kbflow.usage.keys import ApiKey

__all__ = [
    "ERRORS",
    "MAX_BODY",
    "MAX_QUERY_STRING",
    "ServeOptions",
    "app_from_environment",
    "create_app",
    "error_body",
    "serve",
    "status_of",
    "token_of",
]

log = logging.getLogger("kbflow.service")

_OPEN_PATHS = ("/v1/health", "/docs", "/openapi.json", "/docs/oauth2-redirect", "/login")


def _is_page(path: str) -> bool:
    """A web page (answered with a sign-in redirect), not the API or MCP (answered with JSON)."""
    return not (path.startswith("/v1/") or path.startswith("/mcp") or path in _OPEN_PATHS)


_BUSY = "the server is running as many searches as it can; try again in a moment"


class _Guard:
    """ASGI middleware, once per request: the size limits (the body read whole first, so a cap answers 413 however
    the body arrives), the API key (kept in ``scope["state"]``), then a slot for a search (:mod:`.admission`)."""

    def __init__(self, app, service: Service, admission: Admission) -> None:
        self.app = app
        self.service = service
        self.admission = admission

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        from starlette.datastructures import Headers

        headers = Headers(scope=scope)
        search = searches(scope["method"], scope["path"], scope.get("query_string") or b"")
        if search and self.admission.full:  # refused before its body is read or its key checked
            return await _refusal(503, "overloaded", _BUSY, {"Retry-After": str(RETRY_AFTER)})(scope, receive, send)
        refusal, receive = await _limits(scope, headers, receive)
        refusal = refusal or await self._identify(scope, headers)
        if refusal is not None:
            return await refusal(scope, receive, send)
        if not search:
            return await self.app(scope, receive, send)
        if not await self.admission.enter():
            return await _refusal(503, "overloaded", _BUSY, {"Retry-After": str(RETRY_AFTER)})(scope, receive, send)
        try:
            await self.app(scope, receive, send)
        finally:
            await self.admission.leave()

    async def _identify(self, scope, headers):
        """Keep the caller's key in ``scope["state"]``; the answer to a request that needs one and has none
        (``None``: go on). Health without a key is answered, naming nothing."""
        path, state = scope["path"], scope.setdefault("state", {})
        try:
            state["kbflow_key"] = await _caller_of(self.service, headers)
        except AuthError as exc:
            if path == "/v1/health":
                state["kbflow_anonymous"] = True  # alive, and nothing more
            elif path not in _OPEN_PATHS:
                if _is_page(path):
                    from starlette.responses import RedirectResponse

                    return RedirectResponse("/login?" + urllib.parse.urlencode({"next": path, "error": str(exc)}), 303)
                return _refusal(401, "unauthorized", str(exc))
        return None


def _refusal(status: int, code: str, message: str, headers: dict[str, str] | None = None):
    from starlette.responses import JSONResponse

    return JSONResponse(error_body(code, message), status_code=status, headers=headers)


async def _limits(scope, headers, receive):
    """The size limits: ``(a 413 or 414 answer or None, the receive that hands the app the body read)``. The body
    is read whole first, so the cap holds however it arrives (chunked, or without a length)."""
    if len(scope.get("query_string") or b"") > MAX_QUERY_STRING:
        return _refusal(414, "too_large", f"the query string is over {MAX_QUERY_STRING} bytes"), receive
    length = headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
        return _refusal(413, "too_large", f"the request body is over {MAX_BODY} bytes"), receive
    if headers.get("transfer-encoding") is None and (length or "0") == "0":
        return None, receive
    body = await _read_body(receive)
    if body is None:
        return _refusal(413, "too_large", f"the request body is over {MAX_BODY} bytes"), receive
    if _is_json(headers) and json_too_deep(body, MAX_JSON_DEPTH):
        return _refusal(413, "too_large", f"the JSON body is nested deeper than {MAX_JSON_DEPTH} levels"), receive
    return None, _replay(body, receive)


async def _caller_of(service: Service, headers) -> ApiKey | None:
    """The key a request carries: checked here while the key ring is fresh, else off the event loop (it re-reads
    the lake)."""
    if service.keys.fresh:
        return service.principal(token_of(headers))
    import anyio

    return await anyio.to_thread.run_sync(service.principal, token_of(headers))


def _is_json(headers) -> bool:
    media = (headers.get("content-type") or "").split(";")[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


async def _read_body(receive) -> bytes | None:
    """The whole request body (``None`` once it passes :data:`MAX_BODY`: the rest is not read)."""
    parts, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break  # the client went away: hand on what came
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            return None
        parts.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(parts)


def _replay(body: bytes, receive):
    """A ``receive`` that hands the app the body read already, then whatever the client sends next."""
    sent = False

    async def replayed():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def create_app(
    service: Service,
    *,
    mcp: bool = True,
    web: bool = True,
    host: str = "127.0.0.1",
    allow_hosts: Sequence[str] = (),
    allow_origins: Sequence[str] = (),
    admission: Admission | None = None,
):
    """The FastAPI app of ``kbflow serve`` over ``service`` (``mcp``: mount the MCP tools at ``/mcp``; ``web``:
    the web page at ``/``, :mod:`kbflow.service.web`).

    ``host`` is the address the server binds; it answers only to its own names
    and ``allow_hosts``, and takes writes from browsers only of its own origin and
    ``allow_origins`` (:mod:`kbflow.service.security`). ``admission`` bounds the
    searches run at once (default: one per core, twice as many waiting; :mod:`.admission`).

    While it runs, the app drops log rows older than the settings' ``log_days``
    (at start, then hourly); when it stops (SIGTERM, SIGINT) it writes the log
    rows still buffered before the process ends."""
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
        pruner = asyncio.create_task(_prune_logs(service))
        try:
            if mcp_server is None:
                yield
            else:
                async with mcp_server.session_manager.run():
                    yield
        finally:
            pruner.cancel()
            import anyio

            await anyio.to_thread.run_sync(usage.flush)  # a graceful stop loses no log row

    app = FastAPI(
        title="kbflow",
        version=_version(),
        description='Cited hybrid search over a kbflow lake. Errors are `{"error": {"code", "message"}}`.',
        lifespan=lifespan,
        docs_url=None,
    )
    app.state.policy = policy
    _mount_docs(app)
    if mcp_server is not None:
        app.router.routes.extend(mcp_app.routes)

    app.state.service = service
    install_error_handlers(app)
    from kbflow.service.api import ROUTERS

    for router in ROUTERS:
        app.include_router(router)
    if web:
        from kbflow.service.web import mount_web

        mount_web(app)
    app.add_middleware(_Guard, service=service, admission=admission or Admission())
    install_guards(app, policy)  # outermost: runs before anything else
    return app


#: seconds between two passes that drop log rows past their retention
PRUNE_SECONDS = 3600.0


async def _prune_logs(service: Service) -> None:
    """Drop log rows past the retention now and every :data:`PRUNE_SECONDS` (a failure is logged, never raised)."""
    import anyio

    while True:
        try:
            await anyio.to_thread.run_sync(service.prune_logs)
        except Exception as exc:  # pruning never stops a server
            log.warning("could not drop old log rows: %s", exc)
        await asyncio.sleep(PRUNE_SECONDS)


def _version() -> str:
    """kbflow's version as installed (the OpenAPI schema states it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kbflow")
    except PackageNotFoundError:  # pragma: no cover - run from a checkout that was never installed
        return "0"


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


@dataclass(frozen=True)
class ServeOptions:
    """What ``kbflow serve`` runs: the service's and the app's options, as JSON for the worker processes."""

    lake: str
    settings: dict[str, Any]
    log_queries: bool = True
    source_roots: tuple[str, ...] = ()
    mcp: bool = True
    web: bool = True
    host: str = "127.0.0.1"
    allow_hosts: tuple[str, ...] = ()
    allow_origins: tuple[str, ...] = ()
    max_searches: int | None = None
    queue: int | None = None
    workers: int = 1

    def service(self) -> Service:
        return Service(
            self.lake,
            self.settings,
            log_queries=self.log_queries,
            source_roots=list(self.source_roots) or None,
        )

    def app(self, service: Service | None = None):
        limit = self.max_searches if self.max_searches is not None else default_limit(self.workers)
        return create_app(
            service or self.service(),
            mcp=self.mcp,
            web=self.web,
            host=self.host,
            allow_hosts=self.allow_hosts,
            allow_origins=self.allow_origins,
            admission=Admission(limit, self.queue),
        )


def app_from_environment():
    """The app of one worker process of ``kbflow serve --workers N`` (uvicorn imports it by name in each)."""
    from kbflow.config import serve_options

    data = serve_options()
    data = {name: tuple(v) if isinstance(v, list) else v for name, v in data.items()}
    return ServeOptions(**data).app()


def serve(options: ServeOptions, port: int, service: Service | None = None) -> None:
    """Run the app with uvicorn until interrupted (``kbflow serve``): in this process over ``service``, or in
    ``options.workers`` processes over one lake, each with its own service and model."""
    import uvicorn

    if options.workers <= 1:
        uvicorn.run(options.app(service), host=options.host, port=port, log_level="info")
        return
    from kbflow.config import SERVE_OPTIONS_ENV

    os.environ[SERVE_OPTIONS_ENV] = json.dumps(asdict(options))
    uvicorn.run(
        "kbflow.service.app:app_from_environment",
        factory=True,
        host=options.host,
        port=port,
        workers=options.workers,
        log_level="info",
    )
