"""A BEIR set of prose records with one answer each: a Sphinx FAQ's questions against its answers.

    apt-get install -y python3.11-doc                   # Python's own docs, as Debian ships them
    python bench/faq_set.py                              # writes bench/out/faq/python-faq
    kbflow eval bench/out/faq/python-faq --sweep bench/sweep_feedback.yaml

Each question of the FAQ (a section whose heading asks something: "How do I
copy a file?") is a query, and its answer (the section's text without its
heading, without the questions nested under it) is a record of
``corpus.jsonl``, the only one judged relevant. Nobody here wrote the
questions or the answers: the FAQ's authors did, so nothing is tuned to
them. Cranfield's questions have several relevant abstracts each; here each
has one, as a lookup over a record set of prose does, which is where
feedback on the first hits could pull a query away from its answer.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys

import html5lib

HERE = os.path.dirname(os.path.abspath(__file__))
FAQ = "/usr/share/doc/python3.11/html/faq"
NS = "{http://www.w3.org/1999/xhtml}"
HEADINGS = {f"{NS}h{n}" for n in range(1, 7)}


def text_of(node, skip=()) -> str:
    """The text of ``node`` and its descendants, leaving out the subtrees in ``skip`` and heading anchors (¶)."""
    if node in skip:
        return ""
    if node.tag == f"{NS}a" and "headerlink" in (node.get("class") or ""):
        return node.tail or ""
    parts = [node.text or ""]
    for child in node:
        parts.append(text_of(child, skip))
    parts.append(node.tail or "")
    return "".join(parts)


def entries(path: str):
    """``(section id, question, answer)`` of every section of the page whose heading asks a question."""
    with open(path, "rb") as fh:
        root = html5lib.parse(fh.read(), namespaceHTMLElements=True)
    page = os.path.splitext(os.path.basename(path))[0]
    for section in root.iter(f"{NS}section"):
        heading = next((c for c in section if c.tag in HEADINGS), None)
        if heading is None:
            continue
        question = " ".join(text_of(heading).replace("¶", "").split())
        if not question.endswith("?"):
            continue
        nested = {c for c in section if c.tag == f"{NS}section"}
        answer = " ".join(text_of(section, skip={heading, *nested}).split())
        if len(answer.split()) >= 5:
            yield f"{page}#{section.get('id')}", question, answer


def build(folder: str, out: str) -> int:
    pages = sorted(glob.glob(os.path.join(folder, "*.html")))
    if not pages:
        sys.exit(f"{folder}: no FAQ pages; apt-get install -y python3.11-doc")
    rows = [e for p in pages if not p.endswith("index.html") for e in entries(p)]
    os.makedirs(os.path.join(out, "qrels"), exist_ok=True)
    with open(os.path.join(out, "corpus.jsonl"), "w", encoding="utf-8") as fh:
        for doc, _, answer in rows:
            fh.write(json.dumps({"_id": doc, "title": "", "text": answer}) + "\n")
    with open(os.path.join(out, "queries.jsonl"), "w", encoding="utf-8") as fh:
        for i, (_, question, _) in enumerate(rows):
            fh.write(json.dumps({"_id": f"q{i}", "text": question}) + "\n")
    with open(os.path.join(out, "qrels", "test.tsv"), "w", encoding="utf-8") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for i, (doc, _, _) in enumerate(rows):
            fh.write(f"q{i}\t{doc}\t1\n")
    return len(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--faq", default=FAQ, help=f"a folder of Sphinx FAQ pages [{FAQ}]")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "faq", "python-faq"), help="the BEIR folder to write")
    args = ap.parse_args()
    n = build(args.faq, args.out)
    print(f"{args.out}: {n} questions, one answer each")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
