"""The context header: what a chunk needs to be understood alone, in front of the text that is embedded.

A chunk of page 87 of a filing, the third chunk of an abstract or the middle of
a long method loses its document's title, its section, its table's column
names or its class. So the text that is embedded and indexed for BM25 is a
short header plus the chunk text, while ``hit.text`` and the citation stay
exactly the source text:

====== ==============================================================
kind   header
====== ==============================================================
doc    ``path — Heading > Subheading``
web    ``page title — Heading > Subheading``
pdf    ``file.pdf p.12`` (the page label where the PDF has one), then the
       page's heading (its title lines: a statement's title, units and
       periods, :mod:`kbflow.sources.pdf.heading`) when the chunk does
       not start with it
table  ``file.pdf p.12 table 1``, then the page's heading, then the
       header row when the chunk does not start with it
code   ``source/path — Class.method`` (the source's id, then the
       path, where the path does not start with it: a package whose
       files are named alone, ``dist/validate.js``, is named too), and
       a symbol with a case change also in words, ``Dayjs.startOf
       (start of)``: the model reads ``startOf`` as one rare word),
       then the enclosing definition's signature when the chunk does
       not show it, or a label ("class body without its methods",
       "the module's docstring")
ticket ``#42 The ticket's title (author)``
record the record's title, when the chunk does not start with it
====== ==============================================================

It is a chunking setting (``ChunkSettings.context``): ``kbflow eval --sweep``
compares with and without it (sweep key ``context``).

The keyword leg indexes more than what is embedded: :func:`search_texts` adds
the words of camelCase identifiers (:mod:`kbflow.text.terms`), the figures
of every chunk but code as words that say their value at two significant
digits (:mod:`kbflow.text.figures`: "1,187" matches a question's "$1.2
billion"), and
:func:`search_names` gives each chunk a second, boosted field: where it is
(code path and symbol, document path and heading path).
"""

from __future__ import annotations

import re
from typing import Any

from kbflow import schema as S
from kbflow._lazy import require
from kbflow.records import Locator, RawUnit
from kbflow.text.figures import figure_words
from kbflow.text.terms import identifier_words

__all__ = [
    "SEARCH_TEXT_REVISION",
    "context_header",
    "embed_keys",
    "embed_text",
    "embed_texts",
    "search_names",
    "search_texts",
]

#: the header is cut to this many characters (a title should not crowd out the chunk)
MAX_HEADER_CHARS = 300
#: how :func:`search_texts` makes the text indexed for BM25 (bumped when it changes)
SEARCH_TEXT_REVISION = "5"


def _join(*parts: str | None) -> str:
    return " — ".join(p for p in parts if p)


def _after_title(title: str | None, heading_path: str | None) -> str | None:
    """The heading path without its first heading where the page title holds it (``Threads - Rust By Example``
    over ``Threads > Scoped threads``: ``Scoped threads``; Doxygen's ``log4cplus: log4cplus::Appender Class
    Reference`` over ``log4cplus::Appender Class Reference > close()``: ``close()``), so the header says each
    name once."""
    if not title or not heading_path:
        return heading_path
    first, _, rest = heading_path.partition(" > ")
    return (rest or None) if first.strip().casefold() in title.casefold() else heading_path


def _fit(title: str | None, heading_path: str | None) -> str | None:
    """A web page's or document's header: its title, then its heading path with each heading above the last
    named without its parameters (Sphinx's ``class flask.Flask(import_name, static_url_path=None, ...)`` is
    ``class flask.Flask``: a class's signature in front of each of its members' chunks would be most of what
    is embedded, and every member of the class would read alike); headings dropped from the middle where it is
    still longer than :data:`MAX_HEADER_CHARS`, so the heading the chunk stands under is always named."""
    headings = [h.strip() for h in heading_path.split(" > ")] if heading_path else []
    headings = [_without_parameters(h) for h in headings[:-1]] + headings[-1:]
    head = _join(title, " > ".join(headings))
    while len(head) > MAX_HEADER_CHARS and len(headings) > 1:
        headings = headings[:-2] + headings[-1:] if len(headings) > 2 else headings[-1:]
        head = _join(title, " > ".join(["…", *headings] if len(headings) == 1 else headings))
    return head or None


#: a heading that is a signature: keywords, a name, then its parameters and what may follow them (a return type, a
#: colon, rustdoc's bounds)
_SIGNATURE = re.compile(
    r"^((?:(?:async|def|class|classmethod|staticmethod|abstractmethod|exception|function|method|property|fn|pub"
    r"|static|final|abstract|const|unsafe|new)\s+)*[A-Za-z_$][\w$.:~]*(?:<[^()]*>)?)\s*\(.*\)"
    r"\s*(?:(?:->|\u2192|=>|:|const\b|where\b).*)?$"  # then a return type or bounds, or nothing: not "semver(1) -- The"
)


