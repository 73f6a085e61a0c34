"""What keeps the user's other browser tabs out of ``kbflow serve``.

A local server is reachable by every page the user's browser opens. Three
attacks follow, and this module stops each before any handler runs
(:class:`BrowserGuard`, the outermost middleware of the app):

* **DNS rebinding**: a page whose name is re-pointed at 127.0.0.1 reads the
  answers back. Every request must name one of the server's own hosts in its
  ``Host`` header (:meth:`Policy.host_allowed`), else ``421``.
* **Cross-site writes**: a page of another site posts a form or a ``fetch`` to
  the server. A state-changing request (POST, PUT, PATCH, DELETE) whose
  ``Origin`` is not the server's own (or a configured one), or that the
  browser marks ``Sec-Fetch-Site: cross-site``, gets ``403``; the JSON API
  takes only ``application/json`` bodies (``415``), so no "simple" request
  reaches it; the web page's forms carry a signed CSRF token bound to a cookie
  (:func:`csrf_token`, :func:`check_csrf`).
* **Cross-site reads and side effects**: a Fetch Metadata resource-isolation
  policy (:meth:`Policy.isolation`). A request the browser marks
  ``Sec-Fetch-Site: cross-site`` or ``same-site`` (another port of the same
  host is the same site) that is not a top-level navigation (``<img
  src=.../v1/search?q=...>``, a ``fetch``, a frame) gets ``403`` on every
  route, GET included, before any handler runs or any log row is written; a
  configured ``--allow-origin`` that names itself in ``Origin`` passes.
* **Framing and sniffing**: every response carries a Content-Security-Policy
  (no script; ``frame-ancestors 'none'``), ``X-Frame-Options: DENY``,
  ``X-Content-Type-Options: nosniff`` and ``Referrer-Policy: no-referrer``.

Command-line clients send no ``Origin`` and no ``Sec-Fetch-*`` header, so they
pass as before (with their key where the lake has keys); so does the page's
own navigation (``same-origin``) and a link the user follows or a URL typed
(``none``, or a top-level ``navigate``).
"""

from __future__ import annotations

import secrets
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.cookies import SimpleCookie

__all__ = [
    "CSRF_COOKIE",
    "CSRF_FIELD",
    "LOOPBACK_NAMES",
    "BrowserGuard",
    "Policy",
    "check_csrf",
    "cookie_value",
    "install_guards",
    "csrf_token",
    "page_csp",
]

