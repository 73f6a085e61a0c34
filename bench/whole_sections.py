"""Sections the model reads whole against sections cut at the chunk budget, side by side on fresh lakes.

For each BEIR-layout dataset (or FinanceBench / page-judged folder), two
lakes are built with the default settings but for ``ChunkSettings.whole_tokens``:
``max_tokens`` (every section cut at the 200-token budget, as kbflow chunked
before) and the default (a section of up to 240 tokens stays one chunk).
Prints the chunks and distinct texts each lake embedded and nDCG@10 per mode.

    python bench/whole_sections.py ../shared/datasets/cranfield [bench/pdfpages ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from dataclasses import replace

os.environ.setdefault("HF_HUB_OFFLINE", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from kbflow import schema as S  # noqa: E402
from kbflow.config import Settings  # noqa: E402
from kbflow.evaluate.beir import load_beir  # noqa: E402
from kbflow.evaluate.evaluate import config_for, evaluate_dataset  # noqa: E402

MODES = ("hybrid", "dense", "bm25")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("datasets", nargs="+", help="dataset folders (BEIR layout, page-judged PDFs, FinanceBench)")
    args = ap.parse_args()
    base = Settings.coerce({"retrieval": {"log_queries": False}})
    print(f"{'dataset':<18} {'sections':<14} {'chunks':>7} {'texts':>7} " + " ".join(f"{m:>7}" for m in MODES))
    for folder in args.datasets:
        dataset = load_beir(folder, "test")
        for label, whole in (("cut at budget", base.chunking.max_tokens), ("whole (default)", None)):
            settings = replace(base, chunking=replace(base.chunking, whole_tokens=whole))
            work = tempfile.mkdtemp(prefix="kbflow-whole-")
            try:
                configs = [config_for(settings, mode=m) for m in MODES]
                runs, lake = evaluate_dataset(dataset, configs, settings, lake=work, save=False)
                ndcg = {r.config["mode"]: r.metrics["ndcg@10"] for r in runs}
                chunks, texts = lake.table(S.CHUNKS).count_rows(), lake.table(S.EMBEDDINGS).count_rows()
            finally:
                shutil.rmtree(work, ignore_errors=True)
            print(
                f"{dataset.name:<18} {label:<14} {chunks:7d} {texts:7d} " + " ".join(f"{ndcg[m]:7.4f}" for m in MODES),
                flush=True,
            )


if __name__ == "__main__":
    main()
