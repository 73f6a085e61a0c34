"""sentence-transformers models: the offline default, a local path, or a hub id, on a chosen backend.

Backends (:data:`kbflow.config.BACKENDS`): ``torch`` (sentence-transformers itself), ``onnx``
(the same graph exported, run by OpenVINO or onnxruntime, identical vectors:
:mod:`kbflow.embed.openvino`), ``bf16`` (PyTorch with bfloat16 products,
vectors within 0.99998 cosine: :mod:`kbflow.embed.bf16`), ``auto`` (``bf16``
where the CPU multiplies bfloat16 fast, else ``onnx``: decided at the first
batch, :mod:`kbflow.embed.runtimes`) and ``onnx-int8`` (weights quantized to
int8: faster, vectors moved a little, stored under their own ``model_id``;
:mod:`kbflow.embed.onnx`). Every backend but ``torch`` embeds a search's
queries on the ONNX export's onnxruntime session.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from kbflow._lazy import require
from kbflow.config import check_backend, resolve_id, split_space
from kbflow.embed.base import Embedder, register_provider
from kbflow.embed.models import load_model, model_dimension, resolve_model
from kbflow.errors import ConfigError, EmbedError

log = logging.getLogger(__name__)

#: texts per forward pass on torch when the caller sets none (sentence-transformers' own default)
TORCH_BATCH_SIZE = 32


@register_provider("st")
class SentenceTransformerEmbedder(Embedder):
    """A sentence-transformers bi-encoder on ``backend``; vectors are normalized, encoding is batched.

    ``threads`` sets the backend's intra-op threads (``None``: its own default,
    every core); with ``torch`` it is the process-wide ``torch.set_num_threads``.
    A model id carrying a vector-space suffix (``...#onnx-int8.3``, as stored in
    a lake) always runs on that backend, whatever ``backend`` says.
    """

    def __init__(
        self, model: str, batch_size: int | None = None, backend: str = "torch", threads: int | None = None
    ) -> None:
        model, space = split_space(model)
        self.backend = space or check_backend(backend)
        base_id, target = resolve_model(model)
        self.model_id = resolve_id(base_id, self.backend)
        self.batch_size = batch_size  # None: each backend's own (torch 32, ONNX 8)
        self.model: Any = None  # the SentenceTransformer, where torch runs it
        self._onnx = None
        if threads is not None and threads < 1:
            raise ConfigError(f"embedding threads must be >= 1, got {threads}")
        if self.backend != "torch":
            from kbflow.embed.runtimes import BF16, OnnxEmbedder

            try:
                self._onnx = OnnxEmbedder(
                    base_id,
                    target,
                    quantized=self.backend == "onnx-int8",
                    threads=threads,
                    runtime=BF16 if self.backend == "bf16" else None,
                    bf16=self.backend == "auto",
                )
                self.dim = self._onnx.dim
                return
            except EmbedError as exc:
                if self.backend == "onnx-int8":
                    raise
                # the other backends stand in for torch (its vectors): run torch instead, and say so
                log.warning("%s; embedding with torch instead (the same vectors)", exc)
                self.backend = "torch"
        self.model = load_model("SentenceTransformer", model, target, "embedding model")
        if threads:
            require("torch").set_num_threads(threads)
        self.dim = model_dimension(self.model)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not len(texts):
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._onnx is not None:
            return self._onnx.embed(texts, self.batch_size)
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size or TORCH_BATCH_SIZE,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)
