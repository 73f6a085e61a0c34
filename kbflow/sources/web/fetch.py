"""Fetching a web page by URL without letting it reach what it should not (server-side request forgery).

``kbflow add https://… --type web`` makes kbflow fetch a page on the ingesting
machine, which may sit next to services that must not be reached from a URL
someone typed: the cloud's metadata endpoint (169.254.169.254), an admin port
on localhost, the office network. So every fetch:

- accepts only ``http`` and ``https`` URLs, without credentials in them;
- resolves the host itself and refuses it when any address it resolves to is
  not a public one: loopback, private, shared (100.64/10), link-local,
  multicast, reserved, unspecified, in IPv4 or IPv6, including IPv4 carried
  inside IPv6 (mapped ``::ffff:a.b.c.d``, compatible ``::a.b.c.d``, 6to4,
  Teredo, NAT64);
- connects to the address it checked (so a DNS answer that changes between
  the check and the connection cannot redirect it), sending the original host
  name for virtual hosting and TLS verification;
- follows redirects itself, at most :data:`MAX_REDIRECTS`, checking each
  hop as the first;
- stops reading past a size limit, and gives up past a time limit;
- sends ``If-None-Match`` / ``If-Modified-Since`` when it has fetched the
  page before, so an unchanged page costs a ``304``.

Private hosts and networks that should be reached (a team's intranet
documentation) are named, never guessed (:class:`PrivateHosts`): by a web
source's ``allow_private`` option (``kbflow add URL --type web --allow-private
docs.internal``; over HTTP only a global editor may set it), or for every
source on the machine by ``$KBFLOW_FETCH_ALLOW_HOSTS`` (entries separated by
commas or spaces: ``docs.internal``, ``127.0.0.1:8123``, ``10.20.0.0/16``).
Only what is named passes; the guard stays on for every other address.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from kbflow.config.env import fetch_allow_hosts
from kbflow.errors import ConfigError, SourceError

__all__ = ["MAX_REDIRECTS", "Fetched", "PrivateHosts", "allowed_private", "check_url", "fetch"]

MAX_REDIRECTS = 5
#: seconds for the whole fetch, redirects included
TIMEOUT = 30.0
USER_AGENT = "kbflow (+https://github.com/kbflow)"
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_COMPAT = ipaddress.ip_network("::/96")
HTML_TYPES = ("text/html", "application/xhtml+xml")


@dataclass
class Fetched:
    """One fetch: the final URL, the status (200, or 304 for unchanged), the body and its validators."""

    url: str
    status: int
    body: bytes = b""
    etag: str | None = None
    last_modified: str | None = None
    charset: str | None = None
    redirects: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class PrivateHosts:
    """The private hosts and networks a fetch may reach past the guard (a team's intranet documentation).

    Entries, as a user writes them: a host name or address (any port),
    ``host:port`` (``[::1]:8080`` for IPv6), or a network (``10.20.0.0/16``:
    any address in it, any port). Everything not named stays refused.
    """

    names: frozenset[tuple[str, int | None]] = frozenset()
    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()

    @classmethod
    def of(cls, entries: Iterable[str]) -> PrivateHosts:
        """Parsed entries; a :class:`ConfigError` naming one that is neither a host, ``host:port`` nor a network."""
        names: set[tuple[str, int | None]] = set()
        networks = []
        for raw in entries:
            entry = str(raw).strip().lower()
            if not entry:
                continue
            if "/" in entry:
                try:
                    networks.append(ipaddress.ip_network(entry, strict=False))
                except ValueError:
                    raise ConfigError(f"{raw!r} is not a network (write it as 10.20.0.0/16)") from None
                continue
            host, port = _host_port(entry)
            if not host or any(c in host for c in " @?#\\"):
                raise ConfigError(f"{raw!r} is not a host, host:port or network")
            names.add((host, port))
        return cls(frozenset(names), tuple(networks))

    def __bool__(self) -> bool:
        return bool(self.names or self.networks)

    def allows(self, host: str, port: int, addresses: Sequence[str]) -> bool:
        """Whether ``host`` on ``port``, resolving to ``addresses``, is named here (by name, or every address
        that is not public lies in a named network)."""
        if (host, port) in self.names or (host, None) in self.names:
            return True
        if not self.networks:
            return False
        for address in addresses:
            ip = ipaddress.ip_address(address.split("%", 1)[0])
            if blocked(address) and not any(ip in net for net in self.networks if net.version == ip.version):
                return False
        return True


def _host_port(entry: str) -> tuple[str, int | None]:
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif entry.count(":") == 1:
        host, _, port = entry.partition(":")
    else:
        host, port = entry, ""
    if port and not port.isdigit():
        raise ConfigError(f"{entry!r}: the port is not a number")
    return host, int(port) if port else None


def allowed_private(extra: Iterable[str] = ()) -> PrivateHosts:
    """The machine's allow list (``$KBFLOW_FETCH_ALLOW_HOSTS``, :func:`kbflow.config.env.fetch_allow_hosts`) with a
    source's own ``extra`` entries."""
    return PrivateHosts.of([*fetch_allow_hosts(), *extra])


def _embedded_v4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """IPv4 addresses an IPv6 address carries (mapped, compatible, 6to4, Teredo, NAT64)."""
    out = []
    if ip.ipv4_mapped:
        out.append(ip.ipv4_mapped)
    if ip.sixtofour:
        out.append(ip.sixtofour)
    if ip.teredo:
        out.extend(ip.teredo)
    if ip in _NAT64 or (ip in _COMPAT and int(ip) > 1):
        out.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return out


def blocked(address: str) -> str | None:
    """Why ``address`` (an IP) must not be fetched from, else ``None``."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    candidates: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        candidates += _embedded_v4(ip)
    for c in candidates:
        for flag in ("is_loopback", "is_private", "is_link_local", "is_multicast", "is_reserved", "is_unspecified"):
            if getattr(c, flag):
                return f"{address} is a {flag[3:].replace('_', '-')} address"
        if not c.is_global:
            return f"{address} is not a public address"
    return None


def check_url(url: str) -> tuple[str, str, int]:
    """``(scheme, host, port)`` of a URL kbflow may fetch, or a :class:`SourceError` saying why not."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise SourceError(f"{url}: only http and https URLs are fetched, not {scheme or 'a relative path'}")
    if parts.username or parts.password:
        raise SourceError(f"{url}: URLs with credentials in them are not fetched")
    host = (parts.hostname or "").lower()
    if not host:
        raise SourceError(f"{url}: no host in the URL")
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        raise SourceError(f"{url}: the port is not a number") from None
    return scheme, host, port


def _addresses(url: str, host: str, port: int, private: PrivateHosts | None = None) -> list[str]:
    """The addresses to connect to: every address the host resolves to, each checked (any refusal refuses),
    unless the host or its addresses are in ``private`` (default: the machine's allow list)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise SourceError(f"{url}: cannot resolve {host} ({exc.strerror})") from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if (private if private is not None else allowed_private()).allows(host, port, addresses):
        return addresses
    for address in addresses:
        why = blocked(address)
        if why:
            raise SourceError(
                f"{url}: refused: {host} resolves to {why} (server-side request forgery guard); a private host "
                "a source should reach is named with --allow-private, or $KBFLOW_FETCH_ALLOW_HOSTS"
            )
    return addresses


class _PinnedHTTP(http.client.HTTPConnection):
    """An HTTP connection to the address that was checked, not to whatever the name resolves to now."""

    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        self._tls = ssl.create_default_context()
        super().__init__(host, port, timeout=timeout, context=self._tls)
        self._address = address

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._tls.wrap_socket(sock, server_hostname=self.host)


def fetch(
    url: str,
    *,
    max_bytes: int | None = 16 << 20,
    etag: str | None = None,
    last_modified: str | None = None,
    timeout: float = TIMEOUT,
    accept: tuple[str, ...] = HTML_TYPES,
    private: PrivateHosts | None = None,
) -> Fetched:
    """GET ``url`` behind the guard (see the module docs); a :class:`SourceError` naming the URL on refusal.

    ``accept``: the content types taken (HTML pages by default; a crawl reads ``robots.txt`` and sitemaps too).
    ``private``: the private hosts and networks it may reach (default: ``$KBFLOW_FETCH_ALLOW_HOSTS`` alone).
    """
    private = private if private is not None else allowed_private()
    deadline = time.monotonic() + timeout
    hops: list[str] = []
    current = url
    while True:
        scheme, host, port = check_url(current)
        addresses = _addresses(current, host, port, private)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise SourceError(f"{url}: no answer within {timeout:g}s")
        cls = _PinnedHTTPS if scheme == "https" else _PinnedHTTP
        conn = cls(host, port, addresses[0], timeout=min(remaining, 10.0))
        parts = urlsplit(current)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        headers = {"User-Agent": USER_AGENT, "Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1"}
        if etag:
            headers["If-None-Match"] = etag
        if last_modified:
            headers["If-Modified-Since"] = last_modified
        try:
            conn.request("GET", target, headers=headers)
            response = conn.getresponse()
            if response.status in (301, 302, 303, 307, 308):
                location = response.getheader("Location")
                response.read(65536)
                if not location:
                    raise SourceError(f"{current}: a redirect ({response.status}) without a Location")
                hops.append(current)
                if len(hops) > MAX_REDIRECTS:
                    raise SourceError(f"{url}: more than {MAX_REDIRECTS} redirects")
                current = urljoin(current, location)
                continue
            if response.status == 304:
                return Fetched(current, 304, etag=etag, last_modified=last_modified, redirects=hops)
            if response.status != 200:
                raise SourceError(f"{current}: the server answered {response.status} {response.reason}")
            kind = (response.getheader("Content-Type") or "text/html").split(";")[0].strip().lower()
            if kind not in accept:
                if accept is HTML_TYPES:
                    raise SourceError(f"{current}: not an HTML page ({kind}); save it and add the file instead")
                raise SourceError(f"{current}: unexpected content type {kind}")
            body = _read(response, current, max_bytes, deadline, timeout)
            return Fetched(
                current,
                200,
                body,
                etag=response.getheader("ETag"),
                last_modified=response.getheader("Last-Modified"),
                charset=response.msg.get_content_charset(),
                redirects=hops,
            )
        except TimeoutError:
            raise SourceError(f"{current}: no answer within the time limit ({timeout:g}s)") from None
        except (OSError, http.client.HTTPException) as exc:
            if isinstance(exc, SourceError):
                raise
            raise SourceError(f"{current}: cannot fetch ({type(exc).__name__}: {exc})") from None
        finally:
            conn.close()


def _read(
    response: http.client.HTTPResponse, url: str, max_bytes: int | None, deadline: float, timeout: float
) -> bytes:
    length = response.getheader("Content-Length")
    if max_bytes is not None and length and length.isdigit() and int(length) > max_bytes:
        raise SourceError(f"{url}: the page is {int(length)} bytes, over the {max_bytes}-byte limit (--max-file-mb)")
    chunks: list[bytes] = []
    size = 0
    while True:
        if time.monotonic() > deadline:
            raise SourceError(f"{url}: no complete answer within {timeout:g}s")
        chunk = response.read(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if max_bytes is not None and size > max_bytes:
            raise SourceError(f"{url}: the page is over the {max_bytes}-byte limit (--max-file-mb); stopped reading")
        chunks.append(chunk)
