"""Document, page and role signals: a hit's document, its page and its file's role count, not only the chunk.

A chunk is ranked alone, but a reader judges it with its document: a question
about "Amazon's FY2017 days payable outstanding" wants the 2017 filing's
page, not the 2019 filing's table that also shows 2017. Three signals, applied
after fusion to the fused candidates (:meth:`kbflow.Retriever.rank`), each
off at weight 0:

- **document** (``RetrievalSettings.document_weight``): the words of each
  PDF's path (``filings/AMAZON_2017_10K.pdf``: ``filings``, ``amazon``,
  ``2017``, ``10``, ``k``), with the date a filing's period ended where its
  first page is a filing's cover (one word, ``d20230930``: a file named by
  its fiscal quarter, ``2023 Q3 MSFT.pdf``, is found by the date a question
  names), are indexed once per search-table version; a
  query's match with them, the share of its name words' IDF a document's
  path holds, lifts every chunk of that document. Words that name no
  document weigh nothing, and a word every document's path holds weighs
  almost nothing. Only PDFs are named so: code, Markdown documents and web
  pages have their paths in the keyword leg's names field already
  (``names_weight``), and lifting a whole source file for a word of its path
  cost code search 0.04 nDCG@10 when code was named too (measured with
  ``bench/code_eval.py --set document_weight=0.5`` before this rule). An
  SEC filing published as a web page (EDGAR's HTML) is named by its title
  instead, which kbflow takes from its cover page (the registrant, the form
  and the fiscal year: ``COCA COLA CO 10-K FY2024``; its file is
  ``ko-20241231.htm``): on ``bench/filing_questions.py`` hybrid MRR@10 is
  0.635 with it and 0.596 without (``--document-weight 0``). Other web
  pages are not named by their titles: that cost the Rust Reference's
  questions 0.017 nDCG@10 (``bench/sites/reference``; the Cargo book's
  gained 0.002).
- **page** (``RetrievalSettings.page_weight``): the chunks of one page
  reinforce each other: each gets the scores of its page's best other
  candidates (:data:`PAGE_TOP` of them), so a page whose statement title,
  row labels and figures all match outranks a single lucky chunk. A page is
  a PDF's page, and a web page or a Markdown or text document
  (:data:`WHOLE_PAGES`) is one page whole: a chapter whose sections all
  speak of the question outranks one whose single section shares its words.
  Records are not pages (a JSONL file's records share its path), and
  neither is the prose around code (a README's chunks lifting each other
  would undo the role signal below).
- **role** (``RetrievalSettings.role_weight``): in a source that holds code,
  the files around the code (README, tests, typings, a build beside the
  sources, translations; :mod:`kbflow.retrieve.roles`) lose a share of the
  best score, so the function ranks above the README that names it; in a
  site, so do its pages translated into a language folder that mirrors it.

All three work on the fused scores normalized by the best candidate's (min-max
from 0, or from the lowest score where one is negative, as a cosine can be),
so a weight is a share of the best score in every mode. :class:`Groups` holds each row's
document and page (two integer codes per row, read once, lazily) and each
document's role; the scoring is pure (:func:`reinforce`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kbflow import schema as S
from kbflow._lazy import require
from kbflow.retrieve.roles import AROUND, ROLES, file_roles

__all__ = ["NAMED_BY_PATH", "PAGE_TOP", "WHOLE_PAGES", "Groups", "name_words", "reinforce"]

#: the content kinds whose documents the document signal names by their path (the others' paths are searched
#: by the keyword leg's names field)
NAMED_BY_PATH = frozenset({"pdf", "table"})
#: the content kinds whose documents the document signal names by their title, where it names a filing's form
NAMED_BY_TITLE = frozenset({"web"})
#: an SEC form in a web page's title, as :mod:`kbflow.sources.web.xbrl` titles a filing
#: (``Apple Inc. 10-K FY2024, period ended September 28, 2024``)
_FILING_FORM = re.compile(r"\b(?:10-K|10-Q|20-F|40-F|8-K|6-K|S-1|S-4|F-1|DEF 14A|424B\d)(?:T|/A)?\b")

#: a chunk gets the normalized scores of this many of its page's best other candidates
PAGE_TOP = 2
#: the content kinds whose documents are pages of their own: a web page, a Markdown or text document (a
#: record or a ticket's post shares its path with the others of its file, and a PDF has its own pages)
WHOLE_PAGES = frozenset({"web", "doc"})
#: the page number a document that is one page takes in its page code (beyond any PDF's pages)
_WHOLE = (1 << 24) - 1
#: what separates a qualified symbol's parts (``Lake.open``, ``kb::Lake::open``, ``Kb::Lake#open``)
_LAST_NAME = re.compile(r"[.:#]+")

_WORD = re.compile(r"[^\W\d_]+|\d+")
_FISCAL = re.compile(r"^fy(\d{2})$")
_ORDINALS = ("first", "second", "third", "fourth")
_QUARTER = re.compile(r"\b(first|second|third|fourth)\s+(?:fiscal\s+)?quarter\b", re.IGNORECASE)
_MONTHS = {m: i for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), start=1)}
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DATE = re.compile(
    rf"\b({_MONTH})\.?\s+(\d{{1,2}}),?\s+(\d{{4}})\b|\b(\d{{1,2}})\s+({_MONTH})\.?,?\s+(\d{{4}})\b", re.IGNORECASE
)
#: words too common in questions to name a document
_STOP = frozenset(
    "a an and are as at be by did do does for from has have how in is it its of on or the their this to was "
    "were what when which who why with".split()
)


def date_words(text: str) -> list[str]:
    """One word per full date ``text`` names (``September 30, 2023``, ``30 September 2023``: ``d20230930``): a
    filing's period as its cover states it, matched whole, so a question about the quarter ended September
    30, 2023 finds that quarter's report and not every report of 2023 or every September quarter."""
    out = []
    for found in _DATE.finditer(text):
        month = _MONTHS.get((found.group(1) or found.group(5))[:3].lower())
        day, year = found.group(2) or found.group(4), found.group(3) or found.group(6)
        if month and 1 <= int(day) <= 31:
            out.append(f"d{year}{month:02d}{int(day):02d}")
    return out


