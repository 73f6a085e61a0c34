"""Evaluation datasets in BEIR layout: ``queries.jsonl``, ``qrels/<split>.tsv``, and a corpus.

The corpus is either

- ``corpus.jsonl``: BEIR records, ``{"_id", "title", "text"}`` per line (ingested
  as one ``jsonl`` source; a hit counts for its record: ``unit="record"``), or
- ``sources.json``: sources of any type, for judging at the level real
  documents are used at::

      {"name": "pdfpages", "unit": "page",
       "sources": [{"id": "i1040nr", "type": "pdf", "path": "../pdfs/i1040nr.pdf"}, ...]}

  ``unit`` says what a judged document is: ``"page"`` (``<file>#p<page>``: a
  hit counts for its PDF page; a web page or document counts as its path,
  ``reference/profiles.html``) or ``"symbol"``
  (``<source id>/<path>::<symbol>``: a hit counts for the code symbol it is
  part of). Paths are relative to the dataset folder; ``{stdlib}`` stands for
  this Python's standard library folder, ``{rustdoc}`` for the HTML
  documentation rustup installs beside the compiler
  (``$(rustc --print sysroot)/share/doc/rust/html``).

A FinanceBench folder (``questions.jsonl`` and ``pdfs/``) is read as it is, judged
by page (:mod:`kbflow.evaluate.financebench`).

``negatives.jsonl`` (optional, or the file a ``sources.json`` names as
``"negatives"``) holds questions the corpus cannot answer, in the format of
``queries.jsonl``: ``kbflow eval`` then measures the "no good match" flag on
them. ``queries.jsonl`` holds ``{"_id", "text"}``; ``qrels/test.tsv`` has a header
and ``query-id<TAB>corpus-id<TAB>score`` rows (graded; 0 or less is not
relevant). A split other than ``test`` reads ``queries.<split>.jsonl`` where
that file exists.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sysconfig
from dataclasses import replace
from typing import Any

from kbflow.errors import DatasetError, SourceError
from kbflow.evaluate.dataset import BeirDataset
from kbflow.records import ids
from kbflow.sources.files import file_hash
from kbflow.sources.jsonl import iter_records

__all__ = ["BeirDataset", "load_beir", "read_negatives"]


def _queries(path: str) -> dict[str, str]:
    out: dict[str, str] = {}
    try:  # the corpus reader's checks: UTF-8, one JSON object with an "_id" and string "text" per line
        for lineno, obj in iter_records(path):
            qid = str(obj["_id"])
            if qid in out:
                raise DatasetError(f"{path}:{lineno}: query id {qid!r} appears again; each query needs its own id")
            out[qid] = obj.get("text") or ""
    except SourceError as exc:
        raise DatasetError(str(exc)) from None
    return out


def _qrels(path: str) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            parts = line.rstrip("\n").split("\t")
            if lineno == 1 and parts[:1] == ["query-id"]:
                continue
            if not line.strip():
                continue
            if len(parts) != 3:
                raise DatasetError(f"{path}:{lineno}: expected query-id<TAB>corpus-id<TAB>score, got {line.strip()!r}")
            try:
                score = int(float(parts[2]))
            except ValueError:
                raise DatasetError(f"{path}:{lineno}: score {parts[2]!r} is not a number") from None
            out.setdefault(parts[0], {})[parts[1]] = score
    return out


def load_beir(root: str, split: str = "test") -> BeirDataset:
    """Read a BEIR dataset folder; the corpus itself is streamed later, by the ingest.

    Raises
    ------
    DatasetError
        A file is missing or a line is malformed (the message names the file and line).
    """
    root = os.path.abspath(root)
    if not os.path.isdir(root):
        raise DatasetError(f"{root}: not a folder; a BEIR dataset is a folder with corpus.jsonl, queries.jsonl, qrels/")
    from kbflow.evaluate.financebench import is_financebench, load_financebench

    if is_financebench(root):  # its negatives.jsonl, beside its questions, read as a BEIR folder's
        return replace(load_financebench(root, split), negatives=read_negatives(root, ""))
    corpus = os.path.join(root, "corpus.jsonl")
    spec = os.path.join(root, "sources.json")
    queries_path = os.path.join(root, f"queries.{split}.jsonl")
    if split == "test" or not os.path.isfile(queries_path):
        queries_path = os.path.join(root, "queries.jsonl")
    qrels_path = os.path.join(root, "qrels", f"{split}.tsv")
    if not os.path.isfile(corpus) and os.path.isfile(spec):
        unit, sources, corpus_hash = _sources(spec, root)
        corpus_or_none = None
    else:
        unit, sources, corpus_hash, corpus_or_none = "record", [], "", corpus
    for path in (corpus_or_none or spec, queries_path, qrels_path):
        if not os.path.isfile(path):
            raise DatasetError(
                f"{path}: missing; a BEIR dataset has corpus.jsonl (or sources.json), queries.jsonl "
                f"and qrels/{split}.tsv"
            )
    queries = _queries(queries_path)
    qrels = {q: docs for q, docs in _qrels(qrels_path).items() if any(v > 0 for v in docs.values())}
    unknown = sorted(set(qrels) - set(queries))
    if unknown:
        raise DatasetError(
            f"{qrels_path}: {len(unknown)} judged queries are not in {queries_path} (first: {unknown[0]!r})"
        )
    if not qrels:
        raise DatasetError(f"{qrels_path}: no query has a relevant document")
    empty = sorted(q for q in qrels if not queries[q].strip())
    if empty:  # found now, before the corpus is ingested, not at the first one's search
        raise DatasetError(f"{queries_path}: {len(empty)} judged queries have no text (first: {empty[0]!r})")
    return BeirDataset(
        name=os.path.basename(root.rstrip(os.sep)),
        root=root,
        corpus=corpus_or_none,
        corpus_hash=file_hash(corpus) if corpus_or_none else corpus_hash,
        split=split,
        queries={q: queries[q] for q in qrels},
        qrels=qrels,
        unit=unit,
        sources=sources,
        negatives=read_negatives(root, spec),
    )


def read_negatives(root: str, spec: str) -> list[str]:
    """The texts of the dataset's questions without an answer in its corpus: ``negatives.jsonl`` in the folder,
    or the file a ``sources.json`` names as ``"negatives"`` (relative to the folder); none without either."""
    path = os.path.join(root, "negatives.jsonl")
    if os.path.isfile(spec):
        with open(spec, encoding="utf-8") as fh:
            named = json.load(fh).get("negatives")
        if named:
            path = os.path.normpath(os.path.join(root, str(named)))
            if not os.path.isfile(path):
                raise DatasetError(f"{spec}: the negatives file {path} does not exist")
    return list(_queries(path).values()) if os.path.isfile(path) else []


#: what a judged document of a sources.json dataset can be
UNITS = ("page", "symbol")


def _expand(path: str, spec_path: str) -> str:
    """``path`` with ``{stdlib}`` and ``{rustdoc}`` filled in."""
    if "{stdlib}" in path:
        path = path.replace("{stdlib}", sysconfig.get_paths()["stdlib"])
    if "{rustdoc}" in path:
        rustc = shutil.which("rustc")
        if rustc is None:
            raise DatasetError(f"{spec_path}: {path} names the rustup documentation, and rustc is not on PATH")
        sysroot = subprocess.run([rustc, "--print", "sysroot"], capture_output=True, text=True, check=False).stdout
        path = path.replace("{rustdoc}", os.path.join(sysroot.strip(), "share", "doc", "rust", "html"))
    return path


def _sources(spec_path: str, root: str) -> tuple[str, list[dict[str, Any]], str]:
    """``(unit, sources with absolute paths, a hash naming the corpus)`` of a ``sources.json``."""
    try:
        with open(spec_path, encoding="utf-8") as fh:
            spec = json.load(fh)
    except (OSError, ValueError) as exc:
        raise DatasetError(f"{spec_path}: not readable JSON ({exc})") from None
    unit = spec.get("unit")
    if unit not in UNITS:
        raise DatasetError(f'{spec_path}: "unit" must be one of {", ".join(UNITS)}, got {unit!r}')
    items = spec.get("sources")
    if not isinstance(items, list) or not items:
        raise DatasetError(f'{spec_path}: "sources" must be a non-empty list of {{id, type, path}}')
    out = []
    for i, item in enumerate(items, start=1):
        if not isinstance(item, dict) or not {"id", "type", "path"} <= set(item):
            raise DatasetError(f'{spec_path}: source {i} needs "id", "type" and "path"')
        path = os.path.normpath(os.path.join(root, _expand(str(item["path"]), spec_path)))
        if not os.path.exists(path):
            raise DatasetError(f"{spec_path}: source {item['id']!r}: {path} does not exist")
        out.append(
            {"id": str(item["id"]), "type": str(item["type"]), "path": path, "options": dict(item.get("options") or {})}
        )
    corpus_hash = ids.digest(json.dumps(spec, sort_keys=True), *(str(s["path"]) for s in out))
    return unit, out, corpus_hash
