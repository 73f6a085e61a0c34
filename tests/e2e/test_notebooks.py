"""The notebooks run headless (nbclient) on small data, and are committed without outputs."""

from __future__ import annotations

import pytest
from conftest import REPO

NOTEBOOKS = REPO / "notebooks"


def _run(name: str, timeout: int = 600):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
    )
    client.execute()  # raises CellExecutionError naming the failing cell
    return nb


def _text(nb) -> str:
    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            out.append(o.get("text", "") or data.get("text/plain", ""))
            out.append(data.get("text/html", ""))
    return "\n".join(out)


@pytest.mark.parametrize("name", ["quickstart.ipynb", "evaluate_retrieval.ipynb", "langchain_agent.ipynb"])
def test_committed_without_outputs(name):
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(not c.outputs and c.execution_count is None for c in code)


def test_quickstart_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("KBFLOW_NOTEBOOK_LAKE", str(tmp_path / "lake"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    text = _text(_run("quickstart.ipynb"))
    assert "minisearch/fusion.py" in text  # the known question lands on the right file
    assert "'docs': 'updated'" in text and "faq.md" in text
    assert "kbflow-guide.pdf p.1" in text  # hit.show(): the PDF hit's page, its regions outlined
    assert 'class="region"' in text and "data:image/png;base64," in text


def test_evaluate_retrieval_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("KBFLOW_EVAL_HOME", str(tmp_path / "eval"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    nb = _run("evaluate_retrieval.ipynb")
    text = _text(nb)
    assert "minieval: 16 judged queries" in text and "runs stored" in text
    assert "hybrid against dense: A - B:" in text and "paired randomization" in text
    images = [o for c in nb.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert images, "the sweep plot is shown"


def test_the_langchain_agent_answers_with_citations_that_resolve(tmp_path, monkeypatch):
    monkeypatch.setenv("KBFLOW_NOTEBOOK_LAKE", str(tmp_path / "lake"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    text = _text(_run("langchain_agent.ipynb"))
    assert "[" in text and ".md" in text  # the answer cites each passage by its label
    assert text.count("resolved:") == 3