def name_words(text: str) -> list[str]:
    """The words of a path or a query as the document signal compares them: lower case, split at every
    non-letter and between letters and digits (``AMAZON_2017_10K.pdf``: ``amazon 2017 10 k pdf``), common
    question words left out; a two-digit fiscal year also gives its four-digit year (``FY22``: ``2022``), and
    a full date one word of its own (:func:`date_words`), and a quarter named in words its number as a file
    names it (``the second quarter``: ``q 2``, as in ``NVIDIA_2024Q2_10Q``)."""
    out = date_words(text)
    for found in _QUARTER.finditer(text):
        out += ["q", str(_ORDINALS.index(found.group(1).lower()) + 1)]
    for token in re.findall(r"\w+", text.lower()):
        fiscal = _FISCAL.match(token)
        if fiscal:
            out.append("20" + fiscal.group(1))
        out.extend(w for w in _WORD.findall(token) if w not in _STOP)
    return out


def _path_words(path: str | None) -> frozenset[str]:
    stem = re.sub(r"\.[A-Za-z0-9]{1,5}$", "", path or "")  # the extension names no document
    return frozenset(name_words(stem))


def _document_words(path: str, kind: str, title: str | None, cover: str | None = None) -> frozenset[str]:
    """The words that name a document: a PDF's path's (and, for a filing, the date its cover says its period
    ended, :func:`date_words`), a web page's title's (an SEC filing's registrant, form and fiscal year,
    :mod:`kbflow.sources.web.xbrl`), none for other kinds."""
    if kind in NAMED_BY_PATH:
        return _path_words(path) | frozenset(date_words(cover or ""))
    if kind in NAMED_BY_TITLE and title and _FILING_FORM.search(title):
        return frozenset(name_words(title))
    return frozenset()


def _covers(ds) -> dict[str, str]:
    """``{source + NUL + path: "10-Q, quarterly period ended September 30, 2023"}`` of the PDFs of the Lance
    dataset ``ds`` whose first page is a filing's cover (:func:`kbflow.sources.web.xbrl.cover_period`): a
    filing's file name may say its fiscal quarter (``2023 Q3 MSFT.pdf``, Microsoft's fiscal 2024 first quarter)
    where a question names the date its period ended."""
    from kbflow.sources.web.xbrl import cover_period

    table = ds.to_table(
        columns={"source": S.SOURCE_ID, "path": f"{S.LOCATOR}.path", "text": S.TEXT, "position": S.POSITION},
        filter=f"{S.CONTENT_KIND} = 'pdf' AND {S.LOCATOR}.page = 1",
    )
    pages: dict[str, list[tuple[int, str]]] = {}
    for source, path, text, position in zip(
        *(table.column(c).to_pylist() for c in ("source", "path", "text", "position")), strict=True
    ):
        pages.setdefault(f"{source}\x00{path or ''}", []).append((position or 0, text or ""))
    out = {}
    for key, chunks in pages.items():
        period = cover_period("\n".join(text for _, text in sorted(chunks)).splitlines())
        if period:
            out[key] = period
    return out


