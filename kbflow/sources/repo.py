"""Code repositories: one raw unit per text file, in a deterministic walk.

Skips VCS, vendored and virtualenv folders, package managers' lock files,
files over 1 MiB, binary files, PDFs and SVG images, minified code (``*.min.js``, or lines
of over :data:`MINIFIED_MEAN_LINE` characters on average), a built site's
search index, and symlinks that leave the root, and honours ``.gitignore``.
What is left out is reported (:attr:`~kbflow.sources.base.Loader.issues`),
never silently dropped. Some files are read as what they hold rather than as
their bytes: a Jupyter notebook as its cells' text
(:mod:`kbflow.sources.notebook`), a whole HTML page (built documentation) as
its text, as a web source reads it, and a CSV/TSV data file as its header and
first :data:`DATA_PREVIEW_ROWS` rows.
"""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Iterable

from kbflow.errors import MissingDependencyError, SourceError
from kbflow.records import Locator, RawUnit, Source, ids
from kbflow.sources.base import FileSetLoader, SkipFile, register_loader
from kbflow.sources.docs import notebook_unit
from kbflow.sources.files import decode_detect, read_bytes
from kbflow.sources.notebook import is_notebook
from kbflow.sources.walk import looks_binary, read_by
from kbflow.sources.web import page_unit
from kbflow.text.languages import is_document, language_of, language_of_script

log = logging.getLogger(__name__)

#: a code file whose lines average more characters than this is minified or generated (a vendored bundle): no
#: one reads it as code, and its few giant chunks would match the words of every query
MINIFIED_MEAN_LINE = 300
_MINIFIED_NAMES = (".min.js", ".min.mjs", ".min.css")
#: a data file is read as its header and this many rows, what its columns hold: its rows are figures no query asks
#: for, and embedding them cost more than the code (the Python Data Science Handbook's CSVs: 41% of its tokens)
DATA_PREVIEW_ROWS = 20
#: a data file whose rows average more characters than this is no table a person reads (one giant line)
DATA_MAX_LINE = 4000
_DATA_NAMES = (".csv", ".tsv")


_PAGE_NAMES = (".html", ".htm", ".xhtml")
#: a whole page starts with its doctype or <html> (after comments); anything else is a fragment or a template
_WHOLE_PAGE = re.compile(r"\ufeff?\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html)[\s>]", re.IGNORECASE | re.DOTALL)


@functools.cache
def _warn_once(message: str) -> None:
    log.warning(message)


def _page(source: Source, rel: str, path: str, data: bytes, text: str) -> list[RawUnit] | None:
    """A whole HTML page (built documentation, a saved page) read as a browser shows it, as a web source reads
    it; ``None`` for a fragment or template (read as code), or where the ``web`` extra is missing."""
    if not rel.lower().endswith(_PAGE_NAMES) or not _WHOLE_PAGE.match(text[:4096]):
        return None
    try:
        return [page_unit(source, rel, path, data)]
    except MissingDependencyError as exc:
        _warn_once(f"{exc}; until then a repository's HTML pages are read as markup, in line windows")
        return None
    except SourceError:
        raise SkipFile("a web page without article text (script, navigation or hidden)") from None


#: a built documentation site's search index: every page's text again, in one generated file (Sphinx, MkDocs, jazzy)
_SITE_INDEXES = frozenset(
    {"search.json", "search_index.json", "searchindex.json", "search-index.json", "searchindex.js"}
)


def _site_index(rel: str, path: str) -> bool:
    """Whether ``rel`` is a site's search index: named as one, beside (or one folder below) an ``index.html``."""
    if os.path.basename(rel) not in _SITE_INDEXES:
        return False
    folder = os.path.dirname(path)
    return any(os.path.isfile(os.path.join(d, "index.html")) for d in (folder, os.path.dirname(folder)))


def _head(text: str, lines: int) -> str:
    """The first ``lines`` lines of ``text``, each with its line end."""
    end = -1
    for _ in range(lines):
        end = text.find("\n", end + 1)
        if end < 0:
            return text
    return text[: end + 1]


@register_loader
class RepoLoader(FileSetLoader):
    """Every text file of a repository (or one code file); binary and non-UTF-8 files, and files over
    1 MiB, are left out (and reported)."""

    name = "repo"
    description = "a code repository (tree-sitter chunks for code, documents for Markdown)"
    what = "a text file"
    plural = "text files"
    max_file_mb = 1.0
    #: 2: notebooks are read as their cells' text, not their JSON; a CSV/TSV as its header and first rows; a whole
    #: HTML page as its text; 3: a page is read as web sources read it since their revision 4; 4: since their 5;
    #: 5: since their 6; 6: since their 7
    revision = "6"

    def accepts(self, rel: str) -> bool:
        return True

    def load_file(self, source: Source, rel: str, path: str) -> Iterable[RawUnit]:
        if is_notebook(rel):
            return notebook_unit(source, rel, path, self.limit_bytes(source.options))
        if _site_index(rel, path):
            raise SkipFile("a documentation site's search index (generated: its pages are read)")
        data = read_bytes(path)
        if data.startswith(b"%PDF-"):  # a PDF's text-like syntax is no text to read
            raise SkipFile("a PDF" + read_by("file.pdf", self.name))
        if rel.lower().endswith(".svg"):  # drawing commands: its few words are labels, its paths noise
            raise SkipFile("an image (SVG)")
        if looks_binary(data):
            raise SkipFile("binary file" + read_by(rel, self.name))
        try:
            text, encoding = decode_detect(data, path)
        except SourceError:
            raise SkipFile("not text in UTF-8 or a known legacy encoding") from None
        if not text.strip():
            return []
        page = _page(source, rel, path, data, text)
        if page is not None:
            return page
        data_file = rel.lower().endswith(_DATA_NAMES)
        if data_file:
            text = _head(text, DATA_PREVIEW_ROWS + 1)
        language = language_of(rel)
        if language is None and not os.path.splitext(rel)[1]:
            language = language_of_script(text[: text.find("\n")] if "\n" in text else text)
        if is_document(language):
            kind, locator = "doc", Locator(kind="doc", path=rel, char_start=0, char_end=len(text), encoding=encoding)
        else:
            n_lines = text.count("\n") + (0 if text.endswith("\n") else 1)
            mean = len(text) / max(1, n_lines)
            if rel.endswith(_MINIFIED_NAMES):
                raise SkipFile("minified code (named *.min.*)")
            if len(text) >= 1024 and mean > (DATA_MAX_LINE if data_file else MINIFIED_MEAN_LINE):
                what = "a data file of rows" if data_file else "minified or generated code (lines"
                raise SkipFile(f"{what} of {mean:,.0f} characters on average" + ("" if data_file else ")"))
            kind, locator = (
                "code",
                Locator(kind="code", path=rel, line_start=1, line_end=max(1, n_lines), encoding=encoding),
            )
        return [
            RawUnit(
                source_id=source.source_id,
                unit_key=rel,
                text=text,
                content_kind=kind,
                locator=locator,
                title=rel,
                file_hash=ids.bytes_hash(data),
                language=language,
            )
        ]
