"""Check that every judged symbol of the codesearch set is a chunk's symbol, as kbflow chunks the sources.

python bench/codesearch/check.py                  # this set
python bench/codesearch/check.py bench/jssearch   # another set judged by symbol

Loads each source of ``sources.json`` with kbflow's loader and cuts it with
the default chunk settings (no embedding, no lake), then reports judged
document ids (``<source>/<path>::<symbol>``) that no chunk carries, and the
number of chunks and symbols.
"""

from __future__ import annotations

import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from kbflow.chunk.base import chunk_unit  # noqa: E402
from kbflow.config import ChunkSettings  # noqa: E402
from kbflow.evaluate.beir import load_beir  # noqa: E402
from kbflow.evaluate.evaluate import doc_id  # noqa: E402
from kbflow.records import Source  # noqa: E402
from kbflow.sources.base import get_loader  # noqa: E402


def corpus_ids(settings: ChunkSettings | None = None, folder: str = HERE) -> tuple[set[str], int]:
    """The document ids of every chunk of the set's sources (the set in ``folder``), and the number of chunks."""
    dataset = load_beir(folder)
    settings = settings or ChunkSettings()
    docs: set[str] = set()
    chunks = 0
    for spec in dataset.sources:
        source = Source(spec["id"], spec["type"], spec["path"], options=spec["options"])
        for unit in get_loader(spec["type"]).load(source):
            for chunk in chunk_unit(unit, settings):
                chunks += 1
                docs.add(doc_id("symbol", spec["id"], chunk.locator.to_dict()))
    return docs, chunks


def main() -> int:
    folder = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else HERE
    docs, chunks = corpus_ids(folder=folder)
    bad = judged = 0
    for name in sorted(os.listdir(os.path.join(folder, "qrels"))):
        split = name.removesuffix(".tsv")
        with open(os.path.join(folder, "qrels", name), encoding="utf-8") as fh:
            for row in csv.DictReader(fh, delimiter="\t"):
                judged += 1
                if row["corpus-id"] not in docs:
                    bad += 1
                    print(f"{split} {row['query-id']}: {row['corpus-id']} is no chunk's symbol")
    print(f"{chunks} chunks, {len(docs)} symbols; {judged} judgments checked, {bad} without a chunk")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
