"""Query expansion from a glossary: the words a reader knows a term stands for, added to the query.

A question asks for an analyst's term ("Is the operating margin improving?",
"FY2021 capex", "PP&E"); the filing prints the line items it is computed from
("Operating income", "Total revenue", "Purchases of property and
equipment") under a statement's title. Neither the keyword leg nor a small
embedding model bridges that gap, so a glossary maps each term to those
words, and a query that names a term is searched with them appended: the
keyword leg matches the line items, the dense leg embeds the question with
them. A query that names no term is searched exactly as written.

A glossary is a list of entries ``terms -> expansion``. ``terms`` are
alternatives separated by ``|`` (``capex|capital expenditure|capital
expenditures``), each matched as whole words, ignoring case, a space or a
hyphen between two words matching either. The built-in
``finance`` glossary (:data:`FINANCE`, the default of
:attr:`kbflow.config.RetrievalSettings.glossary`) covers the standard
financial metrics and statements; a user's own is a text file with one
entry a line, the terms, a tab, the expansion (a line starting with ``#``
is a comment; a term may hold one, ``C#``):

.. code-block:: text

    # terms<TAB>what the documents print instead
    churn|attrition	customers lost cancellations
    ARR|annual recurring revenue	subscription revenue
    C#|csharp	.NET dotnet

``none`` (or ``None``) turns expansion off.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import cache, lru_cache

from kbflow.errors import ConfigError

__all__ = ["BUILT_IN", "FINANCE", "Glossary", "expanded_query", "load_glossary"]

#: the built-in finance glossary: standard metrics and statements -> the line items and titles that hold them
#: (terms that are also everyday words elsewhere, like a bare "EPS" in code, are left out)
FINANCE: tuple[tuple[str, str], ...] = (
    (
        "operating margin|operating margins|operating profit margin",
        "operating income total revenue statements of operations",
    ),
    ("gross margin|gross margins|gross profit margin", "gross profit total revenue cost of sales"),
    ("net margin|net margins|profit margin|net profit margin", "net income total revenue"),
    (
        "free cash flow|free cash flows|free cashflow|fcf",
        "net cash provided by operating activities purchases of property and equipment capital "
        "expenditures statements of cash flows",
    ),
    (
        "capex|capital expenditure|capital expenditures|capital intensive|capital intensity",
        "capital expenditures purchases of property and equipment property plant and equipment net "
        "statements of cash flows",
    ),
    ("pp&e|ppne", "property plant and equipment net"),
    ("ebitda|ebitdar|adjusted ebitda", "operating income depreciation and amortization"),
    ("ebit|adjusted ebit", "operating income"),
    # not a bare "eps": code calls its epsilons so
    ("diluted eps|basic eps", "earnings per share"),
    ("cogs", "cost of goods sold cost of sales"),
    ("dpo|days payable outstanding|days payables outstanding", "accounts payable cost of sales inventories"),
    ("dso|days sales outstanding", "accounts receivable revenue"),
    ("dio|days inventory outstanding|inventory turnover", "inventories cost of sales"),
    ("interest coverage|interest coverage ratio", "interest expense operating income"),
    (
        "quick ratio|acid test ratio",
        "cash and cash equivalents short-term investments accounts receivable total current liabilities",
    ),
    ("current ratio|working capital", "total current assets total current liabilities"),
    ("roa|return on assets|return on total assets", "net income total assets"),
    (
        "roe|return on equity|return on shareholders' equity|return on stockholders' equity",
        "net income total shareholders equity",
    ),
    ("debt to equity|leverage ratio", "long-term debt total shareholders equity"),
    ("payout ratio|dividend payout ratio|retention ratio", "dividends paid net income"),
    ("d&a", "depreciation and amortization"),
    ("sg&a", "selling general and administrative expenses"),
    ("r&d", "research and development"),
    ("fixed asset turnover", "total revenue property plant and equipment net"),
    ("asset turnover|total asset turnover", "total revenue total assets"),
    (
        "operating cash flow|operating cash flows|cash from operations|operating cash flow ratio",
        "net cash provided by operating activities",
    ),
    ("effective tax rate", "provision for income taxes income before income taxes"),
    # not "top line": the first line of a file or table
    ("topline", "revenue net sales"),
    ("revenue growth", "total revenue net sales"),
    ("cash conversion cycle", "inventories accounts receivable accounts payable cost of sales revenue"),
    (
        "income statement|income statements|p&l|statement of operations|statements of operations|"
        "statement of income|statements of income|statement of earnings|statements of earnings",
        "consolidated statements of operations income",
    ),
    (
        "balance sheet|balance sheets|statement of financial position|statements of financial position",
        "consolidated balance sheets total assets total liabilities",
    ),
    ("cash flow statement|cash flow statements|statement of cash flows", "consolidated statements of cash flows"),
)

#: the glossaries kbflow ships, by name
BUILT_IN: dict[str, tuple[tuple[str, str], ...]] = {"finance": FINANCE}
_OFF = ("", "none")


def _term(term: str) -> str:
    """A term as a pattern: its words as written, a space or a hyphen between two words matching either
    (``free cash flow`` also reads ``free-cash-flow``, ``capital-intensive`` also ``capital intensive``)."""
    words = re.split(r"[\s-]+", term.strip())
    return r"[\s-]+".join(re.escape(w) for w in words)


@dataclass(frozen=True)
class Glossary:
    """Entries ``(terms, expansion)``; :meth:`expand` gives the expansion of every entry a query names."""

    name: str
    entries: tuple[tuple[tuple[str, ...], str], ...]
    #: one pattern per entry, its terms as whole words, ignoring case
    patterns: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        patterns = tuple(
            re.compile(r"(?<!\w)(?:" + "|".join(_term(t) for t in terms) + r")(?!\w)", re.IGNORECASE)
            for terms, _ in self.entries
        )
        object.__setattr__(self, "patterns", patterns)

    def expand(self, query: str) -> str:
        """The words to add to ``query``: each matching entry's expansion once, in glossary order ("" for none)."""
        out: list[str] = []
        for pattern, (_, expansion) in zip(self.patterns, self.entries):
            if expansion not in out and pattern.search(query):
                out.append(expansion)
        return " ".join(out)


