"""Calibrate hit relevance for an embedding model, and measure the "no good match" flag.

For each evaluation set, the questions with an answer in the lake (judged) and
questions without one are searched (``k=10``, default settings):

- ``codesearch`` (bench/codesearch, 14 standard-library packages) with the 40
  questions of ``bench/codesearch/negatives.jsonl`` about packages that are
  not in the lake (json, email, asyncio, http, sqlite3...);
- ``pdfpages`` with 100 Cranfield questions (aerodynamics) as negatives;
- ``cranfield`` with the pdfpages and codesearch questions as negatives;
- ``cosqa`` with 100 Cranfield questions as negatives.

A question is *answered* when a judged chunk is among its first 5 hits. A
logistic curve from the best cosine similarity of those hits to "answered"
is fitted on answered questions against negatives (questions whose answer
is in the lake but was missed are left out of the fit: their hits are often
fine matches the judgments do not list). Then, for the fitted curve and for
the one kbflow ships (``kbflow.retrieve.confidence.CALIBRATIONS``), the flag
``Hits.low_confidence`` (best relevance < 0.5) is scored per set: precision
(flagged questions that were negatives or missed), recall on negatives
(questions without an answer in the lake that were flagged), the false alarm
rate (answered questions flagged), and the share of missed questions flagged.
Leave-one-set-out fits show how the curve carries to a set it never saw.

Last, the flag as kbflow ships it, checked out of sample: each lake's own
curve (its midpoint at the median best cosine of kbflow's probe questions,
plus a margin) with the margin fitted on every *other* lake (the margin
that flags the most questions without an answer while it flags at most 2%
of the answered ones: :func:`best_margin`), then scored on the lake left
out. Per lake and pooled, two rates: right answers at rank 1
flagged (the goal: at most 2%) and questions without an answer flagged (at
least 95%). The lakes: the sets above, ``financebench-dev`` (filings; its
near misses ask the same of companies whose filings the lake does not hold,
``bench/filings/financebench_negatives.jsonl``), ``tenq`` (twenty 10-Qs,
``python bench/tenq.py`` first; near misses about other companies' quarters,
``bench/filings/tenq/negatives.jsonl``), ``jssearch`` (npm packages) and the
API references of ``bench/apisites`` (``python bench/api_eval.py --build``
first; judged by member), each with near misses of its own
(``negatives.jsonl``: questions about libraries the lake does not hold, in
its own vocabulary), and the Rust documentation sites of ``bench/sites``.

    python bench/calibrate.py
    python bench/calibrate.py --model /path/to/model   # then set retrieval.calibration to what it prints
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
from dataclasses import replace

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

from kbflow.config import Settings  # noqa: E402
from kbflow.evaluate.beir import load_beir  # noqa: E402
from kbflow.evaluate.evaluate import judged_docs  # noqa: E402
from kbflow.evaluate.lakes import eval_lake_uri, ingest_dataset  # noqa: E402
from kbflow.retrieve.confidence import CALIBRATIONS, NULL_MARGIN, THRESHOLD_RANGE, Calibration  # noqa: E402
from kbflow.retrieve.probes import PROBES  # noqa: E402
from kbflow.retrieve.retriever import Retriever  # noqa: E402

SHARED = os.path.join(os.path.dirname(HERE), "..", "shared", "datasets")
#: negatives per cross-set file
NEGATIVES = 100
TOP = 5


def _questions(path: str) -> list[str]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in fh if line.strip()][:NEGATIVES]


def sets(shared: str) -> dict[str, tuple[str, list[str]]]:
    code, pdf = os.path.join(HERE, "codesearch"), os.path.join(HERE, "pdfpages")
    cranfield, cosqa = os.path.join(shared, "cranfield"), os.path.join(shared, "cosqa")
    out = {
        "codesearch": (code, [os.path.join(code, "negatives.jsonl")]),
        "pdfpages": (pdf, [os.path.join(cranfield, "queries.jsonl")]),
        "cranfield": (cranfield, [os.path.join(pdf, "queries.jsonl"), os.path.join(code, "queries.jsonl")]),
        "cosqa": (cosqa, [os.path.join(cranfield, "queries.jsonl")]),
    }
    filings = os.path.join(shared, "financebench-dev")  # near misses: other companies' filings, not in the lake
    out["financebench-dev"] = (filings, [os.path.join(HERE, "filings", "financebench_negatives.jsonl")])
    tenq = os.path.join(HERE, "filings", "tenq")
    if os.path.isdir(os.path.join(tenq, "pdfs")):  # python bench/tenq.py --from CLONE
        out["tenq"] = (tenq, [os.path.join(tenq, "negatives.jsonl")])
    js = os.path.join(HERE, "jssearch")
    if os.path.isdir(os.path.join(js, "node_modules")):  # npm install --prefix bench/jssearch --ignore-scripts
        out["jssearch"] = (js, [os.path.join(js, "negatives.jsonl")])
    faq = os.path.join(HERE, "out", "faq", "python-faq")
    if os.path.isdir(faq):  # python bench/faq_set.py: near misses, other languages' FAQs, and Cranfield's questions
        out["python-faq"] = (faq, [os.path.join(HERE, "faq_negatives.jsonl"), os.path.join(cranfield, "queries.jsonl")])
    if shutil.which("rustc"):  # the documentation sites rustup installs (bench/sites)
        for name in ("cargo", "reference", "rust-by-example"):
            out[name] = (os.path.join(HERE, "sites", name), [os.path.join(HERE, "sites", "negatives.jsonl")])
    return out


def collect(
    model: str | None, shared: str, home: str | None
) -> tuple[list[tuple[str, str, float]], dict, list[tuple[str, float]]]:
    """``(set, kind, best cosine of the first TOP hits, named)`` per question (kind: answered, missed or
    negative; named: flagged because it names what the lake never mentions, :mod:`kbflow.retrieve.unnamed`),
    per set the best cosines of kbflow's probe questions (what a lake's own curve is fitted from), and ``(set,
    best cosine, named)`` of each question whose first hit is right."""
    out, nulls, top1 = [], {}, []
    for name, (root, negatives) in sets(shared).items():
        if not os.path.isdir(root) or not all(os.path.isfile(n) for n in negatives):
            print(f"{name}: not found, skipped", file=sys.stderr)
            continue
        dataset = load_beir(root)
        settings = Settings.coerce(None, lake=eval_lake_uri(dataset, home), model=model)
        lake, _ = ingest_dataset(dataset, settings)
        quiet = replace(settings, retrieval=settings.retrieval.override(log_queries=False))  # eval lakes log nothing
        retriever = Retriever.open(lake, settings=quiet)
        doc_of = judged_docs(retriever, dataset.unit)
        todo = [(text, dataset.qrels[q]) for q, text in dataset.queries.items() if q in dataset.qrels]
        todo += [(text, {}) for path in negatives for text in _questions(path)]
        for text, judged in todo:
            hits = retriever.search(text[:1000], k=TOP, symbol_first=False)
            best = max(h.dense_score for h in hits)
            named = bool(hits.flag and hits.flag.unknown)
            if not judged:
                kind = "negative"
            elif any(judged.get(doc_of.get(h.chunk_id), 0) > 0 for h in hits):
                kind = "answered"
                if judged.get(doc_of.get(hits[0].chunk_id), 0) > 0:
                    top1.append((name, best, named))
            else:
                kind = "missed"
            out.append((name, kind, best, named))
        nulls[name] = probe_cosines(retriever)
        print(f"{name}: {len(todo)} questions", file=sys.stderr)
    api_rows, api_nulls, api_top1 = collect_api(model, home)
    return out + api_rows, {**nulls, **api_nulls}, top1 + api_top1


def probe_cosines(retriever: Retriever) -> list[float]:
    """The best cosine of each of kbflow's probe questions on the retriever's lake."""
    probes = retriever.search_many(list(PROBES), k=1, mode="dense", distinct=False, symbol_first=False)
    return [hits[0].dense_score for hits in probes if hits]


def collect_api(model: str | None, home: str | None) -> tuple[list, dict, list]:
    """What :func:`collect` gives, for the API references of ``bench/apisites`` (judged by member, as
    ``bench/api_eval.py`` judges them, on the lakes it builds), each with its own near misses."""
    sys.path.insert(0, HERE)
    import api_eval

    from kbflow import Lake, pipeline
    from kbflow.records import Source

    out, nulls, top1 = [], {}, []
    root = home or os.environ.get("KBFLOW_EVAL_HOME") or os.path.join(os.getcwd(), "data", "eval")
    every = [*api_eval.CRATES, *api_eval.TYPEDOCS, *api_eval.JAVADOCS, *api_eval.DOXYGENS, *api_eval.PDOCS]
    for name in [*every, *api_eval.SPHINXES]:
        spec, queries, qrels = api_eval.load_set(name)
        if spec.get("questions_from"):  # another generator's reference of a set read already: its questions again
            continue
        source = spec["sources"][0]
        path = os.path.join(api_eval.SETS, name, source["path"])
        negatives = os.path.join(api_eval.SETS, name, "negatives.jsonl")
        if not os.path.isdir(path) or not os.path.isfile(negatives):
            print(f"api-{name}: not built (python bench/api_eval.py --build), skipped", file=sys.stderr)
            continue
        settings = Settings.coerce(None, lake=os.path.join(root, f"api-{name}"), model=model)
        lake = Lake(settings.lake)
        if source["id"] not in {s.source_id for s in lake.sources()}:
            lake.register(Source(source["id"], "web", path))
        pipeline.ingest(lake, settings, progress=False)
        quiet = replace(settings, retrieval=settings.retrieval.override(log_queries=False))
        retriever = Retriever.open(lake, settings=quiet)
        todo = [(text, {d for d, g in qrels[q].items() if g > 0}) for q, text in queries.items()]
        todo += [(text, set()) for text in _questions(negatives)]
        for text, gold in todo:
            hits = retriever.search(text, k=TOP, symbol_first=False)
            best = max(h.dense_score for h in hits)
            named = bool(hits.flag and hits.flag.unknown)
            members = [api_eval.member_of(h) for h in hits]
            kind = "negative" if not gold else "answered" if set(members) & gold else "missed"
            out.append((f"api-{name}", kind, best, named))
            if gold and members[0] in gold:
                top1.append((f"api-{name}", best, named))
        nulls[f"api-{name}"] = probe_cosines(retriever)
        print(f"api-{name}: {len(todo)} questions", file=sys.stderr)
    return out, nulls, top1


def lake_errors(rows, nulls, margin: float | None) -> dict[str, tuple[float, float, float]]:
    """Per set: ``(threshold, false alarm rate, silent rate on negatives)`` of the model's curve (``margin``
    ``None``) or of each lake's own (probe median + ``margin``, :func:`kbflow.retrieve.confidence.lake_curve`)."""
    base = CALIBRATIONS.get(next(iter(CALIBRATIONS)))
    out = {}
    for name in sorted(nulls):
        if margin is None:
            t = base.threshold
        else:
            low, high = THRESHOLD_RANGE
            t = min(max(statistics.median(nulls[name]) + margin, low), high)
        answered = [c for n, k, c, _ in rows if n == name and k == "answered"]
        negative = [c for n, k, c, _ in rows if n == name and k == "negative"]
        out[name] = (t, float(np.mean([c < t for c in answered])), float(np.mean([c >= t for c in negative])))
    return out


