"""Sphinx's pages: ``autosummary`` tables, the members a class inherits and those without docs, read as lines.

Sphinx's ``autosummary`` tables (``<table class="autosummary">``) list a
module's or class's members, each with the first line of its docstring,
which the member's own entry (on the page or its own) says again: each is
read as one line naming them, as Javadoc's summaries are.

With ``:inherited-members:``, autodoc documents every member a class
inherits again under the class, and marks none of them as inherited. Two
things tell them apart all the same:

- A method inherited from a class of the project: with ``viewcode`` on,
  Sphinx links a class's own methods to their source (``[source]``), and
  not the methods it inherits. A method without that link, which a base
  the page documents defines (the nearest, through each class's "Bases:"
  line), is read as a pointer to the base's entry. (Attributes and
  properties never have the link, so its absence says nothing of them.)
- A member inherited from Python itself (``dict.update``, ``object.__eq__``,
  ``BaseException.__cause__``): its documentation is the interpreter's own
  docstring, word for word ("Return self==value.", "Implement
  delattr(self, name)."), and it has no ``[source]`` link.

Each class's copies are read as one line per origin, "Inherited from
MutableBidict: putall, forceput." or "Inherited from Python's built-in
types: __eq__, __delattr__, update.", so a search for what a member does
finds its definition, not a copy under each subclass; and a question about
a class meets its own members, not the dozens of members every mapping or
exception has. With ``:undoc-members:`` and ``:special-members:``, autodoc
also writes entries of a signature alone (``__slots__ = ()``, ``__dict__ =
mappingproxy({...})``): each would be a heading with nothing below it,
which joins the entry above it, so a documented member's chunk would read
as its neighbours' reprs. They are named on one line, "Without
documentation: __slots__, __dict__.". The lines close the class under a
heading of their own, "Other members of OrderedBidict", so each member's
entry is its signature and its documentation alone.
"""

from __future__ import annotations

import functools
import re

from kbflow.sources.web.apidocs.nodes import classes, elements, inherited_line, text
from kbflow.sources.web.tree import Node
from kbflow.text.pointers import DOCUMENTED_BELOW, DOCUMENTED_ELSEWHERE, WITHOUT_DOCUMENTATION, pointer_line

__all__ = ["BUILTINS", "read"]

#: the origin named for a member whose documentation is the interpreter's own
BUILTINS = "Python's built-in types"
#: the kinds of a class's entries (``<dl class="py method">``) that can be inherited
_MEMBER_KINDS = frozenset({"method", "attribute", "property", "classmethod", "staticmethod"})
#: the kinds of entries viewcode links to their source
_METHOD_KINDS = frozenset({"method", "classmethod", "staticmethod"})
_WORD = re.compile(r"[^\W_]+")
#: viewcode's link to a member's definition: ``_modules/pkg/mod.html#Owner.member``
_VIEWCODE_TARGET = re.compile(r"_modules/.+\.html#(?P<path>[\w.]+)$")
#: the origin of a member without documentation, for its line
_UNDOCUMENTED = ""


def _words(value: str) -> str:
    return " ".join(_WORD.findall(value.lower()))


@functools.cache
def _builtin_docs() -> frozenset[str]:
    """The words of the docstrings of Python's built-in types' members (each whole, and without its first line,
    which autodoc may have made the signature), as :func:`_words` gives them."""
    import collections.abc

    class Plain:  # what every class written in Python has: __dict__, __weakref__ ("list of weak references ...")
        pass

    types: list[type] = [object, type, BaseException, Exception, dict, list, tuple, set, frozenset, str, int, bytes]
    types += [getattr(collections.abc, name) for name in collections.abc.__all__] + [Plain]
    docs: set[str] = set()
    for cls in types:
        for name in dir(cls):
            doc = getattr(getattr(cls, name, None), "__doc__", None)
            if isinstance(doc, str) and doc.strip():
                docs.update((_words(doc), _words(doc.strip().partition("\n")[2])))
    # the same two as Python before 3.11 wrote them, as a site built then says them
    docs.update(
        _words(f"{what} (if defined)")
        for what in ("list of weak references to the object", "dictionary for instance variables")
    )
    docs.discard("")
    return frozenset(docs)


def _signature_and_body(entry: Node) -> tuple[Node | None, Node | None]:
    signature = next((c for c in entry.children if isinstance(c, Node) and c.tag == "dt"), None)
    body = next((c for c in entry.children if isinstance(c, Node) and c.tag == "dd"), None)
    return signature, body


def _defined_at(signature: Node) -> str | None:
    """``Owner.member`` where viewcode's ``[source]`` link of an entry's signature says it is defined."""
    for link in elements(signature, "a"):
        if elements(link, "span", "viewcode-link") and (found := _VIEWCODE_TARGET.search(link.attrs.get("href", ""))):
            return found.group("path")
    return None


def _short(name: str) -> str:
    """A class's name without its module or type parameters (``bidict._base.BidictBase[KT, VT]``: ``BidictBase``)."""
    return name.split("[", 1)[0].strip().rpartition(".")[2]


