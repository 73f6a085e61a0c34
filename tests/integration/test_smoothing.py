"""kbflow.embed.smoothing: outlier channels moved into the weights keep the fp32 product and ease int8."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import requires_vnni

from kbflow.embed.smoothing import CALIBRATION_TEXTS, smooth_model

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
quantization = pytest.importorskip("onnxruntime.quantization")


def _graph(path: str) -> None:
    """x (n, 8) -> MatMul with a widening weight (8, 32) -> Relu -> MatMul with a narrowing one (32, 8)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    up = numpy_helper.from_array(rng.normal(0, 0.3, (8, 32)).astype(np.float32), "up")
    down = numpy_helper.from_array(rng.normal(0, 0.3, (32, 8)).astype(np.float32), "down")
    nodes = [
        helper.make_node("MatMul", ["x", "up"], ["h"], name="widen"),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("MatMul", ["r", "down"], ["y"], name="narrow"),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 8])],
        [up, down],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def _inputs(seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).normal(0, 1, (64, 8)).astype(np.float32)
    x[:, 3] *= 40  # one outlier channel, as a layer norm's output has
    return x


def _run(path: str, x: np.ndarray) -> np.ndarray:
    return ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def _quantize(source: str, target: str) -> None:
    quantization.quantize_dynamic(source, target, per_channel=True, weight_type=quantization.QuantType.QInt8)


@requires_vnni
def test_smoothing_keeps_the_fp32_product_and_cuts_the_int8_error(tmp_path):
    plain, smoothed = str(tmp_path / "plain.onnx"), str(tmp_path / "smoothed.onnx")
    _graph(plain)
    assert smooth_model(plain, smoothed, [{"x": _inputs(1)}]) == 1  # the widening product only
    graph = onnx.load(smoothed).graph
    assert [n.op_type for n in graph.node] == ["Mul", "MatMul", "Relu", "MatMul"]
    x = _inputs(2)  # other texts than the calibration's
    reference = _run(plain, x)
    assert np.allclose(_run(smoothed, x), reference, rtol=1e-4, atol=1e-4)

    _quantize(plain, str(tmp_path / "plain8.onnx"))
    _quantize(smoothed, str(tmp_path / "smoothed8.onnx"))
    error_plain = np.abs(_run(str(tmp_path / "plain8.onnx"), x) - reference).mean()
    error_smoothed = np.abs(_run(str(tmp_path / "smoothed8.onnx"), x) - reference).mean()
    assert error_smoothed < error_plain / 2


def test_calibration_texts_are_fixed_and_varied():
    # the int8 graph is a function of the weights alone: the texts it is calibrated on never change at run time
    assert isinstance(CALIBRATION_TEXTS, tuple) and len(CALIBRATION_TEXTS) >= 20
    assert any("def " in t for t in CALIBRATION_TEXTS) and any("$" in t for t in CALIBRATION_TEXTS)
    assert max(len(t.split()) for t in CALIBRATION_TEXTS) > 256  # one text fills the model's window


def test_a_weight_two_products_share_is_left_alone(tmp_path):
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.random.default_rng(0).normal(0, 0.3, (8, 16)).astype(np.float32), "w")
    nodes = [helper.make_node("MatMul", [x, "w"], [f"y{x}"], name=f"mm{x}") for x in ("a", "b")]
    inputs = [helper.make_tensor_value_info(x, TensorProto.FLOAT, [None, 8]) for x in ("a", "b")]
    outputs = [helper.make_tensor_value_info(f"y{x}", TensorProto.FLOAT, [None, 16]) for x in ("a", "b")]
    plain, smoothed = str(tmp_path / "plain.onnx"), str(tmp_path / "smoothed.onnx")
    graph = helper.make_graph(nodes, "shared", inputs, outputs, [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), plain)
    # one scale cannot suit two inputs: scaling the shared rows for one would change the other's product
    assert smooth_model(plain, smoothed, [{"a": _inputs(1), "b": _inputs(2)}]) == 0
    feeds = {"a": _inputs(3), "b": _inputs(4)}
    run = [ort.InferenceSession(p, providers=["CPUExecutionProvider"]).run(None, feeds) for p in (plain, smoothed)]
    assert all(np.array_equal(x, y) for x, y in zip(*run))