#: the flag's goal for right answers: at most this share of them flagged (the fit keeps to it on the lakes it sees)
FALSE_ALARM_GOAL = 0.02


def best_margin(rows, nulls) -> float:
    """The margin whose lake curves flag the most questions without an answer (sets weighed alike) while they
    flag at most :data:`FALSE_ALARM_GOAL` of the answered questions, pooled; the smallest margin where none
    does. The two errors are not weighed alike: a right answer hidden behind "no good match" costs a user more
    than an off-topic question left unflagged, and the goals say so (at most 2%, at least 95%)."""
    margins = np.round(np.arange(0.10, 0.36, 0.01), 2)
    answered = {name: sum(1 for n, k, _, _ in rows if n == name and k == "answered") for name in nulls}
    total = sum(answered.values()) or 1
    kept = []
    for m in margins:
        errors = lake_errors(rows, nulls, m)
        if sum(fa * answered[name] for name, (_, fa, _) in errors.items()) / total <= FALSE_ALARM_GOAL:
            kept.append((float(np.mean([1 - sn for _, _, sn in errors.values()])), -m, m))
    return float(max(kept)[2]) if kept else float(margins[0])


def report_lakes(rows, nulls) -> None:
    margin = best_margin(rows, nulls)
    print(f"\neach lake's own curve: midpoint at the probes' median best cosine + margin (fitted: {margin:.2f};")
    print(f"  kbflow ships NULL_MARGIN = {NULL_MARGIN}); the model's one curve for comparison")
    print(f"  {'set':16s} {'probe median':>12s} {'model: t':>9s} {'false alarms':>12s} {'silent(neg)':>11s}"
          f" {'lake: t':>8s} {'false alarms':>12s} {'silent(neg)':>11s}")  # fmt: skip
    one, own = lake_errors(rows, nulls, None), lake_errors(rows, nulls, NULL_MARGIN)
    for name in sorted(nulls):
        (t0, fa0, sn0), (t1, fa1, sn1) = one[name], own[name]
        print(f"  {name:16s} {statistics.median(nulls[name]):12.3f} {t0:9.3f} {fa0:12.3f} {sn0:11.3f}"
              f" {t1:8.3f} {fa1:12.3f} {sn1:11.3f}")  # fmt: skip
    for label, errors in (("model's curve", one), ("lake curves", own)):
        mean = np.mean([fa + sn for _, fa, sn in errors.values()])
        print(f"  mean of false alarms + silent negatives per set, {label}: {mean:.3f}")
    held = []
    for name in sorted(nulls):
        others = {n: v for n, v in nulls.items() if n != name}
        m = best_margin([r for r in rows if r[0] != name], others)
        _, fa, sn = lake_errors([r for r in rows if r[0] == name], {name: nulls[name]}, m)[name]
        held.append(fa + sn)
    one_curve = []
    for name in sorted(nulls):
        t = fit([r for r in rows if r[0] != name]).threshold
        answered = [c for n, k, c, _ in rows if n == name and k == "answered"]
        negative = [c for n, k, c, _ in rows if n == name and k == "negative"]
        one_curve.append(np.mean([c < t for c in answered]) + np.mean([c >= t for c in negative]))
    print(
        f"  leave one set out: mean error {np.mean(held):.3f} with the margin fitted on the others, "
        f"{np.mean(one_curve):.3f} with one curve fitted on the others"
    )


