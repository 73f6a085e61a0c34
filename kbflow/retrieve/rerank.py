"""Cross-encoder reranking: rescore the top fused candidates with a model that reads query and passage together.

A bi-encoder (the dense leg) embeds query and passage apart; a cross-encoder
reads each (query, passage) pair in one forward pass, which ranks better and
costs one pass per candidate. So it only reranks the first ``rerank_depth``
fused candidates (50 by default); the rest keep their fused order after them.

Any sentence-transformers ``CrossEncoder`` works, by local folder or hub id::

    kbflow search "where are ranks fused" --rerank /models/ms-marco-MiniLM-L6-v2
    Retriever.open(lake).search("...", reranker="/models/ms-marco-MiniLM-L6-v2")

No cross-encoder ships with kbflow. To use a hub model offline, download it
once where the network is reachable (``huggingface-cli download
cross-encoder/ms-marco-MiniLM-L6-v2 --local-dir /models/ms-marco-MiniLM-L6-v2``)
and pass the folder. Anything with a ``score(query, texts) -> sequence of
floats`` method can rerank too (:class:`Reranker` is that interface).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from kbflow.config.registry import Registry
from kbflow.errors import ConfigError

__all__ = ["RERANKERS", "CrossEncoderReranker", "Reranker", "get_reranker", "reranker_id"]


@runtime_checkable
class Reranker(Protocol):
    """Scores passages for a query; higher is more relevant."""

    #: a stable name of the model (stored with evaluation runs)
    model_id: str

    def score(self, query: str, texts: Sequence[str]) -> Sequence[float] | np.ndarray:
        """One score per text, in the order given."""


def reranker_id(model: str) -> str:
    """The stable id of a cross-encoder name: an absolute path for a local folder, else the id as given."""
    path = os.path.expanduser(model)
    return os.path.abspath(path) if os.path.isdir(path) else model


#: reranker providers by model-name prefix; names without a known prefix go to ``cross-encoder``
RERANKERS: Registry[Reranker] = Registry("reranker provider")


@RERANKERS.register("cross-encoder")
class CrossEncoderReranker:
    """A sentence-transformers ``CrossEncoder`` loaded on the CPU from a local folder or a hub id."""

    def __init__(self, model: str, batch_size: int = 32) -> None:
        if not model or not isinstance(model, str):
            raise ConfigError(f"reranker must be a cross-encoder folder or model id, got {model!r}")
        from kbflow.embed.models import load_model

        self.model_id = reranker_id(model)
        self.model = load_model("CrossEncoder", model, self.model_id, "cross-encoder")
        self.batch_size = batch_size

    def __repr__(self) -> str:
        return f"CrossEncoderReranker({self.model_id!r})"

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        if not len(texts):
            return np.zeros(0, dtype=np.float32)
        scores = self.model.predict(
            [(query, text) for text in texts],
            batch_size=self.batch_size,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        scores = np.asarray(scores, dtype=np.float32)
        if scores.ndim == 2:  # a multi-label head: the last label is "relevant"
            scores = scores[:, -1]
        return scores


@functools.lru_cache(maxsize=4)
def get_reranker(model: str, batch_size: int = 32) -> Reranker:
    """The (cached) reranker for ``model``, loaded once per process: ``PREFIX:NAME`` picks a registered
    provider, anything else is a sentence-transformers cross-encoder folder or id."""
    prefix, sep, rest = model.partition(":")
    if sep and prefix in RERANKERS:
        return RERANKERS.factory(prefix)(rest, batch_size=batch_size)
    return RERANKERS.factory("cross-encoder")(model, batch_size=batch_size)
