"""kbflow's retriever inside LangChain, LlamaIndex and Haystack, with the frameworks' real packages: LangChain's own
standard retriever tests, a retriever tool, a LlamaIndex query engine with its mock LLM, a Haystack pipeline saved
to YAML and loaded back; each answering exactly as Retriever.search, with citations that resolve, over a lake and
over a server."""

from __future__ import annotations

import asyncio
import functools
import tempfile
from pathlib import Path

import pytest
from conftest import FAST_MODEL
from langchain_tests.integration_tests import RetrieversIntegrationTests
from support import Server

from kbflow import Retriever, resolve
from kbflow.config import Settings
from kbflow.errors import LakeNotFoundError
from kbflow.integrations.haystack import KbflowRetriever as HaystackRetriever
from kbflow.integrations.langchain import KbflowRetriever as LangChainRetriever
from kbflow.integrations.llama_index import KbflowRetriever as LlamaRetriever
from kbflow.integrations.searcher import citation_from_metadata
from kbflow.lake import Lake
from kbflow.pipeline import ingest
from kbflow.records import Source
from kbflow.service.core import Service

QUERY = "how are ranks fused"
OFF_TOPIC = "what is the recipe for a lemon meringue pie"


@functools.cache
def lake_uri() -> str:
    """A lake of a dozen Markdown pages (built once per session; the hashing embedder)."""
    root = Path(tempfile.mkdtemp(prefix="kbflow-integrations-"))
    docs = root / "docs"
    docs.mkdir()
    for i in range(12):
        (docs / f"page{i}.md").write_text(
            f"# Fusion note {i}\n\nRanks from the dense and keyword legs are fused by reciprocal rank fusion, "
            f"with k = {60 + i}. Scores of each leg are normalized first in variant {i}.\n"
        )
    lake = Lake(str(root / "lake"))
    lake.register(Source("docs", "docs", str(docs), scope="acme"))
    assert ingest(lake, Settings.coerce(None, lake=lake.uri, model=FAST_MODEL)).ok
    return lake.uri


def expected(k: int, query: str = QUERY) -> list[str]:
    return [h.chunk_id for h in Retriever.open(lake_uri()).search(query, k)]


# --- LangChain ---------------------------------------------------------------------------------------------
class TestLangChainStandard(RetrieversIntegrationTests):
    """LangChain's own tests for retriever integrations (langchain-tests, pinned in the dev extra)."""

    @property
    def retriever_constructor(self) -> type[LangChainRetriever]:
        return LangChainRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        return {"lake": lake_uri(), "k": 5}

    @property
    def retriever_query_example(self) -> str:
        return QUERY


def test_langchain_documents_carry_the_hits_and_their_citations():
    retriever = LangChainRetriever(lake=lake_uri(), k=4)
    docs = retriever.invoke(QUERY)
    assert [d.id for d in docs] == expected(4)
    assert [d.id for d in retriever.invoke(QUERY, k=2)] == expected(2)
    first = docs[0]
    assert set(first.metadata) >= {"citation", "score", "relevance", "low_confidence", "scope", "label", "role"}
    assert first.metadata["scope"] == "acme" and first.metadata["citation"]["label"] == first.metadata["label"]
    assert resolve(citation_from_metadata(first.metadata), lake=Lake(lake_uri())) == first.page_content
    # options by name, as Retriever.search takes them
    assert LangChainRetriever(lake=lake_uri(), k=3, mode="bm25").invoke(QUERY)[0].id == expected_mode("bm25")


def expected_mode(mode: str) -> str:
    return Retriever.open(lake_uri()).search(QUERY, 3, mode=mode)[0].chunk_id


def test_no_good_match_is_in_the_metadata_never_an_empty_list():
    docs = LangChainRetriever(lake=lake_uri(), k=3).invoke(OFF_TOPIC)
    hits = Retriever.open(lake_uri()).search(OFF_TOPIC, 3)
    assert docs and all(d.metadata["low_confidence"] == hits.low_confidence for d in docs)


def test_the_retriever_is_a_langchain_tool():
    from langchain_core.tools import create_retriever_tool

    tool = create_retriever_tool(LangChainRetriever(lake=lake_uri(), k=2), "kbflow_search", "Search the team's notes")
    answer = tool.invoke({"query": QUERY})
    assert "reciprocal rank fusion" in answer


