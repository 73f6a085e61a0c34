"""The "no good match" curve: the model's built-in one, moved per lake by the probe questions (confidence.py)."""

from __future__ import annotations

import pytest

from kbflow.errors import ConfigError
from kbflow.lake import Lake
from kbflow.pipeline.run import calibrate
from kbflow.retrieve.confidence import (
    NULL_MARGIN,
    THRESHOLD_RANGE,
    Calibration,
    calibration_for,
    lake_curve,
    stored_curve,
)
from kbflow.retrieve.probes import PROBES

BASE = Calibration(intercept=-9.687, slope=21.114)


def test_the_curve_moves_to_the_lake_and_keeps_its_slope():
    curve = lake_curve(BASE, [0.1, 0.2, 0.3, 0.9])  # the median, not the mean: a probe the lake answers moves little
    assert curve.slope == BASE.slope
    assert curve.threshold == pytest.approx(0.25 + NULL_MARGIN, abs=1e-3)
    assert curve.relevance(curve.threshold) == pytest.approx(0.5, abs=1e-3)
    assert lake_curve(BASE, [0.0] * 10).threshold == pytest.approx(THRESHOLD_RANGE[0], abs=1e-3)
    assert lake_curve(BASE, [0.95] * 10).threshold == pytest.approx(THRESHOLD_RANGE[1], abs=1e-3)


def test_which_curve_applies():
    stored = lake_curve(BASE, [0.2] * 5)
    assert calibration_for("sentence-transformers/all-MiniLM-L6-v2") == BASE
    assert calibration_for("sentence-transformers/all-MiniLM-L6-v2", stored=stored) == stored
    assert calibration_for("m", (-2.0, 10.0), stored=stored) == Calibration(-2.0, 10.0)  # the settings win
    assert calibration_for("unknown/model") is None
    # int8 vectors (0.997 cosine to fp32) use their model's curve, whatever the recipe's suffix
    assert calibration_for("sentence-transformers/all-MiniLM-L6-v2#onnx-int8.3") == BASE
    assert calibration_for("sentence-transformers/all-MiniLM-L6-v2#onnx-int8") == BASE
    with pytest.raises(ValueError):
        Calibration(0.0, -1.0)
    with pytest.raises(ConfigError):
        from kbflow.config import RetrievalSettings

        RetrievalSettings(calibration=(0.0, -1.0))


def test_probes_are_many_distinct_everyday_questions():
    assert len(PROBES) == len(set(PROBES)) >= 50
    assert all(p == p.strip() and 10 < len(p) < 120 for p in PROBES)


def test_a_model_without_a_curve_stores_none(ingested, fast_settings):
    lake = Lake(fast_settings.lake)
    assert calibrate(lake, fast_settings) is None  # hash:64 has no built-in curve to move
    assert stored_curve(lake, "hash:64", 1) is None


def test_a_search_says_why_it_is_flagged_or_not(ingested, fast_settings):
    """``hits.flag``: the best relevance, that hit's cosine, the curve read and its midpoint; in the REST JSON
    and back through the client's reading of it."""
    from dataclasses import replace

    from kbflow import Retriever
    from kbflow.records import FlagReason
    from kbflow.service.core import hits_dict

    for curve, expect_flagged in (((-2.0, 10.0), False), ((-50.0, 10.0), True)):  # midpoints 0.2 and 5.0
        settings = replace(fast_settings, retrieval=replace(fast_settings.retrieval, calibration=curve))
        hits = Retriever.open(fast_settings.lake, settings=settings).search("install the pump", k=3)
        flag = hits.flag
        assert flag is not None and flag.curve == "settings"
        assert flag.midpoint == pytest.approx(-curve[0] / curve[1])
        assert flag.confidence == hits.confidence and flag.flagged is hits.low_confidence is expect_flagged
        best = max(hits, key=lambda h: h.relevance)
        assert flag.best_cosine == pytest.approx(best.dense_score)
        assert ("<" if expect_flagged else ">=") in flag.sentence() and "the settings' curve" in flag.sentence()
        data = hits_dict(hits, 1)["flag"]
        assert data["flagged"] is expect_flagged and data["midpoint"] == flag.midpoint and data["curve"] == "settings"
        assert FlagReason.from_dict(data) == flag
    assert Retriever.open(fast_settings.lake).search("install the pump", k=3).flag is None  # hash:64: no curve


