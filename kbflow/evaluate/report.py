"""Sweep reports: stored runs as a DataFrame, a Markdown table and a PNG plot.

Used by the Dagster ``eval_summary`` asset (its materialization metadata)
and by ``notebooks/evaluate_retrieval.ipynb``::

    from kbflow.evaluate.report import runs_frame, markdown_table, plot_runs
    runs, _ = evaluate_dataset(dataset, configs, settings)
    runs_frame(runs)                       # one row per run, best first
    print(markdown_table(runs))
    png = plot_runs(runs, "sweep.png")     # also returns the PNG bytes
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence

from kbflow._lazy import require
from kbflow.evaluate.metrics import METRICS
from kbflow.evaluate.paired import versus_best
from kbflow.evaluate.runs import EvalRun
from kbflow.evaluate.sweep import config_labels

__all__ = ["markdown_table", "plot_runs", "runs_frame"]

#: the column head of each metric
_HEADS = {
    "ndcg@10": "nDCG@10",
    "recall@10": "R@10",
    "recall@100": "R@100",
    "mrr@10": "MRR@10",
    "recall@5": "R@5",
    "hit_rate@3": "hit@3",
    "hit_rate@5": "hit@5",
}


def _ranked(runs: Sequence[EvalRun], metric: str) -> list[tuple[str, EvalRun]]:
    labelled = zip(config_labels([r.config for r in runs]), runs)
    return sorted(labelled, key=lambda lr: -lr[1].metrics[metric])


def runs_frame(runs: Sequence[EvalRun], metric: str = "ndcg@10"):
    """A polars DataFrame, one row per run, best ``metric`` first: label, run id, lake version, metrics, latency."""
    pl = require("polars")
    rows = [
        {
            "config": label,
            "run_id": r.run_id,
            "dataset": r.dataset,
            "lake_version": r.lake_version,
            "lake_tag": r.lake_tag,
            **{m: r.metrics.get(m) for m in METRICS},
            "p50_ms": r.latency_ms["p50"],
            "p95_ms": r.latency_ms["p95"],
            "queries": r.queries,
        }
        for label, r in _ranked(runs, metric)
    ]
    return pl.DataFrame(rows)


def markdown_table(runs: Sequence[EvalRun], metric: str = "ndcg@10") -> str:
    """A Markdown table of ``runs``, best ``metric`` first (the best row's metric in bold), each run's
    difference from the best with its paired test's p-value (``*``: significant at 0.05,
    :mod:`kbflow.evaluate.paired`)."""
    vs = versus_best(runs, metric)
    metrics = " | ".join(_HEADS[m] for m in METRICS)
    head = f"| # | configuration | {metrics} | vs #1 (p) | p50 ms | p95 ms | search version |"
    lines = [head, "|" + "---|" * (len(METRICS) + 6)]
    for i, (label, r) in enumerate(_ranked(runs, metric), start=1):
        values = [f"{r.metrics[m]:.4f}" if r.metrics.get(m) is not None else "-" for m in METRICS]
        if i == 1:
            values[METRICS.index(metric)] = f"**{values[METRICS.index(metric)]}**"
        lines.append(
            f"| {i} | `{label}` | {' | '.join(values)} | {vs[r.run_id] or '-'} | {r.latency_ms['p50']:.1f} "
            f"| {r.latency_ms['p95']:.1f} "
            f"| {r.lake_version} |"
        )
    return "\n".join(lines)


def plot_runs(runs: Sequence[EvalRun], path: str | os.PathLike[str] | None = None, metric: str = "ndcg@10") -> bytes:
    """A horizontal bar chart of ``metric`` (bars) and Recall@10 (dots) per configuration, best on top.

    Returns the PNG bytes, and writes them to ``path`` when given.
    """
    # a bare Figure (no pyplot): no backend or display is touched, in a notebook or a Dagster run
    figure = require("matplotlib.figure")
    ranked = _ranked(runs, metric)[::-1]  # barh draws bottom-up
    labels = [label for label, _ in ranked]
    fig = figure.Figure(figsize=(8, 0.35 * len(labels) + 1.2), dpi=100)
    ax = fig.subplots()
    values = [r.metrics[metric] for _, r in ranked]
    bars = ax.barh(labels, values, color="#4C72B0", label=metric)
    ax.bar_label(bars, labels=[f"{v:.3f}" for v in values], label_type="center", color="white", fontsize=7)
    ax.plot([r.metrics["recall@10"] for _, r in ranked], labels, "o", color="#DD8452", label="recall@10")
    name = ranked[-1][1].dataset if ranked else ""
    ax.set_title(f"{name}: {len(labels)} configurations", loc="left", fontsize=10)
    ax.set_xlim(0, 1.05)
    ax.set_xlabel("score")
    ax.tick_params(axis="y", labelsize=8)
    ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=2, fontsize=8, frameon=False)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    png = buffer.getvalue()
    if path is not None:
        with open(path, "wb") as fh:
            fh.write(png)
    return png