def lake_threshold(probes: list[float], margin: float) -> float:
    """A lake's own curve's midpoint: its probes' median best cosine plus ``margin``, within THRESHOLD_RANGE."""
    low, high = THRESHOLD_RANGE
    return min(max(statistics.median(probes) + margin, low), high)


def report_out_of_sample(rows, nulls, top1) -> None:
    """Each lake's curve with the margin fitted on the other lakes, scored on it: right answers at rank 1 flagged
    and questions without an answer flagged, per lake and pooled (the flag's goals: at most 2%, at least 95%).
    A question is flagged where its best cosine is under the curve's midpoint or it names what the lake never
    mentions (the last column: how many of the flagged were flagged by a name alone)."""
    print("\nthe flag out of sample: each lake's curve, its margin fitted on the other lakes (leave one lake out)")
    print(
        f"  {'lake':24s} {'margin':>6s} {'midpoint':>8s} {'rank-1 right flagged':>21s} {'no answer flagged':>18s}"
        f" {'by a name':>9s}"
    )
    pooled = [0, 0, 0, 0, 0]
    for name in sorted(nulls):
        others = {n: v for n, v in nulls.items() if n != name}
        margin = best_margin([r for r in rows if r[0] != name], others)
        t = lake_threshold(nulls[name], margin)
        right = [(c, named) for n, c, named in top1 if n == name]
        negative = [(c, named) for n, k, c, named in rows if n == name and k == "negative"]
        fired = sum(c < t or named for c, named in right)
        caught = sum(c < t or named for c, named in negative)
        by_name = sum(named and c >= t for c, named in right + negative)
        pooled = [a + b for a, b in zip(pooled, (fired, len(right), caught, len(negative), by_name))]
        print(
            f"  {name:24s} {margin:6.2f} {t:8.3f} {fired:6d}/{len(right):<4d} ({_pct(fired, len(right)):>6s})"
            f" {caught:5d}/{len(negative):<4d} ({_pct(caught, len(negative)):>6s}) {by_name:9d}"
        )
    print(
        f"  {'pooled':24s} {'':6s} {'':8s} {pooled[0]:6d}/{pooled[1]:<4d} ({_pct(pooled[0], pooled[1]):>6s})"
        f" {pooled[2]:5d}/{pooled[3]:<4d} ({_pct(pooled[2], pooled[3]):>6s}) {pooled[4]:9d}"
    )


