"""``kbflow eval``: evaluate retrieval on a BEIR dataset, run sweeps, compare stored runs."""

from __future__ import annotations

import json
import os
import sys

import click

from kbflow.config import BACKENDS, MODES
from kbflow.retrieve.fusion import FUSIONS


def _configs(settings, sweep_file: str | None, mode: str, overrides: dict) -> list[dict]:
    """The configurations to evaluate: the sweep file's grid, or each mode asked with the options given."""
    from kbflow.evaluate.configs import config_for
    from kbflow.evaluate.sweep import load_sweep

    if sweep_file:
        return load_sweep(sweep_file, settings)
    modes = MODES if mode == "all" else (mode,)
    return [config_for(settings, mode=m, **overrides) for m in modes]


def _compare(settings, dataset, compare, metric: str, top_n: int, as_json: bool) -> None:
    """``--compare``: whether two stored runs differ (a paired test), then where one wins and loses, per query."""
    from kbflow.errors import DatasetError
    from kbflow.evaluate.paired import paired_runs
    from kbflow.evaluate.runs import compare as compare_runs
    from kbflow.evaluate.runs import load_runs
    from kbflow.lake import Lake

    lake = Lake(settings.lake, create=False)
    a, b = load_runs(lake, compare)
    wins, losses = compare_runs(a, b, dataset.queries, dataset.qrels, metric=metric, n=top_n)
    try:
        test, untested = paired_runs(a, b, metric=metric), None
    except DatasetError as exc:  # different queries (a --limit run): the per-query lists still stand
        test, untested = None, f"no paired test: {exc}"
    if as_json:
        click.echo(json.dumps({"side": "test", **test.to_json()} if test else {"side": "test", "error": untested}))
        for label, rows in (("wins", wins), ("losses", losses)):
            for r in rows:
                click.echo(
                    json.dumps(
                        {
                            "side": label,
                            "query_id": r.query_id,
                            "query": r.query,
                            "a": r.a,
                            "b": r.b,
                            "top_a": r.top_a,
                            "top_b": r.top_b,
                            "relevant": r.relevant,
                        }
                    )
                )
        return
    click.echo(f"A = {a.run_id} {a.config}\nB = {b.run_id} {b.config}")
    click.echo(f"{metric}: A {a.metrics[metric]:.4f}, B {b.metrics[metric]:.4f} over {a.queries} queries")
    click.echo(test.line() if test else untested)
    for label, rows in ((f"A wins ({len(wins)} shown)", wins), (f"A loses ({len(losses)} shown)", losses)):
        click.echo(f"\n{label}")
        for r in rows:
            click.echo(f"  {r.query_id}: {r.a:.3f} vs {r.b:.3f}  {r.query[:80]}")
            click.echo(
                f"      A top: {_marked(r.top_a, r.relevant)}\n      B top: {_marked(r.top_b, r.relevant)}"
                "   (* relevant)"
            )


def _print_runs(runs, lake, dataset, swept: bool, as_json: bool, tag, limit) -> None:
    """The runs as a table (ranked by nDCG@10 for a sweep) or JSON, the page report of a FinanceBench-style set,
    and the "no good match" flag's error rates where the set has negatives."""
    if swept:
        runs = sorted(runs, key=lambda r: -r.metrics["ndcg@10"])
    if as_json:
        for r in runs:
            click.echo(json.dumps(r.to_json()))
        return
    click.echo(
        f"{dataset.name} ({dataset.split}, {runs[0].queries} queries), lake {lake.uri} "
        f"search version {runs[0].lake_version}"
    )
    from kbflow.evaluate.paired import versus_best

    for line in _table(runs, versus_best(runs) if swept else None):
        click.echo(line)
    if dataset.groups:
        from kbflow.evaluate.financebench import page_report

        for r in runs:
            for line in page_report(r, dataset):
                click.echo(line)
    if not swept:
        from kbflow.evaluate.flag import flag_report

        flag = flag_report(lake, dataset, tag=tag, limit=limit)
        if flag is not None:
            click.echo(flag.line())


