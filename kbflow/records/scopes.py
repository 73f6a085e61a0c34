"""Scopes that nest: a source's scope is a path (``acme``, ``acme/payments``), ``global`` is the root.

A search in scope ``acme/payments`` sees the chunks of that scope, of its
ancestors (``acme``) and of ``global`` sources, and nothing beside it
(``acme/billing``) or below it. An API key's scope bounds the scopes its
holder may search or edit: its own and every scope under it (a key for
``global`` reaches everything).

Pure functions; the retriever turns :func:`visible` into a filter pushed down
into both legs (``scope IN (...)``).
"""

from __future__ import annotations

import re

from kbflow import schema as S
from kbflow.errors import ConfigError

__all__ = ["GLOBAL", "MAX_DEPTH", "ancestors", "contains", "normalize", "visible"]

GLOBAL = S.GLOBAL_SCOPE
#: the most levels a scope path may have
MAX_DEPTH = 8
_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def normalize(scope: str) -> str:
    """``scope`` checked and in its one spelling (no leading, trailing or doubled slashes).

    Each part is 1-64 letters, digits, ``_``, ``.`` or ``-`` (starting with a
    letter or digit); at most :data:`MAX_DEPTH` parts; ``global`` stands alone.

    Raises
    ------
    ConfigError
        Naming the scope and what is wrong with it.
    """
    if not isinstance(scope, str) or not scope.strip():
        raise ConfigError(f"scope must be a path like 'acme' or 'acme/payments', got {scope!r}")
    parts = scope.strip().split("/")
    if any(not p for p in parts):
        raise ConfigError(f"scope {scope!r}: empty part (leading, trailing or doubled '/')")
    bad = [p for p in parts if not _PART.fullmatch(p)]
    if bad:
        raise ConfigError(
            f"scope {scope!r}: part {bad[0]!r} must be 1-64 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit"
        )
    if len(parts) > MAX_DEPTH:
        raise ConfigError(f"scope {scope!r}: {len(parts)} levels; the most is {MAX_DEPTH}")
    if GLOBAL in parts and parts != [GLOBAL]:
        raise ConfigError(f"scope {scope!r}: {GLOBAL!r} is the root of every scope and cannot be part of a path")
    return "/".join(parts)


def ancestors(scope: str) -> list[str]:
    """``scope``'s ancestors, nearest first, ending with ``global`` (``[]`` for ``global`` itself)."""
    if scope == GLOBAL:
        return []
    parts = scope.split("/")
    return ["/".join(parts[:n]) for n in range(len(parts) - 1, 0, -1)] + [GLOBAL]


def visible(scope: str) -> list[str]:
    """The scopes a search in ``scope`` sees: itself, its ancestors and ``global``."""
    return [scope, *ancestors(scope)]


def contains(root: str, scope: str) -> bool:
    """Whether ``scope`` is ``root`` or lies under it (everything lies under ``global``)."""
    return root == GLOBAL or scope == root or scope.startswith(root + "/")
