"""kbflow.embed: backends of the real model (torch, ONNX fp32, ONNX int8), their vector spaces, batching."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import HAS_VNNI

from kbflow.config import DEFAULT_MODEL, Settings
from kbflow.embed.base import get_embedder, model_id_of
from kbflow.embed.models import resolve_model
from kbflow.embed.sentence_transformers import resolve_id, split_space
from kbflow.errors import ConfigError, EmbedError

TEXTS = [
    "The Akashi Kaikyo Bridge has a central span of 1,991 metres.",
    "def rrf(rankings, k=60): return fused scores",
    "Boundary layer transition at supersonic speeds",
    "x",
    " ".join(["a long passage"] * 200),  # past the model's 256 word pieces: truncated alike
]


def test_vector_space_ids_name_the_backend_only_where_vectors_differ(monkeypatch):
    assert model_id_of("all-MiniLM-L6-v2") == DEFAULT_MODEL
    assert model_id_of("all-MiniLM-L6-v2", "onnx") == DEFAULT_MODEL
    assert model_id_of("all-MiniLM-L6-v2", "onnx-int8") == f"{DEFAULT_MODEL}#onnx-int8.3"
    assert model_id_of("hash:64", "onnx-int8") == "hash:64"
    # a stored id keeps its space whatever backend is asked for, an earlier recipe's too
    assert resolve_id(f"{DEFAULT_MODEL}#onnx-int8.3", "torch") == f"{DEFAULT_MODEL}#onnx-int8.3"
    assert resolve_id(f"{DEFAULT_MODEL}#onnx-int8.2", "torch") == f"{DEFAULT_MODEL}#onnx-int8.2"
    assert resolve_id(f"{DEFAULT_MODEL}#onnx-int8", "torch") == f"{DEFAULT_MODEL}#onnx-int8"
    assert split_space("some/model#onnx-int8.3") == ("some/model", "onnx-int8")
    assert split_space("some/model#onnx-int8.2") == ("some/model", "onnx-int8")
    assert split_space("some/model#onnx-int8") == ("some/model", "onnx-int8")
    assert split_space("a/folder#with-hash") == ("a/folder#with-hash", None)
    # the current recipe's space differs from the earlier one's: its lakes re-embed once
    assert Settings(backend="onnx-int8").vector_space == f"{DEFAULT_MODEL}#onnx-int8.3"
    with pytest.raises(ConfigError, match="unknown embedding backend 'tensorrt'"):
        Settings(backend="tensorrt")
    with pytest.raises(ConfigError, match="embed_threads"):
        Settings(embed_threads=0)
    assert Settings().backend == "auto"
    monkeypatch.setenv("KBFLOW_BACKEND", "torch")
    assert Settings().backend == "torch" and Settings(backend="onnx").backend == "onnx"


@pytest.fixture(scope="module")
def embedders():
    return {b: get_embedder(DEFAULT_MODEL, 32, b) for b in ("torch", "onnx", "onnx-int8")}


def test_onnx_gives_torchs_vectors_and_int8_stays_close_under_its_own_id(embedders):
    torch, onnx, int8 = (embedders[b] for b in ("torch", "onnx", "onnx-int8"))
    assert torch.model_id == onnx.model_id == DEFAULT_MODEL
    assert int8.model_id == f"{DEFAULT_MODEL}#onnx-int8.3"
    ref = torch.embed(TEXTS)
    # int8 with its inputs smoothed: 0.9978 mean here (0.9942 before smoothing, its worst text 0.983)
    # int8's closeness holds on CPUs with VNNI (conftest.HAS_VNNI); elsewhere only its shape and norms are checked
    for embedder, low, mean in ((onnx, 0.9999, 0.9999), (int8, 0.99 if HAS_VNNI else 0.9, 0.997 if HAS_VNNI else 0.9)):
        got = embedder.embed(TEXTS)
        assert got.shape == ref.shape and got.dtype == np.float32
        assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
        cosine = np.sum(ref * got, axis=1)
        assert cosine.min() >= low and cosine.mean() >= mean
    # a batch of queries is the same as one query at a time, in the input's order
    batch = onnx.embed_queries(TEXTS[:3])
    single = np.stack([onnx.embed_query(t) for t in TEXTS[:3]])
    assert np.allclose(batch, single, atol=1e-5)
    assert onnx.embed([]).shape == (0, 384)
    # the batch size changes nothing but speed (padding is masked out of the fused attention)
    assert np.allclose(get_embedder(DEFAULT_MODEL, 3, "onnx").embed(TEXTS), onnx.embed(TEXTS), atol=1e-5)


def test_onnx_batches_texts_by_their_tokens_not_their_characters(embedders):
    """Code packs several characters into a token: batches are cut from texts sorted by token count, each padded
    only to its own longest text, and a text's vector does not depend on the batch it ran in."""
    onnx = embedders["onnx"]._onnx
    texts = [
        "x = {k: v for k, v in d.items() if v}",  # short in characters, long in tokens
        "a plain sentence of words that is longer in characters than the code above it",
        "ok",
        "def f(a, b): return [(i, j) for i in a for j in b if i != j and (i, j) not in seen]",
    ]
    tokens = [len(e.ids) for e in onnx.tokens.tokenizer.encode_batch(texts)]
    widths = []
    run = onnx.run
    try:
        onnx._run_for = lambda n: lambda feeds: widths.append(feeds["input_ids"].shape) or run(feeds)
        together = onnx.embed(texts, 2)
    finally:
        del onnx._run_for  # the class's own again
    by_tokens = sorted(tokens)
    assert [w for _, w in widths] == [by_tokens[1], by_tokens[3]]  # each pair padded to its longer text only
    alone = np.stack([onnx.embed([t], 1)[0] for t in texts])
    assert np.allclose(together, alone, atol=1e-5)