def test_a_missing_lake_raises_kbflows_own_error(tmp_path):
    with pytest.raises(LakeNotFoundError):
        LangChainRetriever(lake=str(tmp_path / "nowhere")).invoke(QUERY)
    with pytest.raises(LakeNotFoundError):
        LlamaRetriever(str(tmp_path / "nowhere")).retrieve(QUERY)
    with pytest.raises(LakeNotFoundError):
        HaystackRetriever(lake=str(tmp_path / "nowhere")).run(query=QUERY)


def test_over_a_server_invoke_and_a_truly_async_ainvoke_answer_the_same():
    settings = Settings.coerce(None, lake=lake_uri(), model=FAST_MODEL)
    with Server(Service(Lake(lake_uri()), settings)) as server:
        remote = LangChainRetriever(url=server.url, k=3)
        assert [d.id for d in remote.invoke(QUERY)] == expected(3)

        async def both():
            return await asyncio.gather(remote.ainvoke(QUERY), remote.ainvoke(QUERY, k=1))

        three, one = asyncio.run(both())
        assert [d.id for d in three] == expected(3) and [d.id for d in one] == expected(1)
        assert [n.node.node_id for n in LlamaRetriever(url=server.url, similarity_top_k=3).retrieve(QUERY)] == expected(
            3
        )


# --- LlamaIndex ----------------------------------------------------------------------------------------------
def test_llama_index_nodes_and_a_query_engine_with_the_mock_llm():
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine

    retriever = LlamaRetriever(lake_uri(), similarity_top_k=3)
    nodes = retriever.retrieve(QUERY)
    assert [n.node.node_id for n in nodes] == expected(3)
    assert nodes[0].score == Retriever.open(lake_uri()).search(QUERY, 3)[0].score
    response = RetrieverQueryEngine.from_args(retriever, llm=MockLLM()).query(QUERY)
    sources = response.source_nodes
    assert [s.node.node_id for s in sources] == expected(3)
    for source in sources:
        citation = citation_from_metadata(source.node.metadata)
        assert resolve(citation, lake=Lake(lake_uri())) == source.node.text
    # what the LLM reads is the text, not the citation's JSON
    assert "locator" not in nodes[0].node.get_content(metadata_mode="llm")


# --- Haystack ------------------------------------------------------------------------------------------------
def test_haystack_component_in_a_pipeline_saved_to_yaml_and_loaded_back():
    from haystack import Pipeline

    component = HaystackRetriever(lake=lake_uri(), top_k=3)
    documents = component.run(query=QUERY)["documents"]
    assert [d.id for d in documents] == expected(3)
    assert documents[0].meta["citation"]["source_id"] == "docs" and documents[0].score is not None
    pipeline = Pipeline()
    pipeline.add_component("kbflow", component)
    loaded = Pipeline.loads(pipeline.dumps(), allowed_modules=["kbflow.integrations.haystack"])
    out = loaded.run({"kbflow": {"query": QUERY, "top_k": 2}})
    assert [d.id for d in out["kbflow"]["documents"]] == expected(2)
    filtered = component.run(query=QUERY, filters={"field": "meta.scope", "operator": "==", "value": "acme"})
    assert [d.id for d in filtered["documents"]] == expected(3)
    assert component.run(query=QUERY, filters={"source_types": ["docs"]})["documents"]


@pytest.mark.parametrize(
    "module, blocked, extra",
    [
        ("kbflow.integrations.langchain", "langchain_core", "langchain"),
        ("kbflow.integrations.llama_index", "llama_index", "llamaindex"),
        ("kbflow.integrations.haystack", "haystack", "haystack"),
    ],
)
def test_a_missing_framework_names_its_extra_and_kbflow_imports_none(monkeypatch, module, blocked, extra):
    import importlib
    import subprocess
    import sys

    from kbflow.errors import MissingDependencyError

    for name in [n for n in sys.modules if n == blocked or n.startswith(blocked + ".")]:
        monkeypatch.setitem(sys.modules, name, None)  # the framework is not installed
    monkeypatch.setitem(sys.modules, blocked, None)
    monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(MissingDependencyError, match=rf"kbflow\[{extra}\]"):
        importlib.import_module(module)
    code = "import sys, kbflow, kbflow.integrations; print(sorted(m for m in sys.modules if m.startswith(%r)))"
    done = subprocess.run([sys.executable, "-c", code % blocked], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