def _titles(ds, kinds: frozenset[str]) -> dict[str, str]:
    """``{source + NUL + path: title}`` of the rows of ``kinds`` in the Lance dataset ``ds`` (read only where a
    lake holds such rows: a title column of every row would cost a large lake's first search)."""
    wanted = ", ".join(f"'{k}'" for k in sorted(kinds))
    table = ds.to_table(
        columns={"source": S.SOURCE_ID, "path": f"{S.LOCATOR}.path", "title": S.TITLE},
        filter=f"{S.CONTENT_KIND} IN ({wanted})",
    )
    out: dict[str, str] = {}
    for source, path, title in zip(*(table.column(c).to_pylist() for c in ("source", "path", "title")), strict=True):
        if title:
            out.setdefault(f"{source}\x00{path or ''}", title)
    return out


def _prose_records(ds, docs: np.ndarray, rows: np.ndarray, kinds: Sequence[str | None]) -> np.ndarray:
    """Per document code, whether it is a record set of prose: its kind is ``record`` and three in four of a sample
    of its records read as prose (one take of the samples of every record document of the Lance dataset ``ds``; ``docs``
    and ``rows`` are each row's document code and Lance row id in scan order)."""
    from kbflow.lake.lake import Lake
    from kbflow.retrieve.feedback import RECORD, prose_documents, sample_rows

    prose = np.zeros(len(kinds), dtype=bool)
    records = [d for d, kind in enumerate(kinds) if kind == RECORD]
    if not records:
        return prose
    order = np.argsort(docs, kind="stable")  # each document's rows together, in scan order
    starts = np.searchsorted(docs[order], records)
    ends = np.searchsorted(docs[order], records, side="right")
    samples = sample_rows([rows[order[s:e]].tolist() for s, e in zip(starts, ends, strict=True)])
    wanted = [row for sample in samples for row in sample]
    texts = Lake.take(ds, wanted, columns=[S.TEXT]).column(S.TEXT).to_pylist() if wanted else []
    text_of = dict(zip(wanted, (t or "" for t in texts), strict=True))
    prose[records] = prose_documents([[text_of[row] for row in sample] for sample in samples])
    return prose


def _unit_codes(table, documents) -> np.ndarray:
    """A code per row of a code unit (its document and symbol: the chunks of one split function share it);
    ``-1`` for every other row (prose, a file's code outside any definition)."""
    pa = require("pyarrow")
    pc = require("pyarrow.compute")
    symbol = table.column("symbol")
    is_unit = pc.fill_null(pc.and_(pc.equal(table.column("kind"), "code"), pc.is_valid(symbol)), False)
    key = pc.binary_join_element_wise(documents, pc.fill_null(symbol, ""), pa.scalar("\x00"))
    codes = pc.dictionary_encode(key.combine_chunks()).indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return np.where(is_unit.to_numpy(zero_copy_only=False), codes, -1)


def _defines(symbols, docs: np.ndarray, n: int) -> list[set[str]]:
    """The names each of ``n`` documents defines: the last part of its rows' symbols (``runInContext.debounce``:
    ``debounce``), which tell a bundle of its source's modules (:func:`kbflow.retrieve.roles.file_roles`)."""
    out: list[set[str]] = [set() for _ in range(n)]
    for doc, symbol in zip(docs.tolist(), symbols.to_pylist()):
        if symbol:
            out[doc].add(_LAST_NAME.split(symbol)[-1])
    return out