#: the names a loopback server answers to (with its port)
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
#: addresses that mean "every interface": they name no host of their own
_ANY = ("0.0.0.0", "::", "[::]", "")
#: the methods that change state
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: the cookie a browser's CSRF token is bound to, and the form field that carries the token
CSRF_COOKIE = "kbflow_csrf"
CSRF_FIELD = "csrf"
#: the policy of every HTML page: no script at all, styles inline, images from the server only
PAGE_CSP = (
    "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
#: headers every response carries unless its route set its own
HEADERS = (
    ("content-security-policy", PAGE_CSP),
    ("x-frame-options", "DENY"),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
)


def page_csp(nonce: str, *, script_hosts: str = "", style_hosts: str = "", img_hosts: str = "") -> str:
    """A Content-Security-Policy for a page that needs scripts: only those carrying ``nonce`` (and from
    ``script_hosts``) run; still no framing."""
    return (
        f"default-src 'none'; script-src 'nonce-{nonce}' {script_hosts}; style-src 'unsafe-inline' {style_hosts}; "
        f"img-src 'self' data: {img_hosts}; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; "
        "base-uri 'none'"
    )


def _split(authority: str, default_port: int | None) -> tuple[str, int | None] | None:
    """``("name", port)`` of a ``Host`` value or an origin's authority; ``None`` when it is malformed."""
    authority = authority.strip().lower()
    if not authority or any(c in authority for c in "/@ \\"):
        return None
    if authority.startswith("["):
        end = authority.find("]")
        if end < 0:
            return None
        name, rest = authority[: end + 1], authority[end + 1 :]
    else:
        name, _, port_text = authority.partition(":")
        rest = f":{port_text}" if _ else ""
    if not rest:
        return name, default_port
    if not rest.startswith(":") or not rest[1:].isdigit():
        return None
    return name, int(rest[1:])


@dataclass(frozen=True)
class Policy:
    """Which hosts and origins a server answers to.

    ``bind``: the address the server listens on; a loopback or any-interface
    bind answers to :data:`LOOPBACK_NAMES` on its own port, a specific address
    also to that address. ``allow_hosts``: more names (``name`` for any port,
    ``name:port`` for one; ``*`` turns the Host check off, for a server behind
    a proxy that checks it). ``allow_origins``: origins of other sites that may
    write (``https://app.example.com``); CORS is on for them only.
    """

    bind: str = "127.0.0.1"
    allow_hosts: tuple[str, ...] = ()
    allow_origins: tuple[str, ...] = ()
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)

    @classmethod
    def of(cls, bind: str, allow_hosts: Iterable[str] = (), allow_origins: Iterable[str] = ()) -> Policy:
        """A policy with the names and origins normalized (lower case, no trailing slash)."""
        return cls(
            bind=bind,
            allow_hosts=tuple(h.strip().lower() for h in allow_hosts if h.strip()),
            allow_origins=tuple(o.strip().lower().rstrip("/") for o in allow_origins if o.strip()),
        )

    def own_names(self) -> tuple[str, ...]:
        """The names this server answers to on its own port."""
        bind = self.bind.lower()
        if bind in _ANY or bind in ("127.0.0.1", "localhost", "::1", "[::1]"):
            return LOOPBACK_NAMES
        return (*LOOPBACK_NAMES, f"[{bind}]" if ":" in bind and not bind.startswith("[") else bind)

    def host_allowed(self, host: str | None, port: int | None, default_port: int | None = None) -> bool:
        """Whether ``host`` (a ``Host`` header; ``None`` when absent) names this server, listening on ``port``."""
        if "*" in self.allow_hosts:
            return True
        parsed = _split(host or "", default_port)
        if parsed is None:
            return False
        name, asked = parsed
        if name in self.own_names() and (asked == port or port is None):
            return True
        for allowed in self.allow_hosts:
            pair = _split(allowed, None)
            if pair is not None and pair[0] == name and pair[1] in (None, asked):
                return True
        return False

    def origin_allowed(self, origin: str, port: int | None) -> bool:
        """Whether a browser's ``Origin`` is this server (or a configured origin)."""
        origin = origin.strip().lower().rstrip("/")
        if origin in self.allow_origins:
            return True
        parts = urllib.parse.urlsplit(origin)
        if parts.scheme not in ("http", "https") or parts.path or parts.query:
            return False
        default = 443 if parts.scheme == "https" else 80
        return "*" not in self.allow_hosts and self.host_allowed(parts.netloc, port, default)

    def mcp_settings(self):
        """The MCP SDK's own Host and Origin check, kept in step with this policy (a second line of defence)."""
        from mcp.server.transport_security import TransportSecuritySettings

        if "*" in self.allow_hosts:
            return TransportSecuritySettings(enable_dns_rebinding_protection=False)
        hosts = [f"{n}:*" for n in self.own_names()]
        for allowed in self.allow_hosts:
            pair = _split(allowed, None)
            has_port = pair is not None and pair[1] is not None
            # a name alone: any port, and a Host header without one (a proxy on 80 or 443)
            hosts += [allowed] if has_port else [f"{allowed}:*", allowed]
        origins = [f"{scheme}://{h}" for scheme in ("http", "https") for h in hosts]
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=[*origins, *self.allow_origins]
        )

    def isolation(self, headers, method: str) -> str | None:
        """Why the Fetch Metadata resource-isolation policy refuses a request (``None``: it passes).

        Passes: no ``Sec-Fetch-Site`` (not a browser, or an old one),
        ``same-origin``, ``none`` (typed or bookmarked), a top-level navigation
        (``Sec-Fetch-Mode: navigate`` to a document, by GET or HEAD), and a
        configured origin that names itself in ``Origin``. Everything else the
        browser marks ``cross-site`` or ``same-site`` is refused.
        """
        site = (headers.get("sec-fetch-site") or "").strip().lower()
        if site in ("", "same-origin", "none"):
            return None
        origin = headers.get("origin")
        if origin is not None and origin.strip().lower().rstrip("/") in self.allow_origins:
            return None
        navigation = headers.get("sec-fetch-mode") == "navigate" and headers.get("sec-fetch-dest") in (None, "document")
        if navigation and method in ("GET", "HEAD"):
            return None
        return (
            f"the browser says this request comes from another site (Sec-Fetch-Site: {site}) and is not a "
            "top-level navigation; start the server with --allow-origin for a site that may call it"
        )

    def cross_site(self, headers, port: int | None) -> str | None:
        """Why a state-changing request comes from another site (``None``: it does not)."""
        origin = headers.get("origin")
        if origin == "null" and headers.get("sec-fetch-site") == "same-origin":
            return None  # this server's own forms: under Referrer-Policy no-referrer a browser sends Origin null
        if origin is not None:
            if not self.origin_allowed(origin, port):
                return f"Origin {origin!r} is not this server; start it with --allow-origin to allow that site"
            return None
        if headers.get("sec-fetch-site") == "cross-site":
            return "the browser says this request comes from another site (Sec-Fetch-Site: cross-site)"
        return None


