"""Code search quality: the codesearch set (questions and identifier queries), CoSQA and Cranfield in one run.

For each dataset and mode, ``kbflow eval``'s code path (the dataset's eval lake,
ingested as the current code and default settings chunk and embed it), then
one line each: top-3 and top-5 hit rate (a relevant document among the
first 3 / 5), nDCG@10, MRR@10 and Recall@10; last, the mean nDCG@10 of each
mode over the sets that decide defaults (codesearch, CoSQA, Cranfield).

    python bench/code_eval.py                                  # all sets, hybrid dense bm25
    python bench/code_eval.py --sets codesearch,identifiers --modes hybrid
    python bench/code_eval.py --set context=false              # an ingest or retrieval key of kbflow eval
    python bench/code_eval.py --set bm25_weight=0.25 --paired  # and a paired test against the defaults
    python bench/code_eval.py --sets jssearch,cranfield --legs   # hybrid against each leg, and the fusion rule

``--legs`` runs hybrid, dense and bm25 and prints, per set, the paired test of
hybrid against each leg and whether fusion keeps the rule: hybrid never
significantly below its better leg (p < 0.05), and, where the two legs are
within 0.10 nDCG@10 of each other, at least 0.01 above both.

The sets:

- ``codesearch``: 56 questions a developer asks about 14 packages of
  Python's standard library (``bench/codesearch``), each judged by the
  symbol(s) that implement the answer;
- ``identifiers``: 24 queries that name an identifier (``Logger.callHandlers``,
  ``urlsplit``, ``logging.basicConfig``) over the same lake;
- ``jssearch``: 41 questions about five npm packages as published
  (``bench/jssearch``: CommonJS, ES modules as Babel writes them, a package
  published as its ``dist/`` build; ``npm install --prefix bench/jssearch
  --ignore-scripts`` first);
- ``cosqa``, ``cranfield``: ``../shared/datasets`` (skipped when absent).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from kbflow.config import Settings  # noqa: E402
from kbflow.evaluate.beir import load_beir  # noqa: E402
from kbflow.evaluate.configs import config_for  # noqa: E402
from kbflow.evaluate.evaluate import evaluate_dataset  # noqa: E402
from kbflow.evaluate.lakes import eval_lake_uri  # noqa: E402
from kbflow.evaluate.paired import paired_runs  # noqa: E402

SHARED = os.path.join(os.path.dirname(HERE), "..", "shared", "datasets")
#: name -> (folder, split); ``{shared}`` is --datasets
SETS = {
    "codesearch": (os.path.join(HERE, "codesearch"), "test"),
    "identifiers": (os.path.join(HERE, "codesearch"), "identifiers"),
    "jssearch": (os.path.join(HERE, "jssearch"), "test"),
    "cosqa": ("{shared}/cosqa", "test"),
    "cranfield": ("{shared}/cranfield", "test"),
    "pdfpages": (os.path.join(HERE, "pdfpages"), "test"),
}
#: the sets whose mean nDCG@10 decides a default
DECIDING = ("codesearch", "cosqa", "cranfield")
METRICS = ("hit_rate@3", "hit_rate@5", "ndcg@10", "mrr@10", "recall@10")


def _value(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"true": True, "false": False, "none": None}.get(text.lower(), text)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--sets", default="codesearch,identifiers,cosqa,cranfield", help="comma-separated: " + ",".join(SETS)
    )
    ap.add_argument("--modes", default="hybrid,dense,bm25")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a kbflow eval configuration key")
    ap.add_argument(
        "--paired",
        action="store_true",
        help="also run every set and mode with the defaults (or the --base keys) and print a paired test of "
        "the --set runs against them: the nDCG@10 difference, its 95%% interval and the randomization p-value",
    )
    ap.add_argument(
        "--legs", action="store_true", help="hybrid against each leg (paired), and whether fusion keeps the rule"
    )
    ap.add_argument("--base", action="append", default=[], metavar="KEY=VALUE", help="a key of the --paired baseline")
    ap.add_argument("--datasets", default=SHARED, help="the shared datasets folder [../shared/datasets]")
    ap.add_argument("--eval-home", default=None, help="where the eval lakes live [$KBFLOW_EVAL_HOME or data/eval]")
    ap.add_argument("--json", action="store_true", help="one JSON object per set and mode")
    return ap.parse_args()


def _overrides(pairs: list[str]) -> dict:
    return {k: _value(v) for k, v in (kv.split("=", 1) for kv in pairs)}


def evaluate_set(dataset, modes: list[str], overrides: dict, eval_home: str | None) -> list:
    """One unsaved run per mode of ``dataset`` with ``overrides`` (its eval lake brought up to date first)."""
    settings = Settings.coerce(None, lake=eval_lake_uri(dataset, eval_home))
    configs = [config_for(settings, mode=m, **overrides) for m in modes]
    runs, _ = evaluate_dataset(
        dataset, configs, settings, lake=settings.lake, save=False, log=lambda line: print(line, file=sys.stderr)
    )
    return runs


def paired_lines(name: str, runs: list, base_runs: list) -> list[str]:
    """One line per mode: the --set run against its baseline on the same queries."""
    return [f"{name:12s} {run.config['mode']:7s} {paired_runs(run, base).line()}" for run, base in zip(runs, base_runs)]


#: where the two legs are within this nDCG@10 of each other, hybrid must be ``FUSION_GAIN`` above both
LEGS_CLOSE = 0.10
FUSION_GAIN = 0.01


def leg_lines(name: str, runs: list) -> list[str]:
    """Hybrid against each leg (paired, nDCG@10), then whether fusion keeps the rule (``--legs``)."""
    by_mode = {run.config["mode"]: run for run in runs}
    hybrid, legs = by_mode["hybrid"], [by_mode[m] for m in ("dense", "bm25")]
    tests = {leg.config["mode"]: paired_runs(hybrid, leg) for leg in legs}
    out = [f"{name:12s} hybrid-{mode:5s} {test.line()}" for mode, test in tests.items()]
    better = max(legs, key=lambda r: r.metrics["ndcg@10"]).config["mode"]
    harm = tests[better].delta < 0 and tests[better].p_value < 0.05
    dense, bm25 = (leg.metrics["ndcg@10"] for leg in legs)
    close = abs(dense - bm25) <= LEGS_CLOSE
    gain = min(t.delta for t in tests.values())
    rule = "no harm: " + ("FAILS" if harm else "holds")
    if close:
        rule += f"; legs within {LEGS_CLOSE}, hybrid {gain:+.4f} above both: " + (
            "holds" if gain >= FUSION_GAIN else "FAILS"
        )
    out.append(f"{name:12s} fusion rule (better leg {better}): {rule}")
    return out


def report(rows: list[dict], overrides: dict, modes: list[str], paired: list[str]) -> None:
    if overrides:
        print("settings:", ", ".join(f"{k}={v}" for k, v in overrides.items()))
    print(f"{'set':12s} {'mode':7s} {'queries':>7s} " + " ".join(f"{m:>10s}" for m in METRICS))
    for row in rows:
        cells = " ".join(f"{row[m]:10.4f}" if row.get(m) is not None else f"{'-':>10s}" for m in METRICS)
        print(f"{row['set']:12s} {row['mode']:7s} {row['queries']:7d} {cells}")
    for mode in modes:
        deciding = [r["ndcg@10"] for r in rows if r["mode"] == mode and r["set"] in DECIDING]
        if len(deciding) == len(DECIDING):
            print(f"mean nDCG@10 over {', '.join(DECIDING)} ({mode}): {statistics.mean(deciding):.4f}")
    if paired:
        print("\npaired tests (A = these settings or hybrid, B = the baseline or the leg), nDCG@10:")
        for line in paired:
            print(line)


def load_set(name: str, datasets: str, sets: dict = SETS):
    """The named set of ``sets`` (``{shared}`` read as ``datasets``), or ``None``, said on stderr, where its
    folder is absent."""
    if name not in sets:
        sys.exit(f"unknown set {name!r}; use one of {', '.join(sets)}")
    root, split = sets[name]
    root = root.replace("{shared}", datasets)
    if not os.path.isdir(root):
        print(f"{name}: {root} not found, skipped", file=sys.stderr)
        return None
    return load_beir(root, split=split)


def main() -> int:
    args = parse_args()
    overrides, base = _overrides(args.set), _overrides(args.base)
    modes = ["hybrid", "dense", "bm25"] if args.legs else args.modes.split(",")
    rows, paired = [], []
    for name in args.sets.split(","):
        dataset = load_set(name, args.datasets)
        if dataset is None:
            continue
        runs = evaluate_set(dataset, modes, overrides, args.eval_home)
        for run in runs:
            rows.append({"set": name, "mode": run.config["mode"], "queries": run.queries, **run.metrics})
        if args.paired:
            paired += paired_lines(name, runs, evaluate_set(dataset, modes, base, args.eval_home))
        if args.legs:
            paired += leg_lines(name, runs)
    if args.json:
        for row in rows:
            print(json.dumps(row))
        return 0
    report(rows, overrides, modes, paired)
    return 0


if __name__ == "__main__":
    sys.exit(main())
