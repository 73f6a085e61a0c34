"""sentence-transformers models exported to ONNX: ``backend="onnx"`` (fp32) and ``"onnx-int8"``.

The ONNX graph is exported once, offline, from the locally installed weights
(the whole sentence-transformers pipeline: transformer, pooling, any dense
layers and the normalization), its BERT-style layers fused (attention, skip
layer norm, bias GELU: :func:`_fuse`), checked against the PyTorch model on
probe texts (refused below :data:`MIN_FP32_COSINE`), and cached under
``$KBFLOW_CACHE`` in a folder keyed by the model, its weight files, the
backend and the exporter's versions.

``onnx-int8`` is the fp32 graph with the weights of the attention and of the
feed-forward block's widening layer quantized dynamically, per channel, to
int8, after the inputs of those products are smoothed
(:mod:`kbflow.embed.smoothing`). The embedding tables and the feed-forward
block's narrowing layer stay fp32 (:func:`~kbflow.embed.smoothing.down_projections`).
Why each part is kept in fp32 or quantized, and what each costs and buys, is
measured in ``docs/performance.md`` and ``docs/models.md``
(``python bench/embed_backends.py``).

After the export a search needs neither torch nor the transformers model:
the tokenizer runs from its ``tokenizer.json`` with the ``tokenizers``
library, and the graph in one onnxruntime session; the batches of an
ingest run on the fastest runtime checked (:mod:`kbflow.embed.runtimes`).

Vector spaces: fp32 ONNX vectors equal PyTorch's, so ``onnx`` shares the
model's ``model_id`` with ``torch`` and either can query a lake the other
built. int8 vectors move, so ``onnx-int8`` vectors are stored under
``<model_id>#onnx-int8.3`` (the suffix names the recipe,
:data:`kbflow.config.SPACES`) and never mixed with fp32 ones or an earlier
recipe's.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from importlib import metadata
from typing import Any

import numpy as np

from kbflow._lazy import require
from kbflow.config import SPACES
from kbflow.embed.smoothing import ALPHA, CALIBRATION_TEXTS, down_projections, smooth_model
from kbflow.errors import EmbedError

__all__ = ["BATCH_SIZE", "EXPORT_REVISION", "QUANTIZED_OPS", "QUERY_TEXTS", "cache_root", "export"]

log = logging.getLogger(__name__)

#: bumped when the exported graph or its metadata change (part of the cache key)
EXPORT_REVISION = 4
#: the operators ``onnx-int8`` quantizes: the matrix products, where int8 kernels are faster. Not the embedding
#: lookups (``Gather``, ``EmbedLayerNormalization``): quantizing the word-embedding table adds no speed and moved
#: dense nDCG@10 by -0.006 on Cranfield and CoSQA (``python bench/embed_backends.py``)
QUANTIZED_OPS = ("MatMul", "Attention")
#: texts per forward pass when the caller sets none: small batches of texts sorted by token count run faster on a CPU
#: than 32 (less padding, activations that stay in cache; ``python bench/embed_backends.py --batch-sizes``)
BATCH_SIZE = 8
#: calls of this many texts or fewer (a search's query) run on onnxruntime even where OpenVINO runs the batches:
#: between searches OpenVINO's threads wake slower (the query's embedding 7.1 ms against 5.6 on onnxruntime in
#: ``python bench/query_latency.py --sizes 10000``, with and without ``KBFLOW_ONNX_RUNTIME=onnxruntime``), while
#: on a batch it is the faster (``bench/embed_backends.py``)
QUERY_TEXTS = 2
#: ``config.model_type`` values whose layers onnxruntime's BERT optimizer fuses
_FUSABLE = ("bert", "roberta", "xlm-roberta", "distilbert", "electra", "camembert")
#: an fp32 export must give vectors this close to PyTorch's (mean cosine on the probe texts) to be used
MIN_FP32_COSINE = 0.999
_PROBES = [
    "What is the capital expenditure for 2022?",
    "def get(self, key): return self._store[key]",
    "The retriever fuses the ranks of both legs with Reciprocal Rank Fusion.",
    "Boundary layer transition on a flat plate at supersonic speeds.",
    "Kundendienst: Bitte senden Sie uns die Rechnung erneut zu.",
    "x",
    " ".join(["long text"] * 300),  # longer than the model reads: truncation must match
]
_export_lock = threading.RLock()  # int8 exports the fp32 graph first, under the same lock


def cache_root() -> str:
    """Where exports live: ``$KBFLOW_CACHE`` or ``~/.cache/kbflow``, plus ``/onnx``."""
    from kbflow.config import cache_dir

    return cache_dir("onnx")


def _fingerprint(target: str) -> str:
    """The weight files' names, sizes and mtimes (a local folder), or the id itself (a hub id)."""
    parts = [target]
    if os.path.isdir(target):
        for root, _dirs, files in sorted(os.walk(target)):
            for name in sorted(files):
                if name.endswith((".safetensors", ".bin", ".json", ".txt", ".model")):
                    st = os.stat(os.path.join(root, name))
                    parts.append(f"{os.path.relpath(os.path.join(root, name), target)}:{st.st_size}:{st.st_mtime_ns}")
    for package in ("torch", "onnx", "onnxruntime"):  # read from the installed metadata: no import
        try:
            parts.append(f"{package}={metadata.version(package)}")
        except metadata.PackageNotFoundError:
            parts.append(f"{package}=none")
    parts.append(f"rev{EXPORT_REVISION}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _folder(model_id: str, target: str, quantized: bool) -> str:
    name = model_id.rstrip("/").replace("\\", "/").split("/")[-1] or "model"
    safe = "".join(c if c.isalnum() or c in ".-_" else "-" for c in name)[:60]
    # the int8 folder is named by its recipe (``onnx-int8.3``): a new recipe re-quantizes without re-exporting fp32
    recipe = SPACES["onnx-int8"] if quantized else "fp32"
    return os.path.join(cache_root(), f"{safe}-{_fingerprint(target)}", recipe)


def _wrapper(model: Any, names: list[str]) -> Any:
    """``model`` as a module of positional tensors (what the exporter traces), passed on as the named
    features sentence-transformers takes (a positional call breaks on transformers 5.x)."""
    module: Any = require("torch").nn.Module

    class Wrapper(module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs):
            return self.model(dict(zip(names, inputs, strict=True)))["sentence_embedding"]

    return Wrapper().eval()


def _auto_model(model: Any) -> Any:
    """The Hugging Face model inside a sentence-transformers model's first (transformer) module, or ``None``."""
    return getattr(model[0], "auto_model", None) if len(model) else None


def _eager_attention(model: Any) -> None:
    """Trace attention as plain MatMul/Softmax (the pattern the fusion below recognizes) instead of
    PyTorch's scaled-dot-product kernel, which exports as a graph nothing fuses."""
    auto = _auto_model(model)
    setter = getattr(auto, "set_attn_implementation", None)
    if callable(setter):
        try:
            setter("eager")
            return
        except (ValueError, TypeError, AttributeError):
            pass
    config = getattr(auto, "config", None)
    if config is not None and hasattr(config, "_attn_implementation"):
        config._attn_implementation = "eager"


def _fuse(model: Any, path: str) -> str | None:
    """Rewrite the graph at ``path`` with onnxruntime's transformer fusions (one ``Attention`` op per layer,
    ``SkipLayerNormalization``, ``BiasGelu``, ``EmbedLayerNormalization``); returns what was fused, or ``None``
    where the model is no BERT-style encoder (not tried) or the fusion failed (a warning; the plain graph is
    kept: the model runs, only slower)."""
    config = getattr(_auto_model(model), "config", None)
    if config is None or getattr(config, "model_type", None) not in _FUSABLE:
        return None
    heads, hidden = getattr(config, "num_attention_heads", 0), getattr(config, "hidden_size", 0)
    stats: dict[str, int] = {}
    error = None
    disabled = logging.root.manager.disable
    logging.disable(logging.WARNING)  # the optimizer logs every pattern it tried
    try:
        optimizer = require("onnxruntime.transformers.optimizer")
        fused = optimizer.optimize_model(path, model_type="bert", num_heads=heads, hidden_size=hidden, opt_level=1)
        stats = {k: v for k, v in fused.get_fused_operator_statistics().items() if v}
        if stats.get("Attention"):
            fused.save_model_to_file(path)
        else:
            error = "no attention layer matched the fusion's patterns"
    except Exception as exc:  # an optimizer that trips on a model costs speed, never the export
        error = f"{type(exc).__name__}: {exc}"
    finally:
        logging.disable(disabled)
    if error is not None:
        log.warning(
            "the ONNX graph of this %s model could not be fused (%s); it runs unfused", config.model_type, error
        )
        return None
    return ", ".join(f"{k} {v}" for k, v in sorted(stats.items()))


def _export_fp32(model: Any, out: str) -> list[str]:
    """Write ``model.onnx`` and the tokenizer into ``out``; returns the graph's input names."""
    torch = require("torch")
    _eager_attention(model)
    tokenize = getattr(model, "preprocess", None) or model.tokenize
    features = tokenize(["a probe sentence", "another, longer probe sentence for the export"])
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in features]
    wrapper = _wrapper(model, names)
    args = tuple(features[n] for n in names)
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    axes["embedding"] = {0: "batch"}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer warnings about shape-dependent branches: the axes are dynamic
        torch.onnx.export(
            wrapper,
            args,
            os.path.join(out, "model.onnx"),
            input_names=names,
            output_names=["embedding"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )
    model.tokenizer.save_pretrained(out)
    if not os.path.exists(os.path.join(out, "tokenizer.json")):
        raise EmbedError("the model's tokenizer has no fast (tokenizer.json) form; use backend='torch'")
    return names


def export(model_id: str, target: str, quantized: bool = False) -> str:
    """The folder holding ``model_id``'s ONNX export (fp32, or int8 with ``quantized``), exporting it first
    if it is not cached; ``target`` is what sentence-transformers loads (a folder or hub id)."""
    folder = _folder(model_id, target, quantized)
    if os.path.exists(os.path.join(folder, "meta.json")):
        return folder
    with _export_lock:
        if os.path.exists(os.path.join(folder, "meta.json")):
            return folder
        if quantized:
            fp32 = export(model_id, target, quantized=False)
            return _publish(folder, lambda tmp: _quantize(fp32, tmp))
        return _publish(folder, lambda tmp: _export_checked(model_id, target, tmp))


def _publish(folder: str, build) -> str:
    """Build into a temporary folder beside ``folder`` and rename it into place (another process
    exporting at the same time wins or loses the rename; either export is complete)."""
    parent = os.path.dirname(folder)
    try:
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".export-", dir=parent)
    except OSError as exc:
        raise EmbedError(f"cannot write the ONNX export under {parent} ({exc}); set KBFLOW_CACHE") from exc
    try:
        build(tmp)
        try:
            os.rename(tmp, folder)
        except OSError:
            if not os.path.exists(os.path.join(folder, "meta.json")):
                raise
    except EmbedError:
        raise
    except Exception as exc:
        raise EmbedError(f"ONNX export into {folder} failed ({type(exc).__name__}: {exc})") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def _export_checked(model_id: str, target: str, out: str) -> None:
    from kbflow.embed.models import load_model, model_dimension

    log.warning("exporting %s to ONNX (once; cached in %s)", model_id, cache_root())
    model = load_model("SentenceTransformer", model_id, target, "embedding model")
    names = _export_fp32(model, out)
    meta = {
        "model_id": model_id,
        "inputs": names,
        "max_seq_length": int(model.max_seq_length),
        "dim": model_dimension(model),
        "revision": EXPORT_REVISION,
        "fused": _fuse(model, os.path.join(out, "model.onnx")),
    }
    _write_meta(out, meta)
    reference = np.asarray(model.encode(_PROBES, normalize_embeddings=True, convert_to_numpy=True), dtype=np.float32)
    got = _Session(out, threads=1).embed(_PROBES, batch_size=8)
    cosine = float(np.mean(np.sum(reference * got, axis=1)))
    if cosine < MIN_FP32_COSINE:
        raise EmbedError(
            f"the ONNX export of {model_id} does not reproduce its PyTorch vectors (mean cosine {cosine:.5f} "
            f"< {MIN_FP32_COSINE}); use backend='torch' for this model"
        )
    meta["probe_cosine_to_torch"] = round(cosine, 6)
    _write_meta(out, meta)


