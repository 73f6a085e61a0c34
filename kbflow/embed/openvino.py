"""The fp32 ONNX export run by OpenVINO: the same graph and the same vectors as onnxruntime, faster on a CPU.

OpenVINO reads the exported graph as it is (its ONNX front end knows
onnxruntime's fused BERT operators) and compiles it for the CPU in fp32. On
this project's 2-core x86 machine it ran all-MiniLM-L6-v2 about 1.2x faster
than onnxruntime on every text length, with vectors equal to six decimals
(``python bench/embed_backends.py --only-lengths`` measures both runtimes
side by side). So the ``onnx`` backend runs on
OpenVINO where the package is installed (a core dependency), and on
onnxruntime where it is not; the vectors, and so the lake's ``model_id``,
are the same either way. ``onnx-int8`` stays on onnxruntime, whose int8
kernels its graph was quantized for. A search's query or two still runs on
onnxruntime (:data:`kbflow.embed.onnx.QUERY_TEXTS`): between searches
OpenVINO's threads wake slower. Under ``auto`` the graph is compiled on the
first batch, so a process that only searches never compiles it.

``KBFLOW_ONNX_RUNTIME`` picks the runtime: ``auto`` (the default: OpenVINO
where it loads and passes its check, else onnxruntime; the ``auto`` backend
prefers PyTorch in bfloat16 where it is fast, :mod:`kbflow.embed.bf16`),
``openvino`` (an error where it cannot be used) or ``onnxruntime`` (either
keeps the ``auto`` backend's batches in fp32).

The first time an export is compiled by an OpenVINO version, the probe texts
are embedded by both runtimes and must agree
(:func:`kbflow.embed.runtimes.checked`); a marker file in the export's folder
records the check, so later loads skip it. A runtime that fails the check is
not used (``auto`` falls back to onnxruntime and logs why).
"""

from __future__ import annotations

import os
import sys
import threading
from importlib import metadata
from typing import Any

import numpy as np

from kbflow._lazy import require
from kbflow.config.env import env
from kbflow.errors import ConfigError, EmbedError

__all__ = ["RUNTIME_ENV", "RUNTIMES", "OpenVinoRunner", "import_openvino", "runtime_choice"]

#: the environment variable that picks the runtime of the fp32 ``onnx`` backend
RUNTIME_ENV = "KBFLOW_ONNX_RUNTIME"
RUNTIMES = ("auto", "openvino", "onnxruntime")


def runtime_choice(value: str | None = None) -> str:
    """The runtime asked for: ``value``, else ``$KBFLOW_ONNX_RUNTIME``, else ``auto``."""
    choice = (value or env(RUNTIME_ENV) or "auto").strip().lower()
    if choice not in RUNTIMES:
        raise ConfigError(f"{RUNTIME_ENV}={choice!r} is not a runtime; use one of {', '.join(RUNTIMES)}")
    return choice


def available() -> bool:
    """Whether the ``openvino`` package is installed (without importing it)."""
    try:
        metadata.version("openvino")
    except metadata.PackageNotFoundError:
        return False
    return True


def import_openvino() -> Any:
    """``openvino``, imported with its usage telemetry off.

    Importing OpenVINO starts its telemetry (``openvino_telemetry``): unless the user has opted out, a
    Google Analytics event sent from a process forked for it. kbflow never reports its users' runs, and
    that fork copies a process holding Lance's threads (Lance and LanceDB print warnings about it). The
    ``openvino_telemetry`` module is marked missing in this process before the first import, so OpenVINO
    takes its own no-op stub; a process that imported OpenVINO's telemetry itself is left as it is.
    """
    if "openvino" not in sys.modules:
        sys.modules.setdefault("openvino_telemetry", None)  # type: ignore[arg-type]  # None: "not installed"
    return require("openvino")


class OpenVinoRunner:
    """An export's ``model.onnx`` compiled by OpenVINO for the CPU in fp32: ``run(feeds)`` is the first output.

    Each calling thread gets its own infer request (a request is not thread-safe; the compiled model is).
    """

    def __init__(self, folder: str, threads: int | None) -> None:
        ov = import_openvino()
        config: dict[str, Any] = {"INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "LATENCY"}
        if threads:
            config["INFERENCE_NUM_THREADS"] = threads
        try:
            self.compiled = ov.Core().compile_model(os.path.join(folder, "model.onnx"), "CPU", config)
        except Exception as exc:  # OpenVINO raises RuntimeError subclasses of its own
            raise EmbedError(f"OpenVINO cannot compile {folder}/model.onnx ({type(exc).__name__}: {exc})") from exc
        self.version = metadata.version("openvino")
        self._local = threading.local()

    def run(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        request = getattr(self._local, "request", None)
        if request is None:
            request = self._local.request = self.compiled.create_infer_request()
        try:
            out = request.infer(feeds)[0]
        except Exception as exc:  # OpenVINO's own RuntimeError types
            shape = next(iter(feeds.values())).shape
            raise EmbedError(
                f"OpenVINO failed on a batch of {shape[0]} texts of {shape[1]} tokens ({type(exc).__name__}: {exc}); "
                f"set {RUNTIME_ENV}=onnxruntime to run the same graph on onnxruntime"
            ) from exc
        return np.array(out, dtype=np.float32, copy=True)
