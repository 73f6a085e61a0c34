"""What a key may reach, decided in one place for every part of the service (:mod:`kbflow.records.scopes` has the
rules of scope paths; :mod:`kbflow.usage.keys` the keys).

A request without a key runs on a server without keys: a local, trusted
server, where everything is allowed. A key searches its own scope unless it
names one under it (:func:`scope_for`); what spans every scope (insights,
the lake's versions, checking every claim) needs a ``global`` key
(:func:`require_global`).
"""

from __future__ import annotations

from kbflow.errors import AccessDeniedError, ConfigError, QueryError
from kbflow.records import scopes
from kbflow.usage.keys import ApiKey

__all__ = ["require_global", "scope_for"]


def scope_for(key: ApiKey | None, scope: str | None) -> str | None:
    """The scope a request reads in: the one it names (checked, and within the key's reach), else the key's own
    (``None``: every scope, for a global key or a server without keys)."""
    if key is None:
        return scope
    if scope is None:
        return None if key.scope == scopes.GLOBAL else key.scope
    try:
        scope = scopes.normalize(scope)
    except ConfigError as exc:
        raise QueryError(str(exc)) from None
    key.require(scope)
    return scope


def require_global(key: ApiKey | None, what: str, *, editor: bool = False) -> None:
    """Refuse (:class:`AccessDeniedError`) a key that is not ``global`` (and, ``editor``, not an editor's) for
    ``what``, which spans every scope."""
    if key is None:
        return
    if key.scope != scopes.GLOBAL or (editor and key.role != "editor"):
        role = "global editor" if editor else "global"
        raise AccessDeniedError(f"key {key.key_id} (scope {key.scope}): {what} spans every scope; use a {role} key")