def _quantize(fp32: str, out: str) -> None:
    q = require("onnxruntime.quantization")
    for name in os.listdir(fp32):
        if name not in ("model.onnx", "meta.json"):
            src = os.path.join(fp32, name)
            (shutil.copytree if os.path.isdir(src) else shutil.copy2)(src, os.path.join(out, name))
    smoothed = os.path.join(out, "smoothed.onnx")
    feeds = _Feeds(fp32).batches(CALIBRATION_TEXTS, BATCH_SIZE)  # smooth_model runs the graph itself
    smooth_model(os.path.join(fp32, "model.onnx"), smoothed, feeds)
    disabled = logging.root.manager.disable
    logging.disable(logging.WARNING)  # onnxruntime logs advice about calibration, which dynamic quantization skips
    try:
        q.quantize_dynamic(
            smoothed,
            os.path.join(out, "model.onnx"),
            per_channel=True,
            weight_type=q.QuantType.QInt8,
            op_types_to_quantize=list(QUANTIZED_OPS),
            nodes_to_exclude=down_projections(os.path.join(fp32, "model.onnx")),
            # the fused ops (Attention, SkipLayerNormalization) carry no shape inference: name the float type
            extra_options={"DefaultTensorType": require("onnx").TensorProto.FLOAT},
        )
    finally:
        logging.disable(disabled)
        os.remove(smoothed)
    with open(os.path.join(fp32, "meta.json"), encoding="utf-8") as fh:
        meta = json.load(fh)
    meta["quantized"] = (
        f"int8 dynamic, per channel: {', '.join(QUANTIZED_OPS)}, but the down projections; "
        f"inputs smoothed (alpha {ALPHA})"
    )
    _write_meta(out, meta)


