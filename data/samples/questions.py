"""The demo's questions: print cited answers, and fail if an expected citation is not in the top 3.

Run by `make demo` after the sample corpus is ingested (the lake: --lake, $KBFLOW_LAKE or ./data/lake).
"""

from __future__ import annotations

import json
import os
import sys

from kbflow import Retriever

HERE = os.path.dirname(os.path.abspath(__file__))


def load_questions() -> list[dict]:
    with open(os.path.join(HERE, "questions.json"), encoding="utf-8") as fh:
        return json.load(fh)


def matches(hit, expect: dict) -> bool:
    """Whether a hit's citation has every field of ``expect``."""
    cite = hit.citation
    fields = {"source_id": cite.source_id, **{k: v for k, v in cite.locator.to_dict().items() if v is not None}}
    return all(fields.get(k) == v for k, v in expect.items())


def main(lake: str | None = None) -> int:
    retriever = Retriever.open(lake)
    failures = 0
    for item in load_questions():
        hits = retriever.search(item["question"], k=3)
        print(f"\nQ: {item['question']}")
        for hit in hits:
            mark = "*" if matches(hit, item["expect"]) else " "
            print(f" {mark}{hit.rank}. {hit.citation.render()}  ({hit.score:.4f})")
            print(f"     {' '.join(hit.text.split())[:110]}")
        if not any(matches(h, item["expect"]) for h in hits):
            failures += 1
            print(f"  expected {item['expect']} in the top 3: NOT FOUND", file=sys.stderr)
    print(
        f"\n{len(load_questions()) - failures}/{len(load_questions())} questions answered "
        "with the expected citation in the top 3"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else None))
