"""How much of a section or record the model reads as one text, and what its context header costs, side by side.

For each BEIR-layout dataset (or FinanceBench / page-judged folder), one
lake per value of ``ChunkSettings.whole_tokens`` (``--whole``), with the
default settings otherwise: ``200`` cuts every section at the 200-token
budget (as kbflow chunked before), the default (``default``: a fifth over
the budget, 240) keeps a section the model reads whole as one chunk, and a
large value (``8192``) keeps every record whole, as a tool that embeds one
text per document does (the model then reads only its first 256 word
pieces; the keyword leg still indexes all of it). Prints the chunks and
distinct texts each lake embedded, the word pieces the model read (each
text cut at the model's window, as it cuts them) against one text per
document cut the same way, and nDCG@10 per mode. ``--context on,off``
builds each lake with and without the context header
(``ChunkSettings.context``: :mod:`kbflow.chunk.context`), so its cost in
word pieces and its gain in nDCG@10 are read off per kind of corpus.

    python bench/whole_sections.py ../shared/datasets/cranfield [bench/pdfpages ...] [--whole 200,default,8192]
    python bench/whole_sections.py ../shared/datasets/cosqa --whole default --context on,off
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
sys.path.append(HERE)  # peers.py's word-piece count, after every package

from kbflow import schema as S  # noqa: E402
from kbflow.config import Settings  # noqa: E402
from kbflow.evaluate.beir import load_beir  # noqa: E402
from kbflow.evaluate.configs import config_for  # noqa: E402
from kbflow.evaluate.evaluate import evaluate_dataset  # noqa: E402

MODES = ("hybrid", "dense", "bm25")


def whole_values(spec: str) -> list[int | None]:
    """``--whole``'s values: integers, ``default`` for ``None`` (the settings' own)."""
    return [None if v.strip() == "default" else int(v) for v in spec.split(",") if v.strip()]


def main() -> None:
    from peers import corpus, lake_texts, word_pieces

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("datasets", nargs="+", help="dataset folders (BEIR layout, page-judged PDFs, FinanceBench)")
    ap.add_argument(
        "--whole", default="200,default", help="whole_tokens values, comma-separated ('default': the settings' own)"
    )
    ap.add_argument("--context", default="on", help="the context header: on, off, or on,off (both, side by side)")
    args = ap.parse_args()
    contexts = [{"on": True, "off": False}[c.strip()] for c in args.context.split(",")]
    base = Settings.coerce({"retrieval": {"log_queries": False}})
    print(
        f"{'dataset':<18} {'whole_tokens':<12} {'header':<6} {'chunks':>7} {'texts':>7} {'pieces':>9} {'ratio':>6} "
        + " ".join(f"{m:>7}" for m in MODES)
    )
    for folder in args.datasets:
        dataset = load_beir(folder, "test")
        one_each = word_pieces(corpus(dataset)[1]) if dataset.corpus is not None else None
        for whole, context in ((w, c) for w in whole_values(args.whole) for c in contexts):
            settings = replace(base, chunking=replace(base.chunking, whole_tokens=whole, context=context))
            label = str(whole) if whole is not None else f"{settings.chunking.whole_budget} (default)"
            work = tempfile.mkdtemp(prefix="kbflow-whole-")
            try:
                configs = [config_for(settings, mode=m) for m in MODES]
                runs, lake = evaluate_dataset(dataset, configs, settings, lake=work, save=False)
                ndcg = {r.config["mode"]: r.metrics["ndcg@10"] for r in runs}
                chunks, texts = lake.table(S.CHUNKS).count_rows(), lake.table(S.EMBEDDINGS).count_rows()
                pieces = word_pieces(lake_texts(work))
            finally:
                shutil.rmtree(work, ignore_errors=True)
            ratio = f"{pieces / one_each:6.2f}" if one_each else f"{'-':>6}"
            header = "on" if context else "off"
            print(
                f"{dataset.name:<18} {label:<12} {header:<6} {chunks:7d} {texts:7d} {pieces:9,d} {ratio} "
                + " ".join(f"{ndcg[m]:7.4f}" for m in MODES),
                flush=True,
            )
    print("ratio: word pieces read against one text per document, each cut at the model's window")


if __name__ == "__main__":
    main()