def _table(runs, vs: dict[str, str] | None = None) -> list[str]:
    """One line per run; with ``vs`` (a sweep) each run's nDCG@10 difference from the best and its p-value."""
    from kbflow.evaluate.configs import slug

    head = (
        f"{'run':12s} {'mode':6s} {'fusion':6s} {'rrf_k':>5s} {'w_dense':>7s} {'w_bm25':>6s} {'depth':>5s} "
        f"{'tokens':>6s} {'cx':>2s} {'tab':>3s} {'model':>16s} {'rerank':>10s} {'doc':>4s} {'page':>4s} "
        f"{'fb':>4s} {'gloss':>8s} {'ndcg@10':>7s} {'R@5':>6s} "
        f"{'R@10':>6s} {'R@100':>6s} {'MRR@10':>6s} {'hit@3':>6s} {'p50 ms':>7s} {'p95 ms':>7s}"
    ) + ("  vs #1 (p)" if vs is not None else "")
    lines = [head]
    for r in runs:
        c, m = r.config, r.metrics

        def show(v):
            return "-" if v is None else str(v)

        lines.append(
            f"{r.run_id:12s} {c['mode']:6s} {show(c['fusion']):6s} {show(c['rrf_k']):>5s} "
            f"{show(c['dense_weight']):>7s} {show(c['bm25_weight']):>6s} {c['depth_factor']:>5d} {c['max_tokens']:>6d} "
            f"{_yes(c.get('context', True)):>2s} {_yes(c.get('tables', True)):>3s} "
            f"{slug(c['model'])[-16:]:>16s} {_reranker(c):>10s} {c.get('document_weight') or 0:4g} "
            f"{c.get('page_weight') or 0:4g} {c.get('feedback') or 0:4g} {_glossary(c):>8s} {m['ndcg@10']:7.4f} "
            f"{_num(m, 'recall@5')} "
            f"{m['recall@10']:6.4f} {m['recall@100']:6.4f} {m['mrr@10']:6.4f} {_num(m, 'hit_rate@3')} "
            f"{r.latency_ms['p50']:7.1f} {r.latency_ms['p95']:7.1f}"
            + (f"  {vs.get(r.run_id, '-')}" if vs is not None else "")
        )
    return lines


def _glossary(config) -> str:
    """The run's glossary as the table shows it: its name, a file's name, or "-" (off; runs from before it)."""
    name = config.get("glossary")
    return "-" if not name or str(name).lower() == "none" else os.path.basename(str(name))[-8:]


def _yes(value) -> str:
    return "y" if value else "n"


def _num(metrics, name: str) -> str:
    value = metrics.get(name)
    return f"{value:6.4f}" if value is not None else f"{'-':>6s}"


def _reranker(config) -> str:
    """``name@depth`` of a configuration's cross-encoder (its folder's last part), or ``-``."""
    from kbflow.evaluate.configs import slug

    model = config.get("reranker")
    return f"{slug(model)}@{config.get('rerank_depth')}"[-10:] if model else "-"


def _marked(docs: list[str], relevant: dict[str, int]) -> str:
    return " ".join(f"{d}{'*' if d in relevant else ''}" for d in docs[:5])


