"""Is a difference between two runs real? A paired test over the same judged queries.

Two configurations evaluated on one dataset give each query two scores. On
small sets (34 FinanceBench questions, 56 codesearch questions) one query
whose best two documents swap places moves the mean nDCG@10 by 0.01, so a
mean alone cannot tell a real change from a near tie. :func:`paired_test`
gives, for the per-query differences ``a - b``:

- a two-sided **paired randomization test** (Fisher's sign-flip test, the
  test Smucker et al. recommend for IR): under "no difference" each query's
  difference is as likely positive as negative, so the p-value is the share
  of random sign assignments whose mean is at least as far from 0 as the
  observed one;
- a 95% **bootstrap interval** of the mean difference (queries resampled with
  replacement, percentile interval);
- how many queries each run wins, loses and ties.

Both use a fixed seed, so the same runs give the same figures. Pure numpy on
scores already stored with each run (:class:`~kbflow.evaluate.runs.EvalRun`):
nothing is re-run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kbflow._lazy import require
from kbflow.errors import DatasetError

__all__ = ["PairedTest", "paired_runs", "paired_test", "versus_best"]

#: rounds of the randomization test and of the bootstrap
ROUNDS = 10_000
#: rounds drawn at once: bounds memory at BLOCK x queries
BLOCK = 500
#: differences smaller than this are ties (metric values are means of ranx floats)
TIE = 1e-9


@dataclass(frozen=True)
class PairedTest:
    """Run ``a`` against run ``b`` on the same queries, for one metric."""

    metric: str
    queries: int
    mean_a: float
    mean_b: float
    #: mean of the per-query differences a - b (= mean_a - mean_b)
    delta: float
    #: 95% bootstrap interval of ``delta``
    ci_low: float
    ci_high: float
    #: two-sided paired randomization test of "no difference"
    p_value: float
    wins: int
    losses: int
    ties: int
    rounds: int = ROUNDS

    def significant(self, alpha: float = 0.05) -> bool:
        """Whether the randomization test rejects "no difference" at level ``alpha``."""
        return self.p_value < alpha

    def line(self) -> str:
        """One line for a terminal: the difference, its interval, the p-value and the verdict."""
        verdict = "a significant difference" if self.significant() else "not a significant difference"
        p = "p < 0.001" if self.p_value < 0.001 else f"p = {self.p_value:.3f}"
        return (
            f"A - B: {self.delta:+.4f} (95% CI {self.ci_low:+.4f} to {self.ci_high:+.4f}), paired randomization "
            f"{p} over {self.queries} queries ({self.wins} won, {self.losses} lost, "
            f"{self.ties} tied): {verdict} at 0.05"
        )

    def cell(self) -> str:
        """A table cell: the difference and its p-value, ``*`` where significant (``-0.0089 (p 0.012)*``)."""
        p = "< 0.001" if self.p_value < 0.001 else f"{self.p_value:.3f}"
        return f"{self.delta:+.4f} (p {p})" + ("*" if self.significant() else "")

    def to_json(self) -> dict[str, float | int | str | bool]:
        return {
            "metric": self.metric,
            "queries": self.queries,
            "mean_a": self.mean_a,
            "mean_b": self.mean_b,
            "delta": self.delta,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "p_value": self.p_value,
            "significant": self.significant(),
            "wins": self.wins,
            "losses": self.losses,
            "ties": self.ties,
            "rounds": self.rounds,
        }


def paired_test(
    a: Mapping[str, float],
    b: Mapping[str, float],
    metric: str = "ndcg@10",
    rounds: int = ROUNDS,
    seed: int = 0,
) -> PairedTest:
    """Test per-query scores ``a`` against ``b`` (``{query id: score}``, the same queries).

    Raises
    ------
    DatasetError
        The two runs were scored on different queries, or on none.
    """
    np = require("numpy")
    if set(a) != set(b):
        only = sorted(set(a) ^ set(b))
        raise DatasetError(
            f"the runs were scored on different queries ({len(only)} in one only, e.g. {only[:3]}); "
            "compare runs of the same dataset, split and --limit"
        )
    if not a:
        raise DatasetError("the runs have no scored queries to compare")
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    keys = sorted(a)
    xa = np.array([a[k] for k in keys], dtype=np.float64)
    xb = np.array([b[k] for k in keys], dtype=np.float64)
    d = xa - xb
    d[np.abs(d) < TIE] = 0.0
    rng = np.random.default_rng(seed)
    low, high = _bootstrap(np, rng, d, rounds)
    return PairedTest(
        metric=metric,
        queries=len(keys),
        mean_a=float(xa.mean()),
        mean_b=float(xb.mean()),
        delta=float(d.mean()),
        ci_low=low,
        ci_high=high,
        p_value=_randomization(np, rng, d, rounds),
        wins=int((d > 0).sum()),
        losses=int((d < 0).sum()),
        ties=int((d == 0).sum()),
        rounds=rounds,
    )


def _randomization(np, rng, d, rounds: int) -> float:
    """Two-sided sign-flip p-value, counting the observed assignment (never 0)."""
    observed = abs(d.mean())
    if observed == 0.0:
        return 1.0
    n, extreme, done = len(d), 0, 0
    while done < rounds:
        m = min(BLOCK, rounds - done)
        signs = rng.integers(0, 2, size=(m, n), dtype=np.int8) * 2 - 1
        means = np.abs(signs @ d) / n
        extreme += int((means >= observed - 1e-12).sum())
        done += m
    return (extreme + 1) / (rounds + 1)


def _bootstrap(np, rng, d, rounds: int) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of the mean of ``d`` over resampled queries."""
    n, means = len(d), []
    done = 0
    while done < rounds:
        m = min(BLOCK, rounds - done)
        idx = rng.integers(0, n, size=(m, n))
        means.append(d[idx].mean(axis=1))
        done += m
    low, high = np.percentile(np.concatenate(means), [2.5, 97.5])
    return float(low), float(high)


def paired_runs(a, b, metric: str = "ndcg@10", rounds: int = ROUNDS, seed: int = 0) -> PairedTest:
    """:func:`paired_test` of two stored runs (:class:`~kbflow.evaluate.runs.EvalRun`) on ``metric``.

    Raises
    ------
    DatasetError
        The runs are of different datasets or splits, were scored on different
        queries, or ``metric`` is not one ``kbflow eval`` reports (or stored).
    """
    from kbflow.evaluate.runs import comparable

    comparable(a, b, metric)
    scores = []
    for run in (a, b):
        got = {q: s.get(metric) for q, s in run.per_query.items()}
        if any(v is None for v in got.values()):
            raise DatasetError(f"run {run.run_id} has no per-query {metric} (stored before kbflow reported it)")
        scores.append(got)
    scores_a, scores_b = scores
    return paired_test(scores_a, scores_b, metric=metric, rounds=rounds, seed=seed)


def versus_best(runs, metric: str = "ndcg@10") -> dict[str, str]:
    """For a sweep: each run's :meth:`PairedTest.cell` against the run with the best ``metric`` (run id ->
    cell; ``""`` for the best itself, ``"-"`` where no test applies: no per-query scores, other queries)."""
    if not runs:
        return {}
    best = max(runs, key=lambda r: r.metrics.get(metric) or 0.0)
    out = {}
    for r in runs:
        if r is best:
            out[r.run_id] = ""
            continue
        try:
            out[r.run_id] = paired_runs(r, best, metric=metric).cell()
        except DatasetError:
            out[r.run_id] = "-"
    return out
