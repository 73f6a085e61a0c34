"""The "no good match" flag measured on a dataset (kbflow.evaluate.flag) and its negatives (kbflow.evaluate.beir)."""

from __future__ import annotations

import json

import pytest

from kbflow.errors import DatasetError
from kbflow.evaluate.beir import load_beir
from kbflow.evaluate.flag import FlagErrors, flag_errors
from kbflow.records import Citation, Hit, Hits, Locator
from kbflow.retrieve.confidence import Calibration


def _dataset(tmp_path, negatives: list[str] | None, spec_negatives: str | None = None):
    root = tmp_path / "set"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "text": "x"}) + "\n")
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": f"question {q}"}) + "\n" for q in ("q1", "q2", "q3"))
    )
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td1\t1\nq3\td2\t1\n")
    if negatives is not None:
        (root / "negatives.jsonl").write_text(
            "".join(json.dumps({"_id": f"n{i}", "text": t}) + "\n" for i, t in enumerate(negatives))
        )
    return root


class _Retriever:
    """Answers q1 well, q2 weakly (a right answer flagged), q3 wrongly; negatives: one matched too well."""

    calibration = Calibration(-10.0, 20.0)  # flags below cosine 0.5

    def search_many(self, texts, k):
        cos = {"question q1": 0.8, "question q2": 0.4, "question q3": 0.9, "cake": 0.2, "tax": 0.7}
        out = []
        for text in texts:
            hit = Hit(1, 1.0, "d1" if text != "question q3" else "other", "t", Citation("s", "jsonl", "/c",
                      Locator("record", record_id="d1")), "record", "global",
                      dense_score=cos[text], relevance=self.calibration.relevance(cos[text]))  # fmt: skip
            hits = Hits([hit])
            hits.confidence = hit.relevance
            out.append(hits)
        return out


def test_both_error_rates(tmp_path):
    dataset = load_beir(str(_dataset(tmp_path, ["cake", "tax"])))
    assert dataset.negatives == ["cake", "tax"]
    errors = flag_errors(_Retriever(), dataset, {"d1": "d1", "other": "d9"})
    assert errors == FlagErrors(answered=2, fired_on_answered=1, negatives=2, silent_on_negatives=1, threshold=0.5)
    assert errors.fired_rate == 0.5 and errors.silent_rate == 0.5
    assert "fired above a right answer on 1/2" in errors.line() and "silent on 1/2" in errors.line()


def test_no_negatives_or_no_curve_measures_nothing(tmp_path):
    dataset = load_beir(str(_dataset(tmp_path, None)))
    assert dataset.negatives == [] and flag_errors(_Retriever(), dataset, {}) is None
    uncalibrated = _Retriever()
    uncalibrated.calibration = None
    assert flag_errors(uncalibrated, load_beir(str(_dataset(tmp_path / "b", ["cake"]))), {}) is None


def test_sources_json_names_its_negatives(tmp_path):
    root = tmp_path / "site"
    (root / "qrels").mkdir(parents=True)
    (root / "pages").mkdir()
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "how"}) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\ta.html\t2\n")
    (tmp_path / "shared-negatives.jsonl").write_text(json.dumps({"_id": "n1", "text": "off topic"}) + "\n")
    spec = {"name": "site", "unit": "page", "sources": [{"id": "s", "type": "web", "path": "pages"}]}
    (root / "sources.json").write_text(json.dumps({**spec, "negatives": "../shared-negatives.jsonl"}))
    assert load_beir(str(root)).negatives == ["off topic"]
    (root / "sources.json").write_text(json.dumps({**spec, "negatives": "../missing.jsonl"}))
    with pytest.raises(DatasetError, match="missing.jsonl does not exist"):
        load_beir(str(root))