@dataclass
class Groups:
    """Each row's document, page and code unit for one pinned search-table version, and each document's path
    words, role and whether it is a record set of prose (where feedback applies).

    ``docs[i]``, ``pages[i]`` and ``units[i]`` are the codes of the row with
    the ``i``-th smallest Lance row id (``rows``); a page code is ``-1`` where
    the row is on no page (a record, code, prose around code), a unit code
    where it is no code unit's. A web page or a document is one page.
    """

    rows: np.ndarray  # uint64, sorted
    docs: np.ndarray  # int32 document code per row
    pages: np.ndarray  # int64 page code per row, -1: none
    words: list[frozenset[str]]  # document code -> its path's words
    idf: dict[str, float]  # word -> its IDF over the documents' paths
    roles: np.ndarray  # int8 document code -> its role in its repository (:mod:`kbflow.retrieve.roles`)
    units: np.ndarray  # int64 code unit per row (a file's symbol: the chunks of one split function), -1: none
    prose: np.ndarray  # bool document code -> a record set of prose (:func:`kbflow.retrieve.feedback.prose_documents`)
    sources: np.ndarray  # int32 document code -> its source's code
    code: np.ndarray  # bool document code -> a file of code

    @classmethod
    def load(cls, ds) -> Groups:
        """Read the source, kind, path and page of every row of the Lance dataset ``ds`` (one version)."""
        pa = require("pyarrow")
        pc = require("pyarrow.compute")
        table = ds.to_table(
            columns={
                "source": S.SOURCE_ID,
                "kind": S.CONTENT_KIND,
                "path": f"{S.LOCATOR}.path",
                "page": f"{S.LOCATOR}.page",
                "symbol": f"{S.LOCATOR}.symbol",
            },
            with_row_id=True,
        )
        rows = table.column("_rowid").to_numpy().astype(np.uint64)
        order = np.argsort(rows, kind="stable")
        # a document is a (source, path) pair: one dictionary code per distinct pair
        key = pc.binary_join_element_wise(
            table.column("source"), pc.fill_null(table.column("path"), ""), pa.scalar("\x00")
        )
        encoded = pc.dictionary_encode(key.combine_chunks())
        docs = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int32)
        _, first = np.unique(docs, return_index=True)  # a row of each document, for its kind
        kinds = table.column("kind").take(pa.array(first, type="int64")).to_pylist()
        titles = _titles(ds, NAMED_BY_TITLE) if NAMED_BY_TITLE.intersection(kinds) else {}
        covers = _covers(ds) if "pdf" in kinds else {}
        names = [name.split("\x00", 1) for name in encoded.dictionary.to_pylist()]
        words = [
            _document_words(path, kind, titles.get(f"{source}\x00{path}"), covers.get(f"{source}\x00{path}"))
            for (source, path), kind in zip(names, kinds, strict=True)
        ]
        defines = _defines(table.column("symbol"), docs, len(names)) if "code" in kinds else None
        roles = np.array(file_roles([n[0] for n in names], [n[1] for n in names], kinds, defines), dtype=np.int8)
        page = pc.fill_null(table.column("page"), -1).to_numpy().astype(np.int64)
        # a web page or a document is one page, but not where it stands around code (a README ranks below it)
        whole = pc.is_in(table.column("kind"), pa.array(sorted(WHOLE_PAGES))).to_numpy(zero_copy_only=False)
        page = np.where(whole & ~np.isin(roles[docs], sorted(AROUND)), _WHOLE, page)
        pages = np.where(page >= 0, docs.astype(np.int64) * (1 << 24) + page, -1)
        df = Counter(w for ws in words for w in ws)
        n = sum(1 for ws in words if ws)
        idf = {w: math.log(1.0 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items()}
        units = _unit_codes(table, key)
        prose = _prose_records(ds, docs, rows, kinds)
        sources = np.unique([n[0] for n in names], return_inverse=True)[1].astype(np.int32)
        code = np.array([kind == "code" for kind in kinds], dtype=bool)
        return cls(rows[order], docs[order], pages[order], words, idf, roles, units[order], prose, sources, code)

    def _where(self, row_ids: Sequence[int]) -> np.ndarray:
        """The positions of these Lance row ids in :attr:`rows` (KeyError for one not in this version)."""
        rows = np.asarray(row_ids, dtype=np.uint64)
        where = np.minimum(np.searchsorted(self.rows, rows), len(self.rows) - 1)
        if len(rows) and not np.array_equal(self.rows[where], rows):
            raise KeyError("a row id that is not in this version")
        return where

    def of(self, row_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """The document and page codes of these Lance row ids."""
        where = self._where(row_ids)
        return self.docs[where], self.pages[where]

    def units_of(self, row_ids: Sequence[int]) -> list[int]:
        """The code unit of each of these Lance row ids (``-1`` where the row is no code unit's: see
        :mod:`kbflow.retrieve.units`)."""
        return self.units[self._where(row_ids)].tolist()

    def prose_of(self, row_ids: Sequence[int]) -> list[bool]:
        """Whether each row's document is a record set of prose (a JSONL file whose records read as prose),
        where feedback applies (:mod:`kbflow.retrieve.feedback`)."""
        docs, _ = self.of(row_ids)
        return self.prose[docs].tolist()

    def mentioned(self, rows: Sequence[int], hits: Sequence[int]) -> bool:
        """Whether one of the Lance row ids ``rows`` (chunks that write a name) is in what one of the row ids
        ``hits`` stands for: a hit's own document, and for a file of code its whole source, since code seldom
        writes the name of the project or the technology it serves and the repository's README does (a filing,
        a page or a record names its own subject). Read by :meth:`SearchTable.holds` for the "no good match" flag."""
        hit_docs, _ = self.of(hits)
        found = set(self.of(rows)[0].tolist())
        found_sources = set(self.sources[sorted(found)].tolist())
        return any(
            int(self.sources[d]) in found_sources if self.code[d] else int(d) in found for d in hit_docs.tolist()
        )

    def roles_of(self, row_ids: Sequence[int]) -> list[str | None]:
        """The role (:data:`~kbflow.retrieve.roles.ROLES`) of each row's file where it stands around code (a
        README, a test, a build beside its sources), else ``None``: what a hit says of its file."""
        docs, _ = self.of(row_ids)
        return [ROLES[r] if r in AROUND else None for r in self.roles[docs].tolist()]

    def rescore(
        self,
        fused: Sequence[tuple[str, float]],
        row_ids: Sequence[int],
        query: str,
        document_weight: float,
        page_weight: float,
        role_weight: float = 0.0,
    ) -> list[tuple[str, float]]:
        """``fused`` (with the Lance row id of each) re-scored by :func:`reinforce`; as it was where no signal
        has anything to add (the query names no PDF, no candidate is on a page, none stands around code)."""
        docs, pages = self.of(row_ids)
        named = self.name_scores(query, docs.tolist()) if document_weight else {}
        named = {d: v for d, v in named.items() if v > 0}
        paged = bool(page_weight) and bool((pages >= 0).any())
        around = np.isin(self.roles[docs], list(AROUND)) if role_weight else np.zeros(len(docs), dtype=bool)
        if not named and not paged and not around.any():
            return list(fused)
        return reinforce(
            fused,
            docs.tolist(),
            pages.tolist(),
            named,
            document_weight,
            page_weight if paged else 0.0,
            around=around.tolist(),
            role_weight=role_weight,
        )

    def name_scores(self, query: str, docs: Sequence[int]) -> dict[int, float]:
        """``{document code: share of the query's name words' IDF its path holds}`` for ``docs`` (in 0..1;
        empty where the query names no document)."""
        wanted = {w: self.idf[w] for w in set(name_words(query)) if w in self.idf}
        total = sum(wanted.values())
        if total <= 0:
            return {}
        return {d: sum(v for w, v in wanted.items() if w in self.words[d]) / total for d in set(docs)}


def reinforce(
    fused: Sequence[tuple[str, float]],
    docs: Sequence[int],
    pages: Sequence[int],
    name_score: Mapping[int, float],
    document_weight: float,
    page_weight: float,
    around: Sequence[bool] = (),
    role_weight: float = 0.0,
) -> list[tuple[str, float]]:
    """``fused`` re-scored, best first (ties in fused order).

    On the candidates' scores normalized to 0..1 (from 0, or the lowest where one is negative, to the best),
    each gets
    ``document_weight`` times its document's name score, plus ``page_weight``
    times the normalized scores of its page's :data:`PAGE_TOP` best other
    candidates (page ``-1``: none), less ``role_weight`` where ``around``
    says it stands around code (a README, a test: :mod:`kbflow.retrieve.roles`;
    empty: none does); the bonus is scaled back to the fused scores' range and
    added to each score, so a candidate with no bonus keeps its score.
    """
    if not fused:
        return []
    values = [s for _, s in fused]
    lo, hi = min(0.0, *values), max(values)  # from 0 (or the lowest score, where one is negative) to the best
    span = hi - lo if hi > lo else 1.0
    norm = [(s - lo) / span for s in values]
    by_page: dict[int, list[float]] = {}
    if page_weight:
        for page, v in zip(pages, norm):
            if page >= 0:
                by_page.setdefault(int(page), []).append(v)
        for scores in by_page.values():
            scores.sort(reverse=True)
    out = []
    for i, ((cid, score), v, doc, page) in enumerate(zip(fused, norm, docs, pages)):
        bonus = document_weight * name_score.get(int(doc), 0.0)
        if role_weight and around and around[i]:
            bonus -= role_weight
        if page_weight and page >= 0:
            best = by_page[int(page)][: PAGE_TOP + 1]
            if v in best:  # the page's best scores without this chunk's own
                best.remove(v)
            bonus += page_weight * sum(best[:PAGE_TOP])
        out.append((i, cid, score + span * bonus))
    out.sort(key=lambda t: (-t[2], t[0]))
    return [(cid, score) for _, cid, score in out]