def _write_meta(out: str, meta: dict[str, Any]) -> None:
    with open(os.path.join(out, "meta.json"), "w", encoding="utf-8") as fh:
        json.dump(meta, fh, indent=1)


class _Feeds:
    """One exported folder's tokenizer: texts as the graph's inputs (no onnxruntime session)."""

    def __init__(self, folder: str) -> None:
        tokenizers = require("tokenizers")
        with open(os.path.join(folder, "meta.json"), encoding="utf-8") as fh:
            self.meta = json.load(fh)
        self.inputs = list(self.meta["inputs"])
        self.dim = int(self.meta["dim"])
        tok = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        tok.enable_truncation(int(self.meta["max_seq_length"]))
        pad_id = 0
        with open(os.path.join(folder, "tokenizer_config.json"), encoding="utf-8") as fh:
            config = json.load(fh)
        if isinstance(config.get("pad_token"), str):
            pad_id = tok.token_to_id(config["pad_token"]) or 0
        tok.no_padding()  # each batch is padded to its own longest text (:meth:`_feeds`)
        self.tokenizer, self.pad_id = tok, pad_id

    def _feeds(self, encodings: list[Any]) -> dict[str, np.ndarray]:
        """The graph's inputs for one batch: ids, mask and type ids padded to the batch's longest text."""
        width = max(len(e.ids) for e in encodings)
        feeds = {}
        for name, attr, pad in (
            ("input_ids", "ids", self.pad_id),
            ("attention_mask", "attention_mask", 0),
            ("token_type_ids", "type_ids", 0),
        ):
            if name in self.inputs:
                array = np.full((len(encodings), width), pad, dtype=np.int64)
                for row, e in enumerate(encodings):
                    values = getattr(e, attr)
                    array[row, : len(values)] = values
                feeds[name] = array
        return feeds

    def batches(self, texts: Sequence[str], batch_size: int) -> Iterator[dict[str, np.ndarray]]:
        """The graph's feeds for ``texts``, ``batch_size`` texts at a time, in their order."""
        encodings = self.tokenizer.encode_batch(list(texts))
        for i in range(0, len(encodings), batch_size):
            yield self._feeds(encodings[i : i + batch_size])

    def embed_with(
        self, run: Callable[[dict[str, np.ndarray]], np.ndarray], texts: Sequence[str], batch_size: int
    ) -> np.ndarray:
        """Unit vectors of ``texts``, each batch's feeds given to ``run`` (a runtime's forward pass): tokenized
        once, sorted by their number of tokens (not characters: code packs two to five characters into a
        token), so a batch holds texts of one length and little padding."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(list(texts))
        order = np.argsort([len(e.ids) for e in encodings], kind="stable")
        for i in range(0, len(order), batch_size):
            idx = order[i : i + batch_size]
            out[idx] = run(self._feeds([encodings[j] for j in idx]))
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)


class _Session(_Feeds):
    """One exported folder: its tokenizer and an onnxruntime session."""

    def __init__(self, folder: str, threads: int | None) -> None:
        super().__init__(folder)
        ort = require("onnxruntime")
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # idle pool threads must not spin: on a small machine they steal the cores Lance and the caller need
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if threads:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(
            os.path.join(folder, "model.onnx"), options, providers=["CPUExecutionProvider"]
        )

    def run(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        return self.session.run(None, feeds)[0]

    def embed(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        return self.embed_with(self.run, texts, batch_size)