def test_fp32_onnx_runs_on_openvino_with_onnxruntimes_vectors(embedders, monkeypatch):
    pytest.importorskip("openvino")
    from kbflow.embed.openvino import RUNTIME_ENV
    from kbflow.embed.runtimes import OnnxEmbedder

    onnx = embedders["onnx"]._onnx
    assert onnx.runtime == "openvino"  # the default where the package is installed (a core dependency)
    assert [n for n in os.listdir(onnx.folder) if n.startswith("openvino-")]  # its check passed, once
    monkeypatch.setenv(RUNTIME_ENV, "onnxruntime")
    base_id, target = resolve_model(DEFAULT_MODEL)
    ort = OnnxEmbedder(base_id, target, quantized=False, threads=None)
    assert ort.runtime == "onnxruntime" and ort.folder == onnx.folder
    a, b = onnx.embed(TEXTS), ort.embed(TEXTS)
    assert np.sum(a * b, axis=1).min() >= 0.9999
    assert embedders["onnx-int8"]._onnx.runtime == "onnxruntime"  # int8 kernels are onnxruntime's
    # a search's query runs on onnxruntime (OpenVINO's threads wake slower between searches), a batch on OpenVINO
    from kbflow.embed.onnx import QUERY_TEXTS

    assert onnx._run_for(QUERY_TEXTS) != onnx.run and onnx._run_for(QUERY_TEXTS + 1) == onnx.run
    assert ort._run_for(1) == ort.run  # without OpenVINO there is one runtime
    # queries from several threads at once (a server's): each thread has its own infer request
    from concurrent.futures import ThreadPoolExecutor

    batches = [TEXTS[i : i + 3] for i in range(len(TEXTS))] * 4  # 3 texts: OpenVINO's infer requests
    serial = [onnx.embed(b) for b in batches]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(onnx.embed, batches))
    assert all(np.allclose(a, b, atol=1e-5) for a, b in zip(serial, together))
    queries = np.stack([embedders["onnx"].embed_query(t) for t in TEXTS])
    assert np.sum(queries * onnx.embed(TEXTS), axis=1).min() >= 0.9999  # either runtime: the same vectors
    monkeypatch.setenv(RUNTIME_ENV, "tensorrt")
    with pytest.raises(ConfigError, match="KBFLOW_ONNX_RUNTIME='tensorrt' is not a runtime"):
        OnnxEmbedder(base_id, target, quantized=False, threads=None)
    with pytest.raises(ConfigError, match="onnx-int8 runs on onnxruntime only"):
        OnnxEmbedder(base_id, target, quantized=True, threads=None, runtime="openvino")