def _without_parameters(heading: str) -> str:
    """``heading`` without its parameter list where it is a signature of some length (``class Group(Command):``
    stays whole; ``class flask.Flask(import_name, ..., root_path=None)`` is ``class flask.Flask``)."""
    found = _SIGNATURE.match(heading)
    return found.group(1) if found and len(heading) > 40 else heading


def _code_place(source_id: str, path: str | None) -> str | None:
    """A code file as its header names it: its source's id, then its path (``uuid/dist/validate.js``), so a
    package whose files are named alone (``validate.js``) is named too; the path alone where it starts with
    the id already."""
    if not path:
        return source_id or None
    if not source_id or path.split("/", 1)[0] == source_id:
        return path
    return f"{source_id}/{path}"


def _starts_with(text: str, prefix: str) -> bool:
    """Whether ``text`` starts with ``prefix``, whitespace runs counting as one space (a PDF page's heading is
    its title lines joined by spaces)."""
    return " ".join(text[: 2 * len(prefix) + 64].split()).startswith(" ".join(prefix.split()))


def context_header(unit: RawUnit, locator: Locator, text: str, extra: str | None = None) -> str | None:
    """The header of a chunk of ``unit`` with ``locator`` and ``text`` (``extra``: what its chunker knows
    beyond the locator: a table's header row, the enclosing definition's first line)."""
    kind = unit.content_kind
    head: str | None
    if kind == "doc":
        head = _fit(locator.path or unit.title, locator.heading_path)
    elif kind == "web":
        head = _fit(unit.title, _after_title(unit.title, locator.heading_path))
    elif kind in ("pdf", "table", "ticket"):
        head = unit.title
    elif kind == "code":
        head = _join(_code_place(unit.source_id, locator.path), locator.symbol)
        words = identifier_words(locator.symbol or "")  # minVersion -> "min version", as a reader says it
        head = f"{head} ({words})" if words and head else head
    elif kind == "record":
        title = (unit.title or "").strip()
        head = title if title and not text.lstrip().startswith(title) else None
    else:
        head = unit.title
    if extra and not _starts_with(text, extra):
        head = f"{head}\n{extra.strip()}" if head else extra.strip()
    if not head:
        return None
    return head[:MAX_HEADER_CHARS]


def embed_text(text: str, context: str | None) -> str:
    """What is embedded and indexed for a chunk: its header, a line break, its text (the text alone without one)."""
    return f"{context}\n{text}" if context else text


def embed_keys(batch: Any) -> Any:
    """The embeddings key of each chunk row: its ``embed_hash`` (rows written before it existed: ``chunk_hash``)."""
    pc = require("pyarrow.compute")
    if S.EMBED_HASH not in batch.schema.names:
        return batch.column(S.CHUNK_HASH)
    return pc.coalesce(batch.column(S.EMBED_HASH), batch.column(S.CHUNK_HASH))


def embed_texts(rows: Any) -> list[str]:
    """What is embedded for each chunk row (an Arrow table of ``context`` and ``text``): header, line break, text."""
    return [
        f"{c}\n{t}" if c else t for c, t in zip(rows.column(S.CONTEXT).to_pylist(), rows.column(S.TEXT).to_pylist())
    ]


def search_texts(rows: Any) -> list[str]:
    """What the keyword leg indexes for each chunk row: what is embedded, then the words of its identifiers
    with a case change (``makeRecord`` -> ``make record``, :mod:`kbflow.text.terms`), then, but in code, the
    words of its figures' values (``1,187`` -> ``n12x2``, :mod:`kbflow.text.figures`)."""
    out = []
    kinds = rows.column(S.CONTENT_KIND).to_pylist()
    for text, kind in zip(embed_texts(rows), kinds):
        words = " ".join(w for w in (identifier_words(text), "" if kind == "code" else figure_words(text)) if w)
        out.append(f"{text}\n{words}" if words else text)
    return out


def search_names(rows: Any) -> list[str]:
    """Where each chunk row is, indexed apart so the keyword leg can weigh a match there more (code: path and
    symbol; documents and web pages: path or title and heading path; other kinds: nothing, their title is
    in their text already), with the words of its identifiers."""
    out = []
    kinds = rows.column(S.CONTENT_KIND).to_pylist()
    titles = rows.column(S.TITLE).to_pylist()
    locators = rows.column(S.LOCATOR).to_pylist()
    for kind, title, locator in zip(kinds, titles, locators):
        locator = locator or {}
        if kind == "code":
            names = _join(locator.get("path"), locator.get("symbol"))
        elif kind in ("doc", "web"):
            names = _join(locator.get("path") or title, locator.get("heading_path"))
        else:
            names = ""
        words = identifier_words(names)
        out.append(f"{names} {words}" if words else names)
    return out
