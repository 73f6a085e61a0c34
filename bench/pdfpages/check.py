"""Check every judged page of the pdfpages set holds its evidence words (as kbflow's loader reads the page).

python bench/pdfpages/check.py
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from kbflow.sources.pdf import pdf_pages  # noqa: E402


def main() -> int:
    spec = json.load(open(os.path.join(HERE, "sources.json")))
    paths = {os.path.basename(s["path"]): os.path.normpath(os.path.join(HERE, s["path"])) for s in spec["sources"]}
    evidence = json.load(open(os.path.join(HERE, "evidence.json")))
    pages: dict[str, dict[int, str]] = {}
    bad = 0
    for qid, item in evidence.items():
        name = item["file"]
        if name not in pages:
            pages[name] = {
                p.page: " ".join((p.text + " " + " ".join(t.text for t in p.tables)).split()).lower()
                for p, _ in pdf_pages(paths[name])
            }
        for page in item["pages"]:
            missing = [e for e in item["evidence"] if e.lower() not in pages[name].get(page, "")]
            if missing:
                bad += 1
                print(f"{qid}: {name} p.{page} lacks {missing}")
    print(f"{len(evidence)} questions checked, {bad} judged pages without their evidence")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
