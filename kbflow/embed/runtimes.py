"""What runs a model's ONNX export: :class:`OnnxEmbedder`, behind the ``onnx``, ``onnx-int8``, ``bf16`` and
``auto`` backends.

A search's query or two (:data:`~kbflow.embed.onnx.QUERY_TEXTS` texts or fewer) always runs on the
export's onnxruntime session: it starts fast and wakes fast between searches. Batches run on the
runtime chosen at the first batch, so a process that only searches never loads another:

- ``torch-bf16`` (:mod:`kbflow.embed.bf16`): the PyTorch model with bfloat16 products. Always for the
  ``bf16`` backend; for ``auto`` where this CPU multiplies bfloat16 fast (:func:`kbflow.embed.bf16.fast`);
- ``openvino`` (:mod:`kbflow.embed.openvino`): the fp32 graph compiled by OpenVINO, where installed;
- ``onnxruntime``: the same session as the queries (``onnx-int8`` always).

Every runtime but onnxruntime is checked once per export and runtime version against onnxruntime's
vectors of the probe texts (:func:`checked`); under ``auto`` one that fails the check, or cannot load,
is logged and the next one runs.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kbflow.embed import bf16
from kbflow.embed.onnx import _PROBES, BATCH_SIZE, QUERY_TEXTS, _Feeds, _Session, export
from kbflow.errors import ConfigError, EmbedError, MissingDependencyError

__all__ = ["BF16", "MIN_COSINE", "OnnxEmbedder", "checked"]

log = logging.getLogger(__name__)

#: the runtime of the ``bf16`` backend (and of ``auto`` where bfloat16 is fast)
BF16 = "torch-bf16"
#: a runtime's vectors must be this close to onnxruntime's on the probe texts (mean cosine) to be used: OpenVINO
#: fp32 gives 1.000000, PyTorch in bfloat16 0.99998
MIN_COSINE = 0.9999
_NAMES = {"openvino": "OpenVINO", BF16: "PyTorch bfloat16"}

Run = Callable[[dict[str, np.ndarray]], np.ndarray]


def checked(
    folder: str, runner: Any, embed: Callable[[Any], np.ndarray], reference: Callable, name: str = "openvino"
) -> None:
    """Raise :class:`EmbedError` unless ``embed(runner)`` matches ``reference()`` on the probe texts (once per
    export, runtime ``name`` and ``runner.version``: a marker file in ``folder`` records a passed check)."""
    marker = os.path.join(folder, f"{name}-{runner.version}.checked")
    if os.path.exists(marker):
        return
    got, want = embed(runner), reference()
    cosine = float(np.mean(np.sum(got * want, axis=1)))
    if not cosine >= MIN_COSINE:
        raise EmbedError(
            f"{_NAMES.get(name, name)} {runner.version} does not reproduce onnxruntime's vectors of {folder} "
            f"(mean cosine {cosine:.6f} < {MIN_COSINE})"
        )
    try:
        with open(marker, "w", encoding="utf-8") as fh:
            fh.write(f"{cosine:.6f}\n")
    except OSError:  # a read-only cache: check again next time
        pass


class OnnxEmbedder:
    """A model's cached ONNX export (exported on first use), its batches run by the runtime chosen at the first
    batch (the module's docstring). ``runtime``: ``auto``, ``openvino``, ``onnxruntime`` (``None``:
    ``$KBFLOW_ONNX_RUNTIME``, else ``auto``) or ``torch-bf16``; ``bf16``: whether ``auto`` may choose
    ``torch-bf16`` (the ``auto`` backend; the ``onnx`` backend's fp32 never does). :attr:`runtime` says which
    runs the batches.

    A runtime asked for by name is loaded (and any error raised) when the embedder is made, but PyTorch in
    bfloat16, so a ``bf16`` search that embeds only its queries never imports torch."""

    def __init__(
        self,
        model_id: str,
        target: str,
        quantized: bool,
        threads: int | None,
        runtime: str | None = None,
        bf16: bool = False,
    ) -> None:
        from kbflow.embed.openvino import runtime_choice

        self._choice = BF16 if runtime == BF16 else runtime_choice(runtime)
        if quantized and self._choice in ("openvino", BF16):
            raise ConfigError("onnx-int8 runs on onnxruntime only (its graph is quantized for its int8 kernels)")
        self.model_id, self.target = model_id, target
        self.folder = export(model_id, target, quantized)
        self.tokens = _Feeds(self.folder)
        self.dim = self.tokens.dim
        self.threads = threads
        self._bf16 = bf16 and not quantized
        self._lock, self._resolving = threading.Lock(), threading.Lock()
        self._session: _Session | None = None
        self._batches: tuple[str, Run] | None = None
        self._choice = "onnxruntime" if quantized else self._choice
        if self._choice == "openvino":  # asked for by name: an error now, not at the first batch
            self._batch_runtime()

    def _ort(self) -> Run:
        """onnxruntime's forward pass (one session, made on first use)."""
        with self._lock:
            if self._session is None:
                self._session = _Session(self.folder, self.threads)
        return self._session.run

    def _batch_runtime(self) -> tuple[str, Run]:
        """``(runtime, forward pass)`` of batches, resolved once (the module's docstring)."""
        if self._batches is None:
            with self._resolving:
                if self._batches is None:
                    self._batches = self._resolve()
        return self._batches

    def _resolve(self) -> tuple[str, Run]:
        choice = self._choice
        if choice == BF16 and not bf16.fast():  # asked for by name: it runs, and the log says what it costs here
            log.warning(
                "this CPU multiplies bfloat16 no faster than fp32 (no AVX512-BF16 or AMX): the bf16 backend runs "
                "slower here than onnx (backend auto would choose onnx)"
            )
        if choice == BF16 or (choice == "auto" and self._bf16 and bf16.fast()):
            run = self._checked_runner(BF16, choice)
            if run is not None:
                return BF16, run
        if choice in ("auto", "openvino"):
            run = self._checked_runner("openvino", choice)
            if run is not None:
                return "openvino", run
        return "onnxruntime", self._ort()

    #: ``"torch-bf16"``, ``"openvino"`` or ``"onnxruntime"``: what runs the batches (loaded if not yet)
    runtime = property(lambda self: self._batch_runtime()[0])
    #: the forward pass of a batch (a runtime's ``run(feeds)``)
    run = property(lambda self: self._batch_runtime()[1])

    def _run_for(self, texts: int) -> Run:
        """The forward pass for ``texts`` texts: a search's query or two on onnxruntime, whatever runs the batches
        (it starts and wakes faster between searches, :data:`~kbflow.embed.onnx.QUERY_TEXTS`)."""
        return self._ort() if texts <= QUERY_TEXTS else self.run

    def _checked_runner(self, runtime: str, choice: str) -> Run | None:
        """``runtime``'s forward pass, checked against onnxruntime's once per export; ``None`` where ``choice``
        is ``auto`` and the runtime is not installed or fails, which the log says."""
        from kbflow.embed import openvino as ov

        if runtime == "openvino" and choice == "auto" and not ov.available():
            return None
        try:
            if runtime == BF16:
                runner: Any = bf16.Bf16Runner(self.model_id, self.target, self.threads)
            else:
                runner = ov.OpenVinoRunner(self.folder, self.threads)
            checked(
                self.folder,
                runner,
                lambda r: self.tokens.embed_with(r.run, _PROBES, BATCH_SIZE),
                lambda: _Session(self.folder, threads=1).embed(_PROBES, BATCH_SIZE),
                name=runtime,
            )
        except (EmbedError, MissingDependencyError) as exc:
            if choice == runtime:
                raise
            instead = "in fp32" if runtime == BF16 else "on onnxruntime"
            log.warning("%s; running the ONNX graph's batches %s instead", exc, instead)
            return None
        return runner.run

    def embed(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        if not len(texts):
            return np.zeros((0, self.dim), dtype=np.float32)
        size = batch_size or (bf16.BATCH_SIZE if len(texts) > QUERY_TEXTS and self.runtime == BF16 else BATCH_SIZE)
        return self.tokens.embed_with(self._run_for(len(texts)), list(texts), size)