@click.command("eval")
@click.argument("dataset_dir", type=click.Path())
@click.option(
    "--mode",
    type=click.Choice([*MODES, "all"]),
    default="all",
    show_default=True,
    help="Mode to evaluate; 'all' evaluates each.",
)
@click.option("--split", default="test", show_default=True, help="qrels/<split>.tsv to score against.")
@click.option("--fusion", type=click.Choice(list(FUSIONS)), default=None, help="Hybrid fusion [default: convex].")
@click.option("--rrf-k", type=int, default=None, help="RRF constant [default: 60].")
@click.option("--dense-weight", type=float, default=None, help="Weight of the dense leg in fusion [default: 1.0].")
@click.option("--bm25-weight", type=float, default=None, help="Weight of the BM25 leg in fusion [default: 0.5].")
@click.option("--depth-factor", type=int, default=None, help="Candidates per leg = factor * k (>= 3) [default: 3].")
@click.option("--max-tokens", type=int, default=None, help="Chunk token budget of the lake [default: 200].")
@click.option("--context/--no-context", default=None, help="The chunk context header [default: on].")
@click.option("--tables/--no-tables", default=None, help="PDF tables as their own units [default: on].")
@click.option("--model", default=None, help="Embedding model (path or id) [default: all-MiniLM-L6-v2].")
@click.option(
    "--backend",
    type=click.Choice(BACKENDS),
    default=None,
    help="What runs the model [default: auto, bf16 where the CPU multiplies bfloat16 fast, else onnx; torch, onnx "
    "and bf16 store the same model's vectors (an eval lake keeps the ones it has), onnx-int8 its own].",
)
@click.option(
    "--rerank",
    "reranker",
    default=None,
    metavar="MODEL",
    help="Rerank the top fused candidates with this cross-encoder (local folder or model id).",
)
@click.option("--rerank-depth", type=int, default=None, help="Candidates the cross-encoder rescores [default: 50].")
@click.option(
    "--glossary",
    default=None,
    metavar="NAME|FILE",
    help="Query expansion: 'finance' (built in), a file of 'terms<TAB>expansion' lines, or 'none' [default: finance].",
)
@click.option(
    "--sweep",
    "sweep_file",
    type=click.Path(),
    default=None,
    help="A YAML grid of settings (see kbflow.evaluate.sweep); prints the configurations ranked.",
)
@click.option(
    "--compare",
    nargs=2,
    default=None,
    metavar="RUN_A RUN_B",
    help="Compare two stored runs (ids or unique prefixes) instead of evaluating: a paired test, then per query.",
)
@click.option("--metric", default="ndcg@10", show_default=True, help="Metric --compare tests and ranks queries by.")
@click.option("-n", "top_n", default=10, show_default=True, help="Queries listed each way by --compare.")
@click.option(
    "--eval-lake",
    default=None,
    metavar="URI",
    help="The dataset's lake [default: $KBFLOW_EVAL_HOME or ./data/eval, then <name>-<corpus hash>].",
)
@click.option("--tag", default=None, help="Evaluate this tagged snapshot of the dataset's lake as it is.")
@click.option("--limit", type=int, default=None, help="Only the first N judged queries (quick looks).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per configuration, one per line.")
@click.option("--progress/--no-progress", default=None, help="Progress bars on stderr (default: when a terminal).")
def eval_command(
    dataset_dir,
    mode,
    split,
    fusion,
    rrf_k,
    dense_weight,
    bm25_weight,
    depth_factor,
    max_tokens,
    context,
    tables,
    model,
    backend,
    reranker,
    rerank_depth,
    glossary,
    sweep_file,
    compare,
    metric,
    top_n,
    eval_lake,
    tag,
    limit,
    as_json,
    progress,
) -> None:
    """Evaluate retrieval on the BEIR dataset in DATASET_DIR.

    \b
    The corpus is ingested into a lake of its own (re-used while corpus.jsonl
    is unchanged), every judged query is run, and nDCG@10, Recall@10,
    Recall@100, MRR@10 (ranx) and the query latency p50/p95 are printed per
    configuration. Every run is stored in the lake's eval_runs table with the
    search-table version it was measured on. Where the folder has
    negatives.jsonl (questions the corpus cannot answer), the "no good match"
    flag's two error rates follow: fired above a right answer, silent on a
    question without one.

    \b
      kbflow eval ../shared/datasets/cranfield                   # hybrid, dense and bm25
      kbflow eval DATA --mode hybrid --fusion convex --dense-weight 0.7 --bm25-weight 0.3
      kbflow eval DATA --sweep sweep.yaml                        # a grid, ranked by nDCG@10
      kbflow eval DATA --compare 3f2a 9c1d                       # is it real? where one run wins and loses
    """
    from kbflow.config import Settings
    from kbflow.evaluate.beir import load_beir
    from kbflow.evaluate.evaluate import evaluate_dataset
    from kbflow.evaluate.lakes import eval_lake_uri

    dataset = load_beir(dataset_dir, split=split)
    settings = Settings.coerce(None, lake=eval_lake or eval_lake_uri(dataset))
    if compare:
        _compare(settings, dataset, compare, metric, top_n, as_json)
        return

    overrides = {
        "fusion": fusion,
        "rrf_k": rrf_k,
        "dense_weight": dense_weight,
        "bm25_weight": bm25_weight,
        "depth_factor": depth_factor,
        "max_tokens": max_tokens,
        "model": model,
        "backend": backend,
        "reranker": reranker,
        "rerank_depth": rerank_depth,
        "context": context,
        "tables": tables,
        "glossary": glossary,
    }
    configs = _configs(settings, sweep_file, mode, overrides)
    show = sys.stderr.isatty() if progress is None else progress
    runs, lake = evaluate_dataset(
        dataset,
        configs,
        settings,
        lake=settings.lake,
        tag=tag,
        limit=limit,
        progress=show,
        log=lambda line: click.echo(line, err=True),
    )
    _print_runs(runs, lake, dataset, bool(sweep_file), as_json, tag, limit)
