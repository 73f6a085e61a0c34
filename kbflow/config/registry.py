"""One small registry for every plugin family: loaders, chunkers, embedders and rerankers.

A family is a :class:`Registry` keyed by name. Its built-in members live in
modules that register themselves when imported; the registry imports them on
first use, so ``import kbflow`` stays cheap. A second class under a name
already taken is refused::

    LOADERS = Registry("loader", builtins=("kbflow.sources.docs", ...), error=SourceError)

    @LOADERS.register()            # under the class's ``name``
    class DocsLoader(Loader): ...

    @EMBEDDERS.register("hash")    # or under an explicit name
    class HashingEmbedder(Embedder): ...
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from kbflow.errors import ConfigError, KbflowError

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Generic[T]):
    """Named classes of one plugin family.

    Parameters
    ----------
    kind:
        What a member is, for messages (``"loader"``, ``"embedder"``).
    builtins:
        Modules whose import registers the built-in members.
    error:
        The :class:`KbflowError` subclass raised for an unknown name.
    """

    def __init__(self, kind: str, builtins: Iterable[str] = (), error: type[KbflowError] = ConfigError) -> None:
        self.kind = kind
        self._builtins = tuple(builtins)
        self._loaded = False
        self._error = error
        self._members: dict[str, type[T]] = {}

    def register(self, name: str | None = None) -> Callable[[type[T]], type[T]]:
        """Class decorator: register the class under ``name`` (default: its ``name`` attribute)."""

        def add(cls: type[T]) -> type[T]:
            key = name if name is not None else getattr(cls, "name", "")
            if not key:
                raise ConfigError(f"{self.kind} {cls.__name__} has no name")
            other = self._members.get(key)
            if other is not None and other is not cls:
                raise ConfigError(f"a {self.kind} named {key!r} is already registered ({other.__name__})")
            self._members[key] = cls
            return cls

        return add

    def _ensure_builtins(self) -> None:
        if not self._loaded:
            self._loaded = True
            for module in self._builtins:
                importlib.import_module(module)

    def __contains__(self, name: object) -> bool:
        self._ensure_builtins()
        return name in self._members

    def get(self, name: str) -> type[T]:
        """The class registered under ``name``; the registry's error (naming the known ones) if none is."""
        self._ensure_builtins()
        try:
            return self._members[name]
        except KeyError:
            raise self._error(f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}") from None

    def factory(self, name: str) -> Callable[..., T]:
        """The class registered under ``name`` as a constructor that takes its own provider's arguments (a
        model name, a batch size...), which the family's base class does not declare."""
        return self.get(name)

    def names(self) -> list[str]:
        """Every registered name, sorted."""
        self._ensure_builtins()
        return sorted(self._members)

    def classes(self) -> list[type[T]]:
        """Every registered class, in name order."""
        return [self._members[n] for n in self.names()]