def report_frontier(rows, nulls, top1) -> None:
    """The trade of one margin for every lake: right answers at rank 1 flagged against questions without an
    answer flagged, pooled, for each margin, with the lakes that break each goal there (more than 2% of
    their right answers flagged; fewer than 95% of their negatives flagged)."""
    print("\nthe trade, one margin for every lake (pooled; the lakes that break each goal at that margin)")
    for margin in np.round(np.arange(0.16, 0.33, 0.02), 2):
        fired = caught = n_right = n_neg = 0
        loud, quiet = [], []
        for name in sorted(nulls):
            t = lake_threshold(nulls[name], margin)
            right = [c < t or named for n, c, named in top1 if n == name]
            negative = [c < t or named for n, k, c, named in rows if n == name and k == "negative"]
            fired, caught = fired + sum(right), caught + sum(negative)
            n_right, n_neg = n_right + len(right), n_neg + len(negative)
            if right and sum(right) > 0.02 * len(right):
                loud.append(f"{name} {_pct(sum(right), len(right))}")
            if negative and sum(negative) < 0.95 * len(negative):
                quiet.append(f"{name} {_pct(sum(negative), len(negative))}")
        print(
            f"  margin {margin:.2f}: right flagged {_pct(fired, n_right):>6s}, no answer flagged "
            f"{_pct(caught, n_neg):>6s} | over 2%: {', '.join(loud) or '-'} | under 95%: {', '.join(quiet) or '-'}"
        )


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def fit(rows: list[tuple[str, str, float]]) -> Calibration:
    """Logistic regression (Newton's method, a little L2) of answered vs negative on the best cosine."""
    train = [(cos, kind == "answered") for _, kind, cos, *_ in rows if kind != "missed"]
    x = np.array([[1.0, c] for c, _ in train])
    y = np.array([float(a) for _, a in train])
    w = np.zeros(2)
    for _ in range(100):
        p = 1 / (1 + np.exp(-x @ w))
        grad = x.T @ (p - y) / len(y) + 1e-4 * np.array([0, w[1]])
        hess = (x.T * (p * (1 - p))) @ x / len(y) + 1e-4 * np.diag([0, 1])
        w -= np.linalg.solve(hess, grad)
    return Calibration(round(float(w[0]), 3), round(float(w[1]), 3))


