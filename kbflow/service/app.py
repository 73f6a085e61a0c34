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
import contextlib
import logging
import urllib.parse
from collections.abc import Sequence

from fastapi import FastAPI
from fastapi.responses import HTMLResponse

from kbflow import __version__
from kbflow.errors import AuthError
from kbflow.service.core import Service
from kbflow.service.http import (
    ERRORS,
    MAX_BODY,
    MAX_QUERY_STRING,
    error_body,
    install_error_handlers,
    status_of,
    token_of,
)
from kbflow.service.security import Policy, install_guards, page_csp

__all__ = ["ERRORS", "MAX_BODY", "MAX_QUERY_STRING", "create_app", "error_body", "status_of", "token_of"]

log = logging.getLogger("kbflow.service")

_OPEN_PATHS = ("/v1/health", "/docs", "/openapi.json", "/docs/oauth2-redirect", "/login")


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

    app.state.service = service
    install_error_handlers(app)
    from kbflow.service.api import ROUTERS

    for router in ROUTERS:
        app.include_router(router)
    if web:
        from kbflow.service.web import mount_web

        mount_web(app)
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