def test_openvino_that_fails_falls_back_to_onnxruntime_unless_asked_for(embedders, monkeypatch, caplog):
    pytest.importorskip("openvino")
    from kbflow.embed import openvino
    from kbflow.embed.runtimes import OnnxEmbedder

    base_id, target = resolve_model(DEFAULT_MODEL)

    class Broken:
        def __init__(self, folder, threads):
            raise EmbedError(f"OpenVINO cannot compile {folder}/model.onnx (RuntimeError: no CPU plugin)")

    monkeypatch.setattr(openvino, "OpenVinoRunner", Broken)
    with caplog.at_level("WARNING"):
        fallback = OnnxEmbedder(base_id, target, quantized=False, threads=None, runtime="auto")
    assert fallback.runtime == "onnxruntime" and fallback.embed(TEXTS[:2]).shape == (2, 384)
    assert "no CPU plugin" in caplog.text and "on onnxruntime instead" in caplog.text
    with pytest.raises(EmbedError, match="no CPU plugin"):
        OnnxEmbedder(base_id, target, quantized=False, threads=None, runtime="openvino")


def test_openvino_is_imported_with_its_telemetry_off():
    """Importing OpenVINO sends a usage event (Google Analytics, from a forked process) unless its telemetry
    module is missing: kbflow's import leaves OpenVINO on its no-op stub, and nothing forks."""
    pytest.importorskip("openvino")
    probe = (
        "import os, sys\n"
        "forks = []\n"
        "os.register_at_fork(before=lambda: forks.append(1))\n"
        "from kbflow.embed.openvino import import_openvino\n"
        "import_openvino()\n"
        "import time; time.sleep(0.5)\n"
        "tm = sys.modules['openvino.tools.ovc.telemetry_utils'].tm\n"
        "print(tm.__name__, len(forks))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=os.environ)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["openvino.tools.ovc.telemetry_stub", "0"]
    assert "fork" not in out.stderr


def test_openvino_compiles_on_the_first_batch_not_for_a_processs_queries(monkeypatch):
    pytest.importorskip("openvino")
    from kbflow.embed import openvino
    from kbflow.embed.onnx import QUERY_TEXTS
    from kbflow.embed.runtimes import OnnxEmbedder

    made = []
    real = openvino.OpenVinoRunner

    def counted(folder, threads):
        made.append(folder)
        return real(folder, threads)

    monkeypatch.setattr(openvino, "OpenVinoRunner", counted)
    base_id, target = resolve_model(DEFAULT_MODEL)
    lazy = OnnxEmbedder(base_id, target, quantized=False, threads=None, runtime="auto")
    queries = lazy.embed(TEXTS[:QUERY_TEXTS])  # a search's queries: onnxruntime, nothing compiled
    assert made == [] and queries.shape == (QUERY_TEXTS, 384)
    batch = lazy.embed(TEXTS)
    assert len(made) == 1  # compiled on the batch
    assert lazy.runtime == "openvino" and lazy.embed(TEXTS).shape == batch.shape and len(made) == 1  # only once
    assert np.sum(batch[:QUERY_TEXTS] * queries, axis=1).min() >= 0.9999
    OnnxEmbedder(base_id, target, quantized=False, threads=None, runtime="openvino")
    assert len(made) == 2  # asked for by name: compiled (and any error raised) when made


def test_bf16_stores_the_models_vectors_and_auto_runs_it_only_where_it_is_fast(embedders, monkeypatch, caplog):
    """bfloat16 products move a vector by about 2e-5 cosine: ``bf16`` stores it as the model's own; ``auto`` runs its
    batches in bfloat16 only where this CPU multiplies it fast and no fp32 runtime is named; ``onnx`` never does."""
    from kbflow.embed import bf16
    from kbflow.embed.onnx import QUERY_TEXTS
    from kbflow.embed.openvino import RUNTIME_ENV
    from kbflow.embed.runtimes import BF16, OnnxEmbedder

    half = get_embedder(DEFAULT_MODEL, None, "bf16")
    assert half.model_id == DEFAULT_MODEL and half._onnx.runtime == BF16
    ref, got = embedders["torch"].embed(TEXTS), half.embed(TEXTS)
    assert got.dtype == np.float32 and np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert np.sum(ref * got, axis=1).min() >= 0.9999
    assert not np.allclose(got, ref, atol=1e-5)  # close, yet bfloat16 did run
    assert [n for n in os.listdir(half._onnx.folder) if n.startswith(f"{BF16}-")]  # its check passed, once
    assert half._onnx._run_for(QUERY_TEXTS) != half._onnx.run  # a search's query runs on onnxruntime
    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"]  # bounded before the first product: a flat RSS
    base_id, target = resolve_model(DEFAULT_MODEL)

    def runtime(**kwargs) -> str:
        return OnnxEmbedder(base_id, target, quantized=False, threads=None, **kwargs).runtime

    monkeypatch.setattr(bf16, "fast", lambda: False)
    assert runtime(bf16=True) != BF16
    with caplog.at_level("WARNING"):
        assert runtime(runtime=BF16) == BF16  # named: it runs, and says it is slower here
    assert "bf16 backend runs slower here than onnx" in caplog.text
    monkeypatch.setattr(bf16, "fast", lambda: True)
    assert runtime(bf16=True) == BF16 and runtime() != BF16
    monkeypatch.setenv(RUNTIME_ENV, "onnxruntime")
    assert runtime(bf16=True) == "onnxruntime" and runtime(runtime=BF16) == BF16  # the bf16 backend: always


def test_bf16_weights_cast_once_give_the_vectors_autocast_gives():
    """The runner casts its linear layers to bfloat16 when it loads the model; the products round them so under
    autocast anyway, so the vectors are exactly those of the fp32 model under autocast, and the norms stay fp32."""
    import torch

    from kbflow.embed.bf16 import Bf16Runner
    from kbflow.embed.models import load_model

    base_id, target = resolve_model(DEFAULT_MODEL)
    runner = Bf16Runner(base_id, target, threads=None)
    linears = [m for m in runner.model.modules() if isinstance(m, torch.nn.Linear)]
    norms = [m for m in runner.model.modules() if isinstance(m, torch.nn.LayerNorm)]
    assert linears and all(m.weight.dtype == torch.bfloat16 for m in linears)
    assert norms and all(m.weight.dtype == torch.float32 for m in norms)
    fp32 = load_model("SentenceTransformer", base_id, target, "embedding model").eval()
    feeds = {k: v.numpy() for k, v in fp32.tokenizer(TEXTS[:3], padding=True, return_tensors="pt").items()}
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        expected = fp32({k: torch.from_numpy(v) for k, v in feeds.items()})["sentence_embedding"].float().numpy()
    assert np.array_equal(runner.run(feeds), expected)


def test_bf16_that_fails_falls_back_to_fp32_unless_asked_for(monkeypatch, caplog):
    from kbflow.embed import bf16
    from kbflow.embed.runtimes import BF16, OnnxEmbedder

    class Broken:
        def __init__(self, model_id, target, threads):
            raise EmbedError(f"cannot load embedding model {model_id!r} (RuntimeError: no bfloat16 kernels)")

    monkeypatch.setattr(bf16, "Bf16Runner", Broken)
    monkeypatch.setattr(bf16, "fast", lambda: True)
    base_id, target = resolve_model(DEFAULT_MODEL)
    with caplog.at_level("WARNING"):
        auto = OnnxEmbedder(base_id, target, quantized=False, threads=None, bf16=True)
        assert auto.runtime != BF16 and auto.embed(TEXTS).shape == (len(TEXTS), 384)
    assert "no bfloat16 kernels" in caplog.text and "batches in fp32 instead" in caplog.text
    named = OnnxEmbedder(base_id, target, quantized=False, threads=None, runtime=BF16)
    assert named.embed(TEXTS[:1]).shape == (1, 384)  # a query: onnxruntime, nothing loaded yet
    with pytest.raises(EmbedError, match="no bfloat16 kernels"):
        named.embed(TEXTS)
    with pytest.raises(ConfigError, match="onnx-int8 runs on onnxruntime only"):
        OnnxEmbedder(base_id, target, quantized=True, threads=None, runtime=BF16)


def test_a_search_on_the_default_backend_never_imports_torch(embedders):
    """A process that only embeds queries (``kbflow search``) runs them on the export's onnxruntime session: it
    neither imports torch nor compiles OpenVINO, whatever would run the default backend's batches."""
    probe = (
        "import sys\n"
        "from kbflow.config import Settings\n"
        "from kbflow.embed.base import get_embedder\n"
        "e = get_embedder('all-MiniLM-L6-v2', None, Settings().backend)\n"
        "v = e.embed_queries(['where are ranks fused', 'bm25'])\n"
        "print(Settings().backend, v.shape, 'torch' in sys.modules, 'openvino' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "KBFLOW_BACKEND"}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["auto", "(2,", "384)", "False", "False"]


def test_openvinos_check_refuses_other_vectors_and_remembers_a_pass(tmp_path):
    from kbflow.embed.runtimes import checked

    class Runner:
        version = "0.test"

    same = np.eye(3, dtype=np.float32)
    with pytest.raises(EmbedError, match="does not reproduce onnxruntime's vectors"):
        checked(str(tmp_path), Runner(), lambda r: same, lambda: np.roll(same, 1, axis=0))
    assert not list(tmp_path.iterdir())
    checked(str(tmp_path), Runner(), lambda r: same, lambda: same)
    assert (tmp_path / "openvino-0.test.checked").exists()
    with pytest.raises(EmbedError, match="PyTorch bfloat16 0.test does not reproduce"):
        checked(str(tmp_path), Runner(), lambda r: same, lambda: np.roll(same, 1, axis=0), name="torch-bf16")
    checked(str(tmp_path), Runner(), lambda r: same, lambda: same, name="torch-bf16")
    assert (tmp_path / "torch-bf16-0.test.checked").exists()
    # a passed check is not run again
    checked(str(tmp_path), Runner(), lambda r: 1 / 0, lambda: 1 / 0)


def test_the_export_is_cached_and_checked(embedders):
    folder = embedders["onnx"]._onnx.folder
    assert folder.startswith(os.environ["KBFLOW_CACHE"])
    import json

    meta = json.load(open(os.path.join(folder, "meta.json")))
    assert meta["probe_cosine_to_torch"] >= 0.999 and meta["max_seq_length"] == 256
    # the layers are fused (one Attention op per layer of the 6), and the graph holds those ops
    assert "Attention 6" in meta["fused"]
    import onnx

    ops = {n.op_type for n in onnx.load(os.path.join(folder, "model.onnx"), load_external_data=False).graph.node}
    assert {"Attention", "SkipLayerNormalization"} <= ops and "Softmax" not in ops
    stamp = os.stat(os.path.join(folder, "model.onnx")).st_mtime_ns
    from kbflow.embed.models import resolve_model
    from kbflow.embed.onnx import export

    assert export(*resolve_model(DEFAULT_MODEL)) == folder  # found, not exported again
    assert os.stat(os.path.join(folder, "model.onnx")).st_mtime_ns == stamp


def test_a_model_onnx_cannot_run_falls_back_to_torch_but_for_int8(monkeypatch, caplog):
    import kbflow.embed.runtimes as runtimes
    from kbflow.embed.sentence_transformers import SentenceTransformerEmbedder

    def refuse(*args, **kwargs):
        raise EmbedError("the ONNX export of m does not reproduce its PyTorch vectors")

    monkeypatch.setattr(runtimes, "export", refuse)
    for backend in ("onnx", "bf16", "auto"):  # each stores torch's vectors: torch stands in
        fp32 = SentenceTransformerEmbedder(DEFAULT_MODEL, backend=backend)
        assert fp32.backend == "torch" and fp32.model_id == DEFAULT_MODEL
    assert "embedding with torch instead" in caplog.text
    with pytest.raises(EmbedError, match="does not reproduce"):
        SentenceTransformerEmbedder(DEFAULT_MODEL, backend="onnx-int8")


def test_an_unwritable_cache_is_a_clear_error(monkeypatch, tmp_path):
    from kbflow.embed import onnx as onnx_mod

    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("KBFLOW_CACHE", str(blocker))
    with pytest.raises(EmbedError, match="cannot write the ONNX export.*set KBFLOW_CACHE"):
        onnx_mod.export("m", str(tmp_path), quantized=False)


def test_switching_backends_never_mixes_vector_spaces(lake_path, docs_dir):
    from kbflow import Retriever, pipeline
    from kbflow import schema as S
    from kbflow.lake import Lake
    from kbflow.records import Source

    lake = Lake(lake_path)
    lake.register(Source("docs", "docs", str(docs_dir)))
    torch = Settings.coerce(None, lake=lake_path, backend="torch")
    pipeline.ingest(lake, torch, checks=True)
    first = Retriever.open(lake, settings=torch)
    assert first.model_id == DEFAULT_MODEL
    expected = [h.chunk_id for h in first.search("reciprocal rank fusion", k=3)]

    # the same vectors: ONNX fp32 queries the torch-built table, and finds the same hits
    onnx = Retriever.open(lake, settings={"backend": "onnx"})
    assert onnx.query_backend == "onnx" and onnx.embedder.backend == "onnx"
    assert [h.chunk_id for h in onnx.search("reciprocal rank fusion", k=3)] == expected

    # int8: the unchanged source's texts are embedded again, under their own id, and the table follows
    int8 = Settings.coerce(None, lake=lake_path, backend="onnx-int8")
    summary = pipeline.ingest(lake, int8, checks=True)
    assert all(c["passed"] for c in summary.checks), summary.checks
    spaces = set(lake.scan(S.EMBEDDINGS, [S.MODEL_ID]).column(0).to_pylist())
    assert spaces == {DEFAULT_MODEL, f"{DEFAULT_MODEL}#onnx-int8.3"}
    r = Retriever.open(lake, settings={"backend": "torch"})  # the table says int8: queries are embedded so
    assert r.model_id == f"{DEFAULT_MODEL}#onnx-int8.3" and r.query_backend == "onnx-int8"
    hits = r.search("reciprocal rank fusion", k=3)
    assert hits[0].chunk_id == expected[0]
    # an fp32 table opened with an int8 setting is queried with fp32 vectors
    pipeline.ingest(lake, torch)
    assert Retriever.open(lake, settings={"backend": "onnx-int8"}).query_backend == "onnx"


def test_search_many_is_search_for_each_query_with_one_embedding_batch(ingested):
    from kbflow import Retriever
    from kbflow.errors import QueryError

    r = Retriever.open(ingested, settings={"retrieval": {"log_queries": False}})
    queries = ["reciprocal rank fusion", "bridges and rivers", "install kbflow"]
    for mode in ("hybrid", "dense", "bm25"):
        many = r.search_many(queries, k=3, mode=mode, scope="proj")
        for q, hits in zip(queries, many, strict=True):
            one = r.search(q, k=3, mode=mode, scope="proj")
            assert [(h.chunk_id, round(h.score, 5)) for h in hits] == [(h.chunk_id, round(h.score, 5)) for h in one]
            assert hits.query == q and hits.latency_ms > 0
            assert set(hits.timings) >= {"take", "fuse"} | ({"embed"} if mode != "bm25" else set())
    assert r.search_many([], k=3) == []
    with pytest.raises(QueryError, match="query 1: the query is empty"):
        r.search_many(["fine", " "], k=3)
    with pytest.raises(QueryError, match="list of query strings"):
        r.search_many("one string", k=3)


def test_a_graph_the_optimizer_cannot_fuse_runs_unfused(monkeypatch, tmp_path, caplog):
    from types import SimpleNamespace

    from kbflow.embed import onnx as konnx

    def bert(model_type):
        return [SimpleNamespace(auto_model=SimpleNamespace(config=SimpleNamespace(
            model_type=model_type, num_attention_heads=12, hidden_size=384)))]  # fmt: skip

    def broken(*args, **kwargs):
        raise RuntimeError("an op the fusion does not know")

    monkeypatch.setattr(konnx, "require", lambda name: SimpleNamespace(optimize_model=broken))
    assert konnx._fuse(bert("bert"), str(tmp_path / "model.onnx")) is None
    assert "an op the fusion does not know" in caplog.text and "runs unfused" in caplog.text
    caplog.clear()

    def matched_nothing(*args, **kwargs):  # the optimizer ran but fused no attention: nothing is saved
        return SimpleNamespace(get_fused_operator_statistics=lambda: {"Attention": 0, "SkipLayerNormalization": 12},
                               save_model_to_file=lambda path: pytest.fail("an unfused graph was saved"))  # fmt: skip

    monkeypatch.setattr(konnx, "require", lambda name: SimpleNamespace(optimize_model=matched_nothing))
    assert konnx._fuse(bert("bert"), str(tmp_path / "model.onnx")) is None
    assert "no attention layer matched" in caplog.text
    caplog.clear()
    assert konnx._fuse(bert("t5"), str(tmp_path / "model.onnx")) is None  # not a BERT-style encoder: not tried
    assert caplog.text == ""


def test_an_openvino_batch_that_fails_names_the_way_out(embedders):
    pytest.importorskip("openvino")
    onnx = embedders["onnx"]._onnx
    runner = onnx.run.__self__  # the OpenVinoRunner of the default backend
    bad = {"input_ids": np.zeros((2, 5, 3), dtype=np.int64)}  # no graph takes this
    with pytest.raises(EmbedError, match="KBFLOW_ONNX_RUNTIME=onnxruntime"):
        runner.run(bad)