def score(rows: list[tuple[str, str, float]], calibration: Calibration) -> dict[str, float]:
    flagged = {kind: 0 for kind in ("answered", "missed", "negative")}
    count = dict(flagged)
    for _, kind, cos, *_ in rows:
        count[kind] += 1
        flagged[kind] += calibration.relevance(cos) < 0.5
    flags = sum(flagged.values())
    return {
        "answered": count["answered"],
        "missed": count["missed"],
        "negative": count["negative"],
        "precision": (flagged["negative"] + flagged["missed"]) / flags if flags else float("nan"),
        "recall_negatives": flagged["negative"] / count["negative"] if count["negative"] else float("nan"),
        "false_alarms": flagged["answered"] / count["answered"] if count["answered"] else float("nan"),
        "missed_flagged": flagged["missed"] / count["missed"] if count["missed"] else float("nan"),
    }


def report(title: str, rows, calibration: Calibration) -> None:
    print(f"\n{title}: relevance = 1/(1+exp(-({calibration.intercept} + {calibration.slope} * cosine)))")
    print(f"  (flag below cosine {calibration.threshold:.3f})")
    print(
        f"  {'set':12s} {'answered':>8s} {'missed':>6s} {'negative':>8s} {'precision':>9s} {'recall(neg)':>11s}"
        f" {'false alarms':>12s} {'missed flagged':>14s}"
    )
    names = sorted({r[0] for r in rows}) + ["all"]
    for name in names:
        m = score([r for r in rows if name in ("all", r[0])], calibration)
        print(
            f"  {name:12s} {m['answered']:8d} {m['missed']:6d} {m['negative']:8d} {m['precision']:9.3f}"
            f" {m['recall_negatives']:11.3f} {m['false_alarms']:12.3f} {m['missed_flagged']:14.3f}"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None, help="embedding model path or id [the default model]")
    ap.add_argument("--datasets", default=SHARED, help="the shared datasets folder [../shared/datasets]")
    ap.add_argument("--eval-home", default=None, help="where the eval lakes live [$KBFLOW_EVAL_HOME or data/eval]")
    args = ap.parse_args()
    rows, nulls, top1 = collect(args.model, args.datasets, args.eval_home)
    fitted = fit(rows)
    report("fitted on every set", rows, fitted)
    model_id = Settings.coerce(None, model=args.model).model
    shipped = CALIBRATIONS.get(model_id)
    if shipped is not None:
        report(f"shipped for {model_id}", rows, shipped)
    print("\nleave one set out (fitted on the others, scored on it):")
    for name in sorted({r[0] for r in rows}):
        held = fit([r for r in rows if r[0] != name])
        m = score([r for r in rows if r[0] == name], held)
        print(
            f"  {name:12s} cosine {held.threshold:.3f}: precision {m['precision']:.3f}, recall(neg)"
            f" {m['recall_negatives']:.3f}, false alarms {m['false_alarms']:.3f}"
        )
    if shipped is not None:
        report_lakes(rows, nulls)
    report_out_of_sample(rows, nulls, top1)
    report_frontier(rows, nulls, top1)
    print(f"\nretrieval.calibration = [{fitted.intercept}, {fitted.slope}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
