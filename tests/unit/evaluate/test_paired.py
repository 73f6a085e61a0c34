"""The paired test between two runs: exact on cases worked by hand, deterministic, clear errors."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from kbflow.errors import DatasetError
from kbflow.evaluate.paired import paired_runs, paired_test
from kbflow.evaluate.runs import EvalRun


def test_identical_runs_are_no_difference():
    scores = {f"q{i}": i / 10 for i in range(10)}
    t = paired_test(scores, dict(scores))
    assert (t.delta, t.ci_low, t.ci_high, t.p_value) == (0.0, 0.0, 0.0, 1.0)
    assert (t.wins, t.losses, t.ties, t.queries) == (0, 0, 10, 10)
    assert not t.significant()


def test_one_query_swing_is_never_significant():
    # a near tie on a small set: one question's best two pages swap, the mean moves by 0.011
    a = {f"q{i}": 1.0 for i in range(34)}
    b = dict(a, q7=1 / 1.58496)
    t = paired_test(a, b)
    assert t.delta == pytest.approx((1 - 1 / 1.58496) / 34)
    assert t.p_value == 1.0 and not t.significant()
    assert t.ci_low == 0.0 and t.ci_high > t.delta  # the interval reaches no difference
    assert (t.wins, t.losses, t.ties) == (1, 0, 33)
    assert "not a significant difference" in t.line()


def test_randomization_p_matches_the_exact_sign_flip_count():
    # 4 queries all won by the same margin: of the 16 sign assignments only the two
    # with all signs equal are as extreme, so the exact two-sided p is 2/16
    t = paired_test({"a": 0.5, "b": 0.5, "c": 0.5, "d": 0.5}, {"a": 0.2, "b": 0.2, "c": 0.2, "d": 0.2})
    assert t.p_value == pytest.approx(2 / 16, abs=0.01)
    assert t.ci_low == pytest.approx(0.3) and t.ci_high == pytest.approx(0.3)


def test_a_consistent_gain_is_significant_and_the_interval_excludes_zero():
    rng = random.Random(3)
    b = {f"q{i}": rng.random() for i in range(200)}
    a = {q: s + 0.05 + rng.gauss(0, 0.05) for q, s in b.items()}
    t = paired_test(a, b)
    assert t.significant() and t.p_value < 0.001
    assert 0 < t.ci_low < t.delta < t.ci_high
    assert t.mean_a - t.mean_b == pytest.approx(t.delta)
    assert "p < 0.001" in t.line() and "a significant difference" in t.line()
    # the sign of the difference follows the order of the runs; the p-value does not
    back = paired_test(b, a)
    assert back.delta == pytest.approx(-t.delta) and back.wins == t.losses


def test_noise_is_significant_about_one_time_in_twenty_and_a_seed_repeats_its_figures():
    # under "no difference" the test must reject at its level: about 5% of pure-noise pairs
    rng = random.Random(5)
    rejected = 0
    for trial in range(200):
        a = {f"q{i}": rng.random() for i in range(40)}
        b = {f"q{i}": rng.random() for i in range(40)}
        t = paired_test(a, b, rounds=1000, seed=trial)
        rejected += t.significant()
        # the interval and the test tell the same story, but for borderline cases
        if t.p_value < 0.01:
            assert t.ci_low > 0 or t.ci_high < 0
        if t.p_value > 0.2:
            assert t.ci_low < 0 < t.ci_high
    assert 2 <= rejected <= 20
    assert paired_test(a, b) == paired_test(a, b)
    assert paired_test(a, b, seed=1).p_value != paired_test(a, b, seed=2).p_value


def test_runs_on_different_queries_are_refused():
    with pytest.raises(DatasetError, match="different queries"):
        paired_test({"q1": 1.0, "q2": 0.0}, {"q1": 1.0})
    with pytest.raises(DatasetError, match="no scored queries"):
        paired_test({}, {})


def _run(config, per_query, dataset="tiny"):
    return EvalRun(
        dataset=dataset,
        split="test",
        corpus_hash="c",
        lake_version=1,
        config=config,
        metrics={},
        latency_ms={"p50": 1.0, "p95": 1.0},
        queries=len(per_query),
        per_query=per_query,
        top_docs={},
        created_at=datetime(2026, 11, 26, tzinfo=UTC),
    )


def test_stored_runs_are_tested_on_the_metric_asked():
    a = _run({"mode": "hybrid"}, {"q1": {"ndcg@10": 1.0, "mrr@10": 1.0}, "q2": {"ndcg@10": 0.5, "mrr@10": 0.5}})
    b = _run({"mode": "dense"}, {"q1": {"ndcg@10": 0.5, "mrr@10": 1.0}, "q2": {"ndcg@10": 0.5, "mrr@10": 0.5}})
    assert paired_runs(a, b).delta == pytest.approx(0.25)
    assert paired_runs(a, b, metric="mrr@10").delta == 0.0
    with pytest.raises(DatasetError, match="unknown metric 'ndcg@5'"):
        paired_runs(a, b, metric="ndcg@5")
    with pytest.raises(DatasetError, match="no per-query recall@5"):
        paired_runs(a, b, metric="recall@5")
    with pytest.raises(DatasetError, match="different datasets"):
        paired_runs(a, _run({"mode": "dense"}, b.per_query, dataset="other"))


def test_a_sweep_is_told_its_ties_with_the_best():
    from kbflow.evaluate.paired import versus_best

    rng = random.Random(7)
    best = {f"q{i}": {"ndcg@10": rng.random()} for i in range(100)}
    near = {q: {"ndcg@10": s["ndcg@10"] - (0.3 if q == "q1" else 0.0)} for q, s in best.items()}
    far = {q: {"ndcg@10": max(0.0, s["ndcg@10"] - 0.2)} for q, s in best.items()}
    runs = [_run({"w": 1}, near), _run({"w": 2}, best), _run({"w": 3}, far), _run({"w": 4}, {})]
    runs[1].metrics["ndcg@10"] = 0.5
    vs = versus_best(runs)
    assert vs[runs[1].run_id] == ""
    assert vs[runs[0].run_id] == "-0.0030 (p 1.000)"  # one query: never significant
    assert vs[runs[2].run_id].endswith("(p < 0.001)*")
    assert vs[runs[3].run_id] == "-"  # no per-query scores stored
    assert versus_best([]) == {}