class _Classes:
    """The classes a page documents (its class entries): each one's bases (its "Bases:" line) and the members
    viewcode says it defines (their ``[source]`` links), by the class's short name."""

    def __init__(self, entries: list[Node]) -> None:
        self.bases: dict[str, list[str]] = {}
        self.defines: dict[str, set[str]] = {}
        self.viewcode = False
        for cls in entries:
            signature, body = _signature_and_body(cls)
            name = _short(signature.attrs.get("id", "")) if signature is not None else ""
            if not name or body is None:
                continue
            bases = next((text(p) for p in elements(body, "p") if text(p).strip().startswith("Bases:")), "")
            self.bases[name] = [_short(b) for b in re.split(r",(?![^\[]*\])", bases.strip()[len("Bases:") :]) if b]
            for entry in body.children:
                member_signature = _signature_and_body(entry)[0] if isinstance(entry, Node) else None
                defined = _defined_at(member_signature) if member_signature is not None else None
                if defined:
                    self.viewcode = True
                    owner, _, member = defined.rpartition(".")
                    self.defines.setdefault(_short(owner), set()).add(member)

    def definer(self, owner: str, member: str) -> str | None:
        """The nearest base of ``owner`` (breadth first, as far as the page documents them) that defines
        ``member``."""
        seen, queue = {owner}, list(self.bases.get(owner, []))
        while queue:
            base = queue.pop(0)
            if base in seen:
                continue
            seen.add(base)
            if member in self.defines.get(base, ()):
                return base
            queue.extend(self.bases.get(base, []))
        return None


def _origin(entry: Node, owner: str, page: _Classes) -> str | None:
    """Where the member documented by ``entry`` (a ``<dl class="py method">`` under the class ``owner``, its
    short name) is defined, if it is a copy: a base class the page documents, or :data:`BUILTINS`; ``None``
    for the class's own member (or one whose origin the page does not say)."""
    signature, body = _signature_and_body(entry)
    if signature is None:
        return None
    member = _name(entry)
    defined = _defined_at(signature)
    if defined is not None:  # its source link names where it is defined
        base = _short(defined.rpartition(".")[0])
        return base if base != owner and member in page.defines.get(base, ()) else None
    # viewcode links a class's own methods (never an attribute or a property): a method without its link is a copy
    callable_ = bool(_METHOD_KINDS & set(classes(entry)))
    if page.viewcode and callable_ and (definer := page.definer(owner, member)):
        return definer
    words = _words(text(body)) if body is not None else ""
    return BUILTINS if words and words in _builtin_docs() else None


def _class_entries(root: Node) -> list[Node]:
    return [n for n in elements(root, "dl") if "py" in classes(n) and {"class", "exception"} & set(classes(n))]


def _undocumented(entry: Node) -> bool:
    """A member entry with a signature and nothing below it (``:undoc-members:``, ``:special-members:``:
    ``__slots__ = ()``, ``__dict__ = mappingproxy(...)``)."""
    body = _signature_and_body(entry)[1]
    return body is None or not text(body).strip()


def _fold_inherited(root: Node) -> int:
    """Each class's members inherited from elsewhere read as one line per origin, and its members without
    documentation as one line naming them, under a heading of their own closing the class; how many members."""
    entries = _class_entries(root)
    page = _Classes(entries)
    folded = 0
    for cls in entries:
        signature, body = _signature_and_body(cls)
        owner = _short(signature.attrs.get("id", "")) if signature is not None else ""
        if not owner or body is None:
            continue
        kept: list[Node | str] = []
        lines: dict[str, list[str]] = {}
        for child in body.children:
            kinds = set(classes(child)) if isinstance(child, Node) and child.tag == "dl" else set()
            if not isinstance(child, Node) or not kinds & _MEMBER_KINDS:
                kept.append(child)
                continue
            origin = _origin(child, owner, page) or (_UNDOCUMENTED if _undocumented(child) else None)
            if origin is None:
                kept.append(child)
                continue
            lines.setdefault(origin, []).append(_name(child))
            folded += 1
        if lines:
            kept.append(_pointer_entry(body, owner, lines))
        body.children = kept
    return folded


def _pointer_entry(body: Node, owner: str, lines: dict[str, list[str]]) -> Node:
    """An entry closing a class's body, "Other members of Child", whose lines name the members folded: one line
    per origin ("Inherited from Base: put."), and "Without documentation: __slots__." last. The page has no
    element of its own for it: its css path is the class body's, which holds the members it names."""
    entry = Node("dl", {"class": "py attribute"}, body, css=body.css)
    heading = Node("dt", {"class": "sig sig-object py"}, entry, [f"Other members of {owner}"], css=body.css)
    listing = Node("dd", {}, entry, css=body.css)
    for origin, names in sorted(lines.items(), key=lambda item: item[0] == _UNDOCUMENTED):
        line = inherited_line(origin, names) if origin else pointer_line(WITHOUT_DOCUMENTATION, names)
        listing.children.append(Node("p", {}, listing, [line], css=body.css))
    entry.children = [heading, listing]
    return entry


def _name(entry: Node) -> str:
    """The member's name in its signature (``<span class="sig-name descname">``)."""
    for span in elements(entry, "span", "descname"):
        return " ".join(text(span).split())
    return "a member"


def _fold_autosummary(root: Node) -> int:
    """Each ``autosummary`` table read as one line naming the members it links to."""
    folded = 0
    for table in elements(root, "table", "autosummary"):
        links = [a for a in elements(table, "a") if "internal" in classes(a) and a.attrs.get("href")]
        names = [" ".join(text(a).split()) for a in links]
        if not any(names):
            continue
        here = all(a.attrs["href"].startswith("#") for a in links)
        where = DOCUMENTED_BELOW if here else DOCUMENTED_ELSEWHERE
        table.children = [pointer_line(where, names)]
        table.tag = "div"
        folded += 1
    return folded


def read(root: Node) -> int:
    """Read a Sphinx page in place: its ``autosummary`` tables, and each class's inherited members and members
    without documentation, as lines (see the module's docs). Returns how many tables and members were folded."""
    return _fold_autosummary(root) + _fold_inherited(root)
