"""How much could fusion gain? Each eval set's queries ranked once, their two legs fused again many ways.

For each set (its eval lake brought up to date first, as ``kbflow eval`` does), every judged query is
ranked once in hybrid mode; its dense and keyword candidates are then ranked again by each leg alone, the
default settings, and each fusion at each keyword weight (``kbflow.evaluate.headroom``). A line each:
nDCG@10, the lead over the better leg alone, and the queries won and lost against the defaults; then the
per-query best of them all (an oracle that knows the answer: the most a rule choosing among these per
query could reach) and a paired test of the defaults against the better leg.

    python bench/fusion_headroom.py                                   # cosqa (test and dev), cranfield
    python bench/fusion_headroom.py --sets codesearch,pdfpages,financebench --weights 0.25,0.5
    python bench/fusion_headroom.py --fusions convex,rrf --limit 100

Sets: those of ``bench/code_eval.py`` (``codesearch``, ``identifiers``, ``cosqa``, ``cranfield``,
``pdfpages``), ``cosqa-dev`` (CoSQA's dev split) and ``financebench`` (``financebench-dev``).
"""

from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from code_eval import SETS, SHARED, load_set  # noqa: E402

from kbflow.config import Settings  # noqa: E402
from kbflow.evaluate.headroom import fusion_headroom, fusion_variants  # noqa: E402
from kbflow.evaluate.lakes import eval_lake_uri, ingest_dataset  # noqa: E402

ALL_SETS = {**SETS, "cosqa-dev": ("{shared}/cosqa", "dev"), "financebench": ("{shared}/financebench-dev", "test")}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="cosqa,cosqa-dev,cranfield", help="comma-separated: " + ",".join(ALL_SETS))
    ap.add_argument("--weights", default="0.1,0.2,0.25,0.3,0.4,0.5,0.7,1", help="keyword weights to fuse at")
    ap.add_argument("--fusions", default="convex", help="comma-separated: convex, rrf")
    ap.add_argument("--limit", type=int, default=None, help="the first N queries of each set")
    ap.add_argument("--datasets", default=SHARED, help="the shared datasets folder [../shared/datasets]")
    ap.add_argument("--eval-home", default=None, help="where the eval lakes live [$KBFLOW_EVAL_HOME or data/eval]")
    return ap.parse_args()


def main() -> int:
    args = parse_args()
    weights = [float(w) for w in args.weights.split(",") if w]
    names = args.sets.split(",")
    for name in names:  # every name checked before the first set is ranked
        if name not in ALL_SETS:
            sys.exit(f"unknown set {name!r}; use one of {', '.join(ALL_SETS)}")
    for name in names:
        dataset = load_set(name, args.datasets, ALL_SETS)
        if dataset is None:
            continue
        settings = Settings.coerce(None, lake=eval_lake_uri(dataset, args.eval_home))
        lake, info = ingest_dataset(dataset, settings)
        print(f"{name}: eval lake {settings.lake}: {info['status']}", file=sys.stderr)
        variants = fusion_variants(settings.retrieval, weights, args.fusions.split(","))
        room = fusion_headroom(dataset, lake, settings, variants, limit=args.limit)
        print("\n".join(room.lines()) + "\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
