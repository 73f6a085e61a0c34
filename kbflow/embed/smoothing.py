"""Activation smoothing before int8 quantization: outlier channels moved from the activations into the weights.

A transformer's layer-norm outputs carry a few channels far larger than the
rest (in all-MiniLM-L6-v2 up to 30 where the median channel reaches about 2).
Dynamic int8 quantization gives each activation tensor one scale, so those
few channels set it and the others keep only a few of the 256 levels: most
of the int8 error of the attention and the feed-forward widening layer comes
from there. SmoothQuant (Xiao et al. 2023) divides each input channel ``j``
by ``s_j = max|x_j|**alpha / max|w_j|**(1 - alpha)`` and multiplies row ``j``
of the weight by it: the product is unchanged in exact arithmetic, and both
the activations and the weights become easy to quantize.

Here the division is a ``Mul`` by ``1 / s`` in front of the smoothed matrix
products (a post-norm BERT cannot fold it into the layer norm: that output
also feeds the residual path). ``max|x_j|`` is measured by running the fp32
graph on :data:`CALIBRATION_TEXTS`, a fixed set of prose, code, tables and
other languages, so the same weights always give the same int8 graph. The
scales hardly depend on the texts: the outlier channels are the model's own,
and calibrating on real chunks of the evaluation sets instead moved the
vectors no closer to fp32's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from kbflow._lazy import require

__all__ = ["ALPHA", "CALIBRATION_TEXTS", "down_projections", "narrows", "smooth_model"]

#: how much of each outlier moves into the weights (0: none, 1: all); of 0.5 to 0.9, 0.6 and 0.7 gave the vectors
#: closest to fp32's on 2,000 chunk texts of the evaluation sets, within noise of each other
#: (``python bench/embed_backends.py`` prints how close the chosen recipe's are)
ALPHA = 0.7

#: what the fp32 graph is run on to measure each channel's largest activation: short and long, prose, code,
#: figures, headings, other languages (the texts users embed)
CALIBRATION_TEXTS: tuple[str, ...] = (
    "What was the company's capital expenditure in fiscal year 2022, and how did it compare with 2021?",
    "Consolidated Statements of Operations (in millions, except per share data) Year Ended December 31 2023 "
    "2022 2021 Net revenues $ 26,974 $ 26,914 $ 16,675 Cost of revenues 11,618 11,618 6,279 Gross profit "
    "15,356 15,296 10,396 Operating expenses Research and development 7,339 5,268 3,924 Sales, general and "
    "administrative 2,654 2,440 2,166 Total operating expenses 9,993 7,708 6,090 Operating income 5,363",
    "Liquidity and Capital Resources. As of the end of the year we had cash, cash equivalents and marketable "
    "securities of $13.3 billion, compared with $21.2 billion a year earlier. The decrease was primarily due "
    "to share repurchases, the acquisition completed in the second quarter and the repayment of debt.",
    "Item 1A. Risk Factors. Our operations could be disrupted by natural disasters, pandemics, cyber attacks "
    "or the failure of third-party service providers, any of which could harm our results of operations.",
    "an experimental study of the boundary layer on a flat plate at supersonic speeds was made in order to "
    "determine the effect of heat transfer on transition. the results are compared with theoretical "
    "predictions based on the small-disturbance stability theory and agree well at the lower mach numbers.",
    "The retriever runs a dense leg and a keyword leg, normalizes each leg's scores and fuses them with "
    "weights; every hit carries a citation that resolves to the page and box it came from.",
    "Abstract. We present a method for estimating the pressure distribution over slender wings of arbitrary "
    "planform in steady supersonic flow, and compare it with wind-tunnel measurements at Mach 1.6 and 2.0.",
    "def get(self, key: str, default: object = None) -> object:\n"
    '    """Return the value stored under key, or default."""\n'
    "    with self._lock:\n        return self._store.get(key, default)",
    "class LRUCache:\n    def __init__(self, capacity):\n        self.capacity = capacity\n"
    "        self.items = OrderedDict()\n\n    def put(self, key, value):\n        self.items[key] = value\n"
    "        self.items.move_to_end(key)\n        if len(self.items) > self.capacity:\n"
    "            self.items.popitem(last=False)",
    "export async function fetchJson(url, { retries = 3 } = {}) {\n  for (let i = 0; i < retries; i++) {\n"
    "    const res = await fetch(url);\n    if (res.ok) return res.json();\n  }\n"
    "  throw new Error(`GET ${url} failed`);\n}",
    "fn parse_line(line: &str) -> Result<(String, u32), ParseError> {\n"
    "    let (name, count) = line.split_once(',').ok_or(ParseError::Missing)?;\n"
    "    Ok((name.trim().to_string(), count.trim().parse()?))\n}",
    "SELECT customer_id, SUM(amount) AS total FROM orders WHERE created_at >= '2024-01-01' "
    "GROUP BY customer_id ORDER BY total DESC LIMIT 10;",
    "python read csv file into list of dictionaries",
    "how to sort a dict by value",
    "## Installation\n\nRun `pip install kbflow`, then `kbflow ingest ./docs` to build a lake and "
    '`kbflow query "how do I rotate keys?"` to search it.',
    "Form 10-K Annual Report Pursuant to Section 13 or 15(d) of the Securities Exchange Act of 1934 "
    "For the fiscal year ended January 29, 2023 Commission File Number 001-11250",
    "Issue #42: ingest fails on encrypted PDF (reporter: dana). The source stops with a traceback instead of "
    "skipping the file and naming it; expected a clear error and the rest of the folder ingested.",
    "Kundendienst: Bitte senden Sie uns die Rechnung vom 3. März erneut zu, die Summe war falsch.",
    "Le conseil municipal a approuvé le budget de l'exercice 2024 à l'unanimité des membres présents.",
    "Table 3. Drag coefficient CD at zero lift for the four models, Reynolds number 2.4 x 10^6 per foot: "
    "model A 0.0112, model B 0.0125, model C 0.0131, model D 0.0158.",
    "x",
    "The",
    "Net income attributable to common stockholders increased 12% to $4.2 billion, or $3.10 per diluted "
    "share, driven by higher volumes, favorable pricing and lower interest expense, partly offset by the "
    "unfavorable impact of foreign currency translation and higher restructuring charges in Europe.",
    " ".join(["long text that fills the model's window"] * 60),
)


def narrows(dims: Sequence[int]) -> bool:
    """Whether a matrix product with a weight of ``dims`` narrows the hidden state (the feed-forward block's
    output, 4x wide in, 1x out): int8 quantization leaves those in fp32, and so smoothing leaves them alone."""
    return len(dims) == 2 and dims[0] > dims[1]


def down_projections(path: str) -> list[str]:
    """The matrix products of the graph at ``path`` that narrow the hidden state (:func:`narrows`): the ones
    int8 quantization keeps in fp32."""
    graph = require("onnx").load(path, load_external_data=False).graph
    shapes = {init.name: tuple(init.dims) for init in graph.initializer}
    return [node.name for node in graph.node if node.op_type == "MatMul" and narrows(shapes.get(node.input[1], ()))]


def _consumers(graph: Any) -> dict[str, list[tuple[Any, str]]]:
    """Each activation that feeds matrix products to smooth -> those nodes and their weight initializers."""
    dims = {init.name: tuple(init.dims) for init in graph.initializer}
    uses = Counter(name for node in graph.node for name in node.input)
    groups: dict[str, list[tuple[Any, str]]] = {}
    for node in graph.node:
        if node.op_type not in ("MatMul", "Attention") or len(node.input) < 2:
            continue
        weight = dims.get(node.input[1])
        if weight is None or len(weight) != 2 or narrows(weight) or uses[node.input[1]] > 1:
            continue  # not a constant product, a narrowing one or a shared weight
        groups.setdefault(node.input[0], []).append((node, node.input[1]))
    return groups


def _channel_max(model: Any, tensors: list[str], batches: Iterable[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The largest absolute value of each channel of ``tensors``, over the real (unpadded) tokens."""
    onnx, ort = require("onnx"), require("onnxruntime")
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for name in tensors:
        probe.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    peaks: dict[str, np.ndarray] = {}
    for feeds in batches:
        mask = feeds["attention_mask"].astype(bool) if "attention_mask" in feeds else None
        for name, value in zip(tensors, session.run(tensors, feeds)):
            tokens = mask is not None and value.shape[:2] == mask.shape
            rows = value[mask] if tokens else value.reshape(-1, value.shape[-1])
            peak = np.abs(rows).max(axis=0)
            peaks[name] = np.maximum(peaks[name], peak) if name in peaks else peak
    return peaks