def test_a_search_naming_what_the_lake_never_mentions_is_flagged_whatever_its_cosine(ingested, fast_settings):
    """A near miss (a question about a product the lake does not hold, in the lake's own words) matches pages
    as well as a right answer does; the name it gives, which the lake never writes, flags it."""
    from dataclasses import replace

    from kbflow import Retriever
    from kbflow.records import FlagReason
    from kbflow.service.core import hits_dict

    settings = replace(fast_settings, retrieval=replace(fast_settings.retrieval, calibration=(-2.0, 10.0)))
    retriever = Retriever.open(fast_settings.lake, settings=settings)
    plain = retriever.search("How do I install the pump?", k=3)
    assert not plain.low_confidence and plain.flag.unknown == ()  # midpoint 0.2: not flagged by its cosine
    named = retriever.search("How do I install the Grundfos pump?", k=3)
    assert named.flag.unknown == ("Grundfos",) and named.flag.flagged and named.low_confidence
    assert named.confidence == named.flag.confidence >= 0.5  # its relevance is as high as ever: the name flags it
    assert "no document found mentions Grundfos" in named.flag.sentence()
    data = hits_dict(named, 1)["flag"]
    assert data["flagged"] is True and data["unknown_names"] == ["Grundfos"]
    assert FlagReason.from_dict(data) == named.flag
    # a name the lake writes (a heading of its guide) flags nothing
    assert retriever.search("Which legs does Fusion combine in the guide?", k=3).flag.unknown == ()


def test_a_name_another_document_writes_in_passing_still_flags_a_search_that_finds_none_of_them(
    ingested, fast_settings, tmp_path
):
    """A filing that names a competitor does not answer a question about the competitor: the name counts only
    where the first hits' documents write it (a record of the lake writes "Turkey"; the guide does not)."""
    from dataclasses import replace

    from kbflow import Retriever

    settings = replace(fast_settings, retrieval=replace(fast_settings.retrieval, calibration=(-2.0, 10.0)))
    retriever = Retriever.open(fast_settings.lake, settings=settings)
    assert retriever.table.holds("Turkey")
    found = retriever.search("How do I install the pump sold in Turkey?", k=1, kinds=["doc"])
    assert [h.citation.locator.path for h in found] == ["guide.md"]
    assert found.flag.unknown == ("Turkey",) and found.low_confidence
    near = retriever.search("Which bridge in Turkey has the longest span?", k=1, kinds=["record"])
    assert near.flag.unknown == ()  # the record that writes it is the hit
    # a document the request leaves out (its filters, its scope) says nothing of the name either
    kept_out = retriever.search("Which bridge in Turkey has the longest span?", k=3, source_ids=["docs", "repo"])
    assert kept_out.flag.unknown == ("Turkey",)
    # nor does another scope's: the flag tells a scoped caller nothing of what the documents it cannot see hold
    from kbflow import pipeline
    from kbflow.lake import Lake
    from kbflow.records import Source

    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "plan.md").write_text("# Plan\n\nThe Zanzibar bridge opens in spring.\n")
    lake = Lake(fast_settings.lake)
    lake.register(Source("secret", "docs", str(secret), scope="vault"))
    assert pipeline.ingest(lake, fast_settings).ok
    retriever = Retriever.open(fast_settings.lake, settings=settings)
    assert retriever.table.holds("Zanzibar")
    unseen = retriever.search("When does the Zanzibar bridge open?", k=3, scope="proj")
    assert unseen and "vault" not in {h.scope for h in unseen} and unseen.flag.unknown == ("Zanzibar",)
    seen = retriever.search("When does the Zanzibar bridge open?", k=3, scope="vault")
    assert seen[0].citation.locator.path == "plan.md" and seen.flag.unknown == ()