def parse_glossary(text: str, name: str) -> Glossary:
    """A glossary from its text (one ``terms<TAB>expansion`` entry a line); :class:`ConfigError` naming the
    line of a bad entry."""
    entries = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        terms, tab, expansion = line.partition("\t")
        words = tuple(t.strip() for t in terms.split("|") if t.strip())
        if not tab or not words or not expansion.strip():
            raise ConfigError(
                f"{name}:{lineno}: expected 'terms<TAB>expansion' (terms separated by '|'), got {line.strip()!r}"
            )
        entries.append((words, " ".join(expansion.split())))
    return Glossary(name, tuple(entries))


@lru_cache(maxsize=16)
def _from_file(path: str, mtime: float, size: int) -> Glossary:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the glossary ({type(exc).__name__}: {exc})") from None
    return parse_glossary(text, path)


def load_glossary(spec: str | None) -> Glossary | None:
    """The glossary ``spec`` names: a built-in name (``finance``), a file path, or ``None``/``"none"`` (off).

    Raises
    ------
    ConfigError
        Neither a built-in name nor a readable file, or a bad entry (naming its line).
    """
    if spec is None or (isinstance(spec, str) and spec.strip().lower() in _OFF):
        return None
    if not isinstance(spec, str):
        raise ConfigError(f"glossary must be a built-in name, a file path or 'none', got {spec!r}")
    if spec in BUILT_IN:
        return _built_in(spec)
    path = os.path.expanduser(spec)
    if not os.path.isfile(path):
        raise ConfigError(
            f"glossary {spec!r} is neither a built-in glossary ({', '.join(BUILT_IN)}) nor a file; "
            "use 'none' to turn query expansion off"
        )
    st = os.stat(path)
    return _from_file(os.path.abspath(path), st.st_mtime, st.st_size)


@cache
def _built_in(name: str) -> Glossary:
    return Glossary(name, tuple((tuple(terms.split("|")), expansion) for terms, expansion in BUILT_IN[name]))


def expanded_query(query: str, glossary: str | None) -> tuple[str, str]:
    """``(text to search, expansion)``: ``query`` with the expansion of the terms it names appended (the query
    itself and ``""`` when it names none or ``glossary`` is off)."""
    found = load_glossary(glossary)
    expansion = found.expand(query) if found is not None else ""
    return (f"{query} {expansion}" if expansion else query), expansion
