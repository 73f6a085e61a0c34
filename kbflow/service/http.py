"""What the HTTP layer of ``kbflow serve`` shares: the REST API, the web page and the MCP endpoint.

- how a request says who calls: :func:`token_of` (a bearer token, ``X-API-Key``
  or the web page's sign-in :data:`COOKIE`), read once by the app's guard and
  handed to every route by the :func:`caller` dependency;
- the service every route calls (:func:`service_of`, kept on the app);
- how kbflow's errors answer: one table (:data:`ERRORS`), :func:`status_of`,
  and the ``{"error": {"code", "message"}}`` body (:func:`error_body`);
- the limits on what a request may carry (:data:`MAX_BODY`, :data:`MAX_QUERY_STRING`).
"""

# no `from __future__ import annotations`: FastAPI reads the dependencies' annotations at run time
import logging
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

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
    SourceConflictError,
    SourceError,
    SourceNotFoundError,
    StaleCitationError,
    UnsafeFileError,
    VersionNotFoundError,
)
from kbflow.service.claims import ClaimService
from kbflow.service.core import Service
from kbflow.service.security import cookie_value
from kbflow.service.sources import SourceService
from kbflow.usage.keys import ApiKey

__all__ = [
    "COOKIE",
    "ERRORS",
    "MAX_BODY",
    "MAX_JSON_DEPTH",
    "MAX_QUERY_STRING",
    "caller",
    "claims_of",
    "error_body",
    "install_error_handlers",
    "json_too_deep",
    "service_of",
    "sources_of",
    "status_of",
    "token_of",
]

log = logging.getLogger("kbflow.service")

#: the cookie a signed-in browser carries its API key in
COOKIE = "kbflow_key"
MAX_BODY = 256 * 1024
MAX_QUERY_STRING = 8 * 1024
#: the deepest a JSON body may nest its arrays and objects (no request the API documents comes near it)
MAX_JSON_DEPTH = 32
_JSON_TOKENS = re.compile(rb'\\.|["\[\]{}]', re.DOTALL)

#: kbflow error class -> (HTTP status, error code); the first match wins (subclasses first)
ERRORS: list[tuple[type[Exception], int, str]] = [
    (AccessDeniedError, 403, "forbidden"),
    (AuthError, 401, "unauthorized"),
    (SourceNotFoundError, 404, "source_not_found"),
    (VersionNotFoundError, 404, "version_not_found"),
    (NotFoundError, 404, "not_found"),
    (SourceConflictError, 409, "conflict"),
    (StaleCitationError, 409, "stale_citation"),
    (UnsafeFileError, 409, "unsafe_file"),
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


def json_too_deep(data: bytes, limit: int) -> bool:
    """Whether the JSON text ``data`` nests arrays and objects more than ``limit`` deep (strings skipped; the text
    need not be valid JSON)."""
    depth, in_string = 0, False
    for token in _JSON_TOKENS.finditer(data):
        mark = token.group()
        if in_string:
            in_string = mark != b'"'
        elif mark == b'"':
            in_string = True
        elif mark in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return True
        elif mark in (b"]", b"}"):
            depth -= 1
    return False


def error_body(code: str, message: str, **details: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **details}}


def status_of(exc: Exception) -> tuple[int, str]:
    """The HTTP status and error code of an error (:data:`ERRORS`; anything else is a 500)."""
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
    return cookie_value(headers, COOKIE)


def caller(request: Request) -> ApiKey | None:
    """Dependency: the caller's key as the app's guard checked it (``None`` on a lake without keys)."""
    return request.scope.get("state", {}).get("kbflow_key")


def service_of(request: Request) -> Service:
    """Dependency: the :class:`~kbflow.service.core.Service` the app serves (the search and insights routers)."""
    return request.app.state.service


def sources_of(request: Request) -> SourceService:
    """Dependency of the sources router: the service's source registry."""
    return request.app.state.service.sources


def claims_of(request: Request) -> ClaimService:
    """Dependency of the claims router: the service's claims store."""
    return request.app.state.service.claims


def install_error_handlers(app: FastAPI) -> None:
    """Answer kbflow's errors, bad requests, unknown routes and anything unexpected as ``{"error": ...}``."""

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
