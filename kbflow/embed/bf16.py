"""The model's batches in PyTorch with bfloat16 matrix products: the ``bf16`` backend, and ``auto`` where it is fast.

Where a CPU multiplies bfloat16 natively (AVX512-BF16 on AMD Zen 4 and
later and Intel Cooper Lake; AMX on Intel Sapphire Rapids and later),
oneDNN runs a bfloat16 matrix product two to three times as fast as an fp32
one: on this project's 2-core machine 430 against 138 GFLOP/s for the
model's widest product (``python bench/embed_backends.py --only-lengths``
times both). Under :func:`torch.autocast` the model's linear
layers and attention products take bfloat16 inputs and accumulate in fp32,
while its layer norms, softmax and pooling stay fp32. The vectors stay
those of the fp32 model to about five decimals (mean cosine 0.99998 on
Cranfield abstracts and CoSQA functions, ``python bench/embed_backends.py
--only-lengths``), closer than any fp32 runtime's run-to-run noise matters
to a ranking, so ``bf16`` vectors share the model's ``model_id`` with
``torch`` and ``onnx``; a first run checks that on the probe texts and
refuses a runner that does not reproduce them (:func:`~kbflow.embed.runtimes.checked`).

The linear layers' weights are cast to bfloat16 once, when the model is
loaded: autocast would otherwise cast every weight matrix again on every
batch (it keeps no cast copy of a weight that needs no gradient), and the
product rounds them to bfloat16 either way, so the vectors are the same
to the bit.

Elsewhere PyTorch emulates bfloat16, slower than fp32: :func:`fast` times
both products once per process, and the ``auto`` backend runs its batches
here only where bfloat16 wins by :data:`MIN_SPEEDUP`.

The batches come from the ONNX export's tokenizer (:class:`~kbflow.embed.onnx.OnnxEmbedder`
sorts texts by their token count and pads each batch to its own longest
text), so a search's query or two still runs on onnxruntime and a process
that only searches never imports torch.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from kbflow._lazy import require
from kbflow.errors import MissingDependencyError

__all__ = [
    "BATCH_SIZE",
    "MIN_SPEEDUP",
    "PRIMITIVE_CACHE",
    "WIDEST_PRODUCT",
    "Bf16Runner",
    "best_time",
    "fast",
    "precast",
    "product_seconds",
]

#: texts per forward pass: 16 ran 2-5% faster than 8 or 32 in bfloat16 (``bench/embed_backends.py --batch-sizes``)
BATCH_SIZE = 16
#: bfloat16 products must run at least this much faster than fp32 ones for ``auto`` to use them
MIN_SPEEDUP = 1.4
#: oneDNN's cache of compiled primitives (``ONEDNN_PRIMITIVE_CACHE_CAPACITY``, 1,024 by default) keeps one per
#: batch shape, each with memory of its own: in bfloat16 an ingest of 6,756 PDF chunks grew by 1.5 GiB
#: (``python bench/pdf_ingest.py``). 16 kept the process flat and embedded as fast (4 runs, alternated)
PRIMITIVE_CACHE = "16"


def best_time(run: Callable[[], Any], repeats: int = 5) -> float:
    """The fastest of ``repeats`` timed calls of ``run`` (after one untimed call), in seconds: how kbflow decides
    whether bfloat16 wins on this CPU (here, and for the exact dense scan, :mod:`kbflow.retrieve.dense`)."""
    run()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return min(times)


def _torch() -> Any:
    """torch, with oneDNN's primitive cache bounded (:data:`PRIMITIVE_CACHE`) unless the user set it: oneDNN reads
    the variable when it makes its first primitive, so it is set before any bfloat16 product runs."""
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", PRIMITIVE_CACHE)
    return require("torch")


#: the product :func:`product_seconds` times: ``(m, k, n)``, the default model's widest (256 tokens x its 384 x 1,536
#: feed-forward weight)
WIDEST_PRODUCT = (256, 384, 1536)


@functools.cache
def product_seconds() -> tuple[float, float] | None:
    """``(fp32, bfloat16)``: the fastest of a few runs of one :data:`WIDEST_PRODUCT` in each, in seconds, timed once
    per process (a few tens of milliseconds); ``None`` without PyTorch."""
    try:
        torch = _torch()
    except MissingDependencyError:
        return None
    m, k, n = WIDEST_PRODUCT
    a, b = torch.randn(m, k), torch.randn(k, n)
    a16, b16 = a.to(torch.bfloat16), b.to(torch.bfloat16)
    with torch.inference_mode():
        return best_time(lambda: a @ b), best_time(lambda: a16 @ b16)


def fast() -> bool:
    """Whether this CPU multiplies bfloat16 at least :data:`MIN_SPEEDUP` times faster than fp32
    (:func:`product_seconds`); ``False`` without PyTorch."""
    seconds = product_seconds()
    return seconds is not None and seconds[1] * MIN_SPEEDUP <= seconds[0]


def precast(model: Any, torch: Any) -> Any:
    """``model`` with its linear layers' weights and biases in bfloat16, the rest (layer norms, embeddings) in
    fp32: what autocast would cast them to on every call, cast once."""
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            module.to(torch.bfloat16)
    return model


class Bf16Runner:
    """A sentence-transformers model in PyTorch on the CPU, its products in bfloat16: ``run(feeds)`` takes one
    batch of the ONNX graph's inputs (numpy arrays by input name) and returns its vectors as float32."""

    def __init__(self, model_id: str, target: str, threads: int | None) -> None:
        from kbflow.embed.models import load_model

        self._torch = torch = _torch()
        self.model = precast(load_model("SentenceTransformer", model_id, target, "embedding model").eval(), torch)
        if threads:
            torch.set_num_threads(threads)
        #: names the check's marker file: a new PyTorch checks its vectors again
        self.version = str(torch.__version__)

    def run(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        torch = self._torch
        batch = {name: torch.from_numpy(array) for name, array in feeds.items()}
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
            out = self.model(batch)["sentence_embedding"]
        return out.float().numpy()