def cookie_value(headers, name: str) -> str | None:
    """The value of cookie ``name`` a request carries (``None``: none, or a header that does not parse)."""
    raw = headers.get("cookie")
    if not raw:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(raw)
    except Exception:
        return None
    return jar[name].value if name in jar else None


def _serializer(policy: Policy):
    from itsdangerous import URLSafeSerializer

    return URLSafeSerializer(policy.secret, salt="kbflow-csrf")


def csrf_token(policy: Policy, scope) -> str:
    """The CSRF token a page's forms carry: the browser's cookie value, signed with the server's secret."""
    return _serializer(policy).dumps(scope.get("state", {}).get(CSRF_COOKIE, ""))


def check_csrf(policy: Policy, scope, token: str | None) -> str | None:
    """Why a form's ``token`` does not match the browser's cookie (``None``: it does)."""
    from itsdangerous import BadSignature

    cookie = scope.get("state", {}).get(CSRF_COOKIE)
    if not token:
        return "the form carries no CSRF token; reload the page and submit it again"
    try:
        bound = _serializer(policy).loads(token)
    except BadSignature:
        return "the form's CSRF token is not this server's (it restarted, or the form came from elsewhere); reload"
    if not cookie or not secrets.compare_digest(str(bound), cookie):
        return "the form's CSRF token does not match this browser's cookie; reload the page and submit it again"
    return None


def _is_api(path: str) -> bool:
    return path.startswith(("/v1/", "/mcp"))


def _json_body(headers) -> bool:
    """Whether a write to the JSON API is JSON, or has no body at all."""
    media = (headers.get("content-type") or "").split(";")[0].strip().lower()
    if media:
        return media == "application/json" or media.endswith("+json")
    length = headers.get("content-length")
    return headers.get("transfer-encoding") is None and (length is None or length == "0")


class BrowserGuard:
    """ASGI middleware: the Host check, the Fetch Metadata policy, the cross-site write check, the CSRF cookie and
    the headers."""

    def __init__(self, app, policy: Policy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        from starlette.datastructures import Headers, MutableHeaders

        headers = Headers(scope=scope)
        port = (scope.get("server") or (None, None))[1]
        default = 443 if scope.get("scheme") in ("https", "wss") else 80
        host = headers.get("host")
        if not self.policy.host_allowed(host, port, default):
            why = f"Host {host!r} is not a name of this server; start it with --allow-host NAME"
            return await _refuse(scope, receive, send, 421, "misdirected", why)
        path, method = scope.get("path", ""), scope.get("method", "GET")
        cross = self.policy.cross_site(headers, port) if method in WRITES else None
        cross = cross or self.policy.isolation(headers, method)
        if cross:
            return await _refuse(scope, receive, send, 403, "cross_site", cross)
        if method in WRITES and _is_api(path) and not _json_body(headers):
            why = "the API takes application/json bodies only"
            return await _refuse(scope, receive, send, 415, "unsupported_media_type", why)
        cookie = cookie_value(headers, CSRF_COOKIE)
        fresh = None if cookie or _is_api(path) else secrets.token_urlsafe(24)
        scope.setdefault("state", {})[CSRF_COOKIE] = cookie or fresh

        async def send_with_headers(message) -> None:
            if message["type"] == "http.response.start":
                out = MutableHeaders(scope=message)
                for name, value in HEADERS:
                    if name not in out:
                        out[name] = value
                if fresh:
                    out.append("set-cookie", f"{CSRF_COOKIE}={fresh}; Path=/; HttpOnly; SameSite=Strict")
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _refuse(scope, receive, send, status: int, code: str, why: str) -> None:
    """One line: ``{"error": {"code", "message"}}`` on the API, plain text elsewhere; before any handler."""
    from starlette.responses import JSONResponse, PlainTextResponse, Response

    if scope["type"] == "websocket":
        return await send({"type": "websocket.close", "code": 1008})
    response: Response
    if _is_api(scope.get("path", "")):
        response = JSONResponse({"error": {"code": code, "message": why}}, status, headers=dict(HEADERS))
    else:
        response = PlainTextResponse(f"{status} {why}\n", status, headers=dict(HEADERS))
    await response(scope, receive, send)


def install_guards(app, policy: Policy) -> None:
    """Add CORS (only for the policy's ``allow_origins``) and :class:`BrowserGuard` to ``app``, the guard
    outermost so that it runs before any other middleware and every handler."""
    if policy.allow_origins:
        from starlette.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(policy.allow_origins),
            allow_methods=["GET", "POST", "PUT", "DELETE"],
            allow_headers=["Authorization", "X-API-Key", "Content-Type", "Mcp-Session-Id"],
        )
    app.add_middleware(BrowserGuard, policy=policy)