def smooth_model(source: str, target: str, batches: Iterable[dict[str, np.ndarray]], alpha: float = ALPHA) -> int:
    """Write ``source``'s graph to ``target`` with the inputs of its constant matrix products smoothed, all but
    the narrowing ones (``batches`` are the graph's feeds for :data:`CALIBRATION_TEXTS`); returns how many
    inputs it smoothed."""
    onnx = require("onnx")
    numpy_helper = require("onnx.numpy_helper")
    model = onnx.load(source)
    graph = model.graph
    groups = _consumers(graph)
    peaks = _channel_max(model, list(groups), batches)
    inits = {init.name: init for init in graph.initializer}
    smoothed: dict[str, Any] = {}
    for k, (tensor, users) in enumerate(groups.items()):
        ws = {name: numpy_helper.to_array(inits[name]) for _, name in users}
        w_peak = np.max([np.abs(w).max(axis=1) for w in ws.values()], axis=0)
        scale = (np.maximum(peaks[tensor], 1e-5) ** alpha / np.maximum(w_peak, 1e-5) ** (1 - alpha)).astype(np.float32)
        for name, w in ws.items():
            inits[name].CopyFrom(numpy_helper.from_array((w * scale[:, None]).astype(np.float32), name))
        inverse, out = f"kbflow_smooth_{k}_inverse", f"{tensor}_kbflow_smoothed"
        graph.initializer.append(numpy_helper.from_array((1.0 / scale).astype(np.float32), inverse))
        smoothed[tensor] = onnx.helper.make_node("Mul", [tensor, inverse], [out], name=f"kbflow_smooth_{k}")
        for node, _ in users:
            node.input[0] = out
    _insert(graph, smoothed)
    onnx.save(model, target)
    return len(groups)


def _insert(graph: Any, muls: dict[str, Any]) -> None:
    """Put each smoothing ``Mul`` just before the first node that reads its output (the order stays topological)."""
    nodes = []
    for node in graph.node:
        for name in node.input:
            mul = muls.pop(name.removesuffix("_kbflow_smoothed"), None) if name.endswith("_kbflow_smoothed") else None
            if mul is not None:
                nodes.append(mul)
        nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
