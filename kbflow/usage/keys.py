"""API keys for ``kbflow serve``: a scope and a role each, stored hashed in the lake's ``api_keys`` table.

A key is ``kbf_<key id>_<secret>``; it is printed once, by
:func:`create_key` (``kbflow keys create``), and only the SHA-256 of its
secret is stored. A **reader** may search, read chunks and sources, resolve
citations and record citations within its scope; an **editor** may also add,
remove and refresh sources there. A key's scope bounds what it reaches: that
scope and every scope under it (:func:`kbflow.records.scopes.contains`); ``global``
reaches everything. Revoked keys stay in the table, marked, for the record.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from kbflow import schema as S
from kbflow._lazy import require
from kbflow.errors import AccessDeniedError, AuthError, ConfigError, NotFoundError
from kbflow.lake.lake import Lake
from kbflow.lake.sql import sql_str
from kbflow.records import scopes

__all__ = ["ROLES", "ApiKey", "KeyRing", "create_key", "list_keys", "revoke_key"]

ROLES = ("reader", "editor")
_PREFIX = "kbf_"


@dataclass(frozen=True)
class ApiKey:
    """One API key's record (never its secret)."""

    key_id: str
    scope: str
    role: str
    created_at: datetime
    name: str | None = None
    revoked_at: datetime | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def can_read(self, scope: str) -> bool:
        """Whether this key may search in ``scope`` (its own scope or one under it)."""
        return scopes.contains(self.scope, scope)

    def can_see(self, scope: str) -> bool:
        """Whether a chunk or source of ``scope`` is visible to this key: under its scope, or an ancestor's
        (what a search in the key's scope sees)."""
        return scopes.contains(self.scope, scope) or scope in scopes.ancestors(self.scope)

    def can_edit(self, scope: str) -> bool:
        """Whether this key may change what lies in ``scope``: an editor's key, and ``scope`` within its reach."""
        return self.role == "editor" and self.can_read(scope)

    def require(self, scope: str, *, write: bool = False) -> None:
        """Raise :class:`AccessDeniedError` unless this key may read (or, ``write``, edit) ``scope``."""
        if not self.can_read(scope):
            raise AccessDeniedError(f"key {self.key_id} (scope {self.scope}) cannot reach scope {scope!r}")
        if write and self.role != "editor":
            raise AccessDeniedError(f"key {self.key_id} is a reader; adding, removing or refreshing needs an editor")

    def to_dict(self) -> dict:
        return {
            "key_id": self.key_id,
            "name": self.name,
            "scope": self.scope,
            "role": self.role,
            "created_at": self.created_at.isoformat(),
            "revoked_at": self.revoked_at.isoformat() if self.revoked_at else None,
        }


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _from_row(row: dict) -> ApiKey:
    return ApiKey(
        key_id=row[S.KEY_ID],
        scope=row[S.SCOPE],
        role=row[S.ROLE],
        created_at=row[S.CREATED_AT],
        name=row[S.NAME],
        revoked_at=row[S.REVOKED_AT],
    )


def create_key(lake: Lake, scope: str, role: str = "reader", name: str | None = None) -> tuple[ApiKey, str]:
    """A new key for ``scope`` and ``role``: its record and the key itself (shown once, stored hashed)."""
    pa = require("pyarrow")
    if role not in ROLES:
        raise ConfigError(f"unknown role {role!r}; use one of {', '.join(ROLES)}")
    scope = scopes.normalize(scope)
    key_id, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
    key = ApiKey(key_id, scope, role, datetime.now(UTC), name=name)
    row = {
        S.KEY_ID: key_id,
        S.NAME: name,
        S.KEY_HASH: _digest(secret),
        S.SCOPE: scope,
        S.ROLE: role,
        S.CREATED_AT: key.created_at,
        S.REVOKED_AT: None,
    }
    lake.append(S.API_KEYS, pa.Table.from_pylist([row], schema=S.API_KEYS_SCHEMA).to_reader())
    return key, f"{_PREFIX}{key_id}_{secret}"


def _rows(lake: Lake) -> list[dict]:
    return lake.scan(S.API_KEYS).to_pylist() if lake.has_table(S.API_KEYS) else []


def list_keys(lake: Lake) -> list[ApiKey]:
    """Every key ever created (revoked ones too), oldest first."""
    return sorted((_from_row(r) for r in _rows(lake)), key=lambda k: k.created_at)


def revoke_key(lake: Lake, key_id: str) -> ApiKey:
    """Mark ``key_id`` revoked (it stops working within :data:`KeyRing.TTL` seconds in a running server)."""
    found = [k for k in list_keys(lake) if k.key_id == key_id]
    if not found:
        raise NotFoundError(f"no API key {key_id!r} in {lake.uri} (see `kbflow keys list`)")
    if found[0].revoked_at is not None:
        return found[0]
    lake.table(S.API_KEYS).update(where=f"{S.KEY_ID} = {sql_str(key_id)}", values={S.REVOKED_AT: datetime.now(UTC)})
    return next(k for k in list_keys(lake) if k.key_id == key_id)


class KeyRing:
    """The active keys of a lake, re-read at most every :attr:`TTL` seconds, for a server to check requests."""

    TTL = 5.0

    def __init__(self, lake: Lake) -> None:
        self.lake = lake
        self._lock = threading.Lock()
        self._read_at = float("-inf")
        self._keys: dict[str, tuple[str, ApiKey]] = {}

    @property
    def fresh(self) -> bool:
        """Whether the keys read last are recent enough to check a request without reading the lake."""
        return time.monotonic() - self._read_at <= self.TTL

    def _current(self) -> dict[str, tuple[str, ApiKey]]:
        if self.fresh:
            return self._keys  # no lock: the dict is replaced whole, never changed in place
        with self._lock:
            if not self.fresh:
                rows = _rows(self.lake)
                self._keys = {r[S.KEY_ID]: (r[S.KEY_HASH], _from_row(r)) for r in rows if r[S.REVOKED_AT] is None}
                self._read_at = time.monotonic()
            return self._keys

    @property
    def enabled(self) -> bool:
        """Whether any active key exists (a server then requires one on every request)."""
        return bool(self._current())

    def verify(self, token: str | None) -> ApiKey:
        """The key ``token`` is; :class:`AuthError` when missing, malformed, unknown or revoked."""
        if not token:
            raise AuthError("this server requires an API key: send 'Authorization: Bearer kbf_...'")
        key_id, _, secret = token.removeprefix(_PREFIX).partition("_")
        if not token.startswith(_PREFIX) or not key_id or not secret:
            raise AuthError("malformed API key: expected kbf_<id>_<secret> (from `kbflow keys create`)")
        stored = self._current().get(key_id)
        if stored is None or not hmac.compare_digest(stored[0], _digest(secret)):
            raise AuthError("unknown or revoked API key")
        return stored[1]
