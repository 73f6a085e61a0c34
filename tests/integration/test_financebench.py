"""FinanceBench-style folders (questions.jsonl + pdfs/) evaluated as they come, judged by page."""

from __future__ import annotations

import importlib.util
import json

import pytest
from click.testing import CliRunner
from conftest import SAMPLES

from kbflow.errors import DatasetError
from kbflow.evaluate.beir import load_beir


def _make_pdf():
    spec = importlib.util.spec_from_file_location("make_pdf", SAMPLES / "make_pdf.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _folder(tmp_path):
    make_pdf = _make_pdf()
    root = tmp_path / "fb"
    (root / "pdfs").mkdir(parents=True)
    (root / "pdfs" / "ACME_2022_10K.pdf").write_bytes(
        make_pdf.build(
            pages=[
                [(11, "Acme annual report 2022, table of contents.")],
                [(11, "Capital expenditure of Acme in fiscal 2022 was 412 million dollars.")],
                [(11, "Risk factors: weather, suppliers and currency.")],
            ]
        )
    )
    (root / "pdfs" / "BETA_2021_10K.pdf").write_bytes(
        make_pdf.build(
            pages=[
                [(11, "Beta annual report 2021.")],
                [(11, "Beta operating margin fell from 21 percent to 18 percent in 2021.")],
            ]
        )
    )
    rows = [
        {"financebench_id": "fb1", "question": "What was Acme's FY2022 capital expenditure?",
         "question_type": "metrics-generated", "evidence": [{"doc_name": "ACME_2022_10K", "evidence_page_num": 1}]},
        {"financebench_id": "fb2", "question": "Is Beta's operating margin improving in 2021?",
         "question_type": "domain-relevant", "evidence": [{"doc_name": "BETA_2021_10K", "evidence_page_num": 1}]},
    ]  # fmt: skip
    (root / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def test_a_financebench_folder_is_a_dataset_judged_by_page(tmp_path):
    root = _folder(tmp_path)
    dataset = load_beir(str(root))
    assert dataset.unit == "page" and dataset.sources[0]["type"] == "pdf"
    assert dataset.qrels == {"fb1": {"ACME_2022_10K.pdf#p2": 2}, "fb2": {"BETA_2021_10K.pdf#p2": 2}}
    assert dataset.groups == {"fb1": "metrics-generated", "fb2": "domain-relevant"}
    assert dataset.negatives == []
    # questions the filings cannot answer, beside them, are read for the flag as a BEIR folder's are
    (root / "negatives.jsonl").write_text(json.dumps({"_id": "n1", "text": "What was Gamma's FY2022 revenue?"}) + "\n")
    assert load_beir(str(root)).negatives == ["What was Gamma's FY2022 revenue?"]


def test_kbflow_eval_reports_pages_documents_and_question_types(tmp_path, monkeypatch):
    from kbflow.cli.eval import eval_command

    root = _folder(tmp_path)
    monkeypatch.setenv("KBFLOW_MODEL", "hash:64")
    out = CliRunner().invoke(
        eval_command, [str(root), "--mode", "bm25", "--eval-lake", str(tmp_path / "lake")], catch_exceptions=False
    )
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert any(line.startswith("bm25 (") and line.endswith("): pages judged, by question type") for line in lines)
    report = {line.split()[0]: line for line in lines if "right document in top 5" in line}
    assert set(report) == {"domain-relevant", "metrics-generated", "all"}
    assert "hit@5 1.000" in report["all"] and "right document in top 5 1.000" in report["all"]


@pytest.mark.parametrize(
    "evidence, message",
    [
        ([{"doc_name": "ACME_2022_10K"}], "evidence_page_num"),
        ([{"doc_name": "GONE_2020_10K", "evidence_page_num": 3}], "GONE_2020_10K.pdf, which is not in"),
    ],
)
def test_bad_evidence_names_the_line(tmp_path, evidence, message):
    root = _folder(tmp_path)
    row = {"financebench_id": "x", "question": "q", "evidence": evidence}
    with open(root / "questions.jsonl", "a") as fh:
        fh.write(json.dumps(row) + "\n")
    with pytest.raises(DatasetError, match=f"questions.jsonl:3: .*{message}"):
        load_beir(str(root))
