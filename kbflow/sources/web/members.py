"""API references' copied members read as pointers to their definitions, not as copies of their text.

An API generator documents a generic member again on every type that has
it. rustdoc writes, on each type's page, every method of every trait the
type implements (``Trait Implementations``), of the auto traits
(``Auto Trait Implementations``) and of the blanket implementations
(``Blanket Implementations``: ``From``, ``Into``, ``TryFrom``, ``Borrow``
...), each with the trait's own documentation: an iterator's page holds the
75 methods of ``Iterator`` again. Such copies differ from each other by the
owning type's name only; they outrank the type's own members and fill a
top 5 with one text.

:func:`fold_copies` reads each such implementation block as one pointer:
its heading (``impl<'a, K, V> Iterator for Keys<'a, K, V>``) and one line
naming its members, "Members documented on Iterator: next, size_hint,
count, ...", so a search for a member's name still finds the types that
have it, and the member's text is read where it is defined. A member the
type documents itself (an implementation whose documentation is its own,
not the trait's summary with its "Read more" link) is kept whole.

A module's page lists its items (``<dl class="item-table">``), each with
the first line of the item's own page: each list is read as one line,
"Documented on their pages: Difference, Drain, IndexSet, ...".

Javadoc marks a method that overrides or implements one without documenting
it ("Description copied from interface: ``Comparable``", then the
interface's description again): that copy is read as its pointer line,
"Documented on Comparable.", the method's signature and its "Specified by"
and "Overrides" notes kept.

Javadoc also opens each class page with summary tables (Method Summary,
Field Summary, ...): one row per member, its signature and the first
sentence of its description, which the member's own entry below says
again. A package's page lists its classes so, each with the first sentence
of its class's page. Each such table is read as one line naming its
members, "Documented below: add, addAll, clone, ...", or "Documented on
their pages: ArrayUtils, BooleanUtils, ...", so a search for what a
member does finds the member's entry, not a summary row of twenty
overloads (``ArrayUtils``' summary of ``indexOf``).

Doxygen lists, in a class's member summary, every member of each base
class again (``<tr class="inherit_header ...">`` "Public Member Functions
inherited from ``geo::Shape``", then one row and one brief description per
member, each ``<tr class="... inherit ...">``): each such list is read as one
line, "Public Member Functions inherited from geo::Shape: area, name,
translate.".

Doxygen opens each class, file and namespace page with its own members'
summary too (``<table class="memberdecls">``: each member's declaration and
brief description, which its entry below says again): each list is read as
one line, "Documented below: assertion, isEnabledFor, log, ..." ("Documented
on their pages" where the entries are elsewhere: a namespace's classes).

Sphinx's ``autosummary`` tables (``<table class="autosummary">``) list a
module's or class's members, each with the first line of its docstring,
which the member's own entry (on the page or its own) says again: each is
read as one line naming them, as Javadoc's summaries are.

TypeDoc marks each inherited member (``<section class="tsd-member
tsd-is-inherited">``, "Inherited from ``CommanderError.code``"): the
inherited members of a group are read as one line where the first of them
stood, "Inherited from CommanderError: code, exitCode, nestedError.".
"""

from __future__ import annotations

import re

from kbflow.sources.web.tree import Node

__all__ = ["COPIED_SECTIONS", "fold_copies"]

#: rustdoc's lists of implementations whose members are the trait's, as copied onto the type
COPIED_SECTIONS = frozenset(
    {"trait-implementations-list", "synthetic-implementations-list", "blanket-implementations-list"}
)
#: lists where every member is a copy (auto and blanket implementations are never the type's own code)
_ALWAYS_COPIED = frozenset({"synthetic-implementations-list", "blanket-implementations-list"})
_MEMBER_ID = re.compile(r"^(?:method|tymethod|associatedtype|associatedconstant)\.(.+)$")


def _classes(node: Node) -> list[str]:
    return node.attrs.get("class", "").split()


def _text(node: Node | str) -> str:
    if isinstance(node, str):
        return node
    return "".join(_text(c) for c in node.children)


def _elements(node: Node, tag: str | None = None, cls: str | None = None) -> list[Node]:
    """``node``'s descendants (and itself) with ``tag`` and the class ``cls``, in document order."""
    out = []
    stack: list[Node] = [node]
    while stack:
        cur = stack.pop()
        if (tag is None or cur.tag == tag) and (cls is None or cls in _classes(cur)):
            out.append(cur)
        stack.extend(reversed([c for c in cur.children if isinstance(c, Node)]))
    return out


def _member(entry: Node) -> tuple[str, bool] | None:
    """The name of a member entry of an implementation (``<details class="method-toggle">`` or a bare
    ``<section class="trait-impl">``) and whether its documentation is the trait's, copied; ``None`` for
    anything else."""
    section = entry if entry.tag == "section" else next(iter(_elements(entry, "section")), None)
    if section is None or "trait-impl" not in _classes(section):
        return None
    found = _MEMBER_ID.match(section.attrs.get("id", ""))
    if found is None:
        return None
    name = re.sub(r"-\d+$", "", found.group(1))  # rustdoc numbers a page's repeated anchors: method.next-1
    docs = _elements(entry, None, "docblock")
    copied = not docs or any(_text(a).strip() == "Read more" for d in docs for a in _elements(d, "a"))
    return name, copied


def _trait(block: Node) -> str:
    """The trait an implementation block implements: its heading's ``<a class="trait">`` (``"the trait"``
    where its heading names none)."""
    for header in _elements(block, "h3", "code-header"):
        for link in _elements(header, "a", "trait"):
            return _text(link).strip()
    return "the trait"


def _fold_block(block: Node, always: bool) -> None:
    """Replace the copied members of one implementation block (``<details class="implementors-toggle">``)
    by a line naming them."""
    for items in _elements(block, "div", "impl-items"):
        kept: list[Node | str] = []
        names: list[str] = []
        for child in items.children:
            member = _member(child) if isinstance(child, Node) else None
            if member is not None and (always or member[1]):
                names.append(member[0])
            else:
                kept.append(child)
        if names:
            unique = list(dict.fromkeys(names))
            kept.append(f"Members documented on {_trait(block)}: {', '.join(unique)}.")
        items.children = kept


#: Javadoc's label before a description copied from the member a method overrides or implements (JDK 9+, JDK 8)
_COPIED_LABELS = frozenset({"descfrm-type-label", "descfrmTypeLabel"})


def _fold_javadoc(root: Node) -> int:
    """Javadoc: each description copied from an overridden or implemented member read as a pointer line."""
    folded = 0
    for parent in _elements(root):
        children = parent.children
        for i, child in enumerate(children):
            if not isinstance(child, Node) or child.tag != "div" or "block" not in _classes(child):
                continue
            label = next((s for s in _elements(child, "span") if _COPIED_LABELS.intersection(_classes(s))), None)
            if label is None:
                continue
            owner = " ".join(_text(c) for c in _elements(label, "code")).strip() or "the member it overrides"
            child.children = [f"Documented on {owner}."]
            at = next((j for j in range(i + 1, len(children)) if isinstance(children[j], Node)), len(children))
            copy = children[at] if at < len(children) else None
            if isinstance(copy, Node) and copy.tag == "div" and "block" in _classes(copy):
                del children[at]
            folded += 1
    return folded


#: Javadoc's summary tables: JDK 16+ (``<div class="summary-table">``), JDK 8-15 (``<table class="memberSummary">``,
#: ``typeSummary``, ``overviewSummary``, ``summary-table``)
_SUMMARY_TABLES = frozenset({"summary-table", "memberSummary", "typeSummary", "overviewSummary", "packagesSummary"})
#: the cell that names a row's member (three-column tables), else its first cell (a package's classes)
_NAME_CELLS = ("col-second", "colSecond", "col-constructor-name", "colConstructorName")
_FIRST_CELLS = ("col-first", "colFirst")


def _header_cell(cell: Node) -> bool:
    """A summary table's column header (JDK 16+: ``table-header``; before: ``<th scope="col">``)."""
    return "table-header" in _classes(cell) or (cell.tag == "th" and cell.attrs.get("scope") == "col")


def _name_links(table: Node) -> list[Node]:
    """The links that name a summary's members: ``<a class="member-name-link">`` (JDK 16+), the link in a
    ``<span class="memberNameLink">`` or ``typeNameLink`` (JDK 8-15, where a member's name shares its cell)."""
    out = []
    for node in _elements(table):
        classes = set(_classes(node))
        if node.tag == "a" and "member-name-link" in classes:
            out.append(node)
        elif node.tag == "span" and classes & {"memberNameLink", "typeNameLink"}:
            out.extend(_elements(node, "a")[:1])
    return out


def _summary_names(table: Node) -> tuple[list[str], bool]:
    """The names a Javadoc summary table lists (each once, in order), and whether they are documented on
    the page itself (their links are to ``#`` anchors)."""
    links = _name_links(table)
    if not links:  # a package's classes: the first link of each row's naming cell
        rows = [c for c in _elements(table) if not _header_cell(c)]
        cells = [c for c in rows if set(_NAME_CELLS) & set(_classes(c))]
        cells = cells or [c for c in rows if set(_FIRST_CELLS) & set(_classes(c))]
        links = [found[0] for found in (_elements(cell, "a") for cell in cells) if found]
    names = [" ".join(_text(link).split()) for link in links]
    here = all(link.attrs.get("href", "").startswith("#") for link in links)
    return list(dict.fromkeys(n for n in names if n)), here


def _fold_javadoc_summaries(root: Node) -> int:
    """Javadoc: each summary table read as one line naming what it lists (see the module's docs)."""
    folded = 0
    for table in _elements(root):
        if not _SUMMARY_TABLES & set(_classes(table)):
            continue
        names, here = _summary_names(table)
        if not names:
            continue
        where = "Documented below" if here else "Documented on their pages"
        table.children = [f"{where}: {', '.join(names)}."]
        table.tag = "div" if table.tag in ("table", "tbody", "tr") else table.tag
        folded += 1
    return folded


def _inherited_from(section: Node) -> str:
    """The type a TypeDoc member is inherited from: the first link of its "Inherited from" line."""
    for aside in _elements(section, "aside", "tsd-sources"):
        for para in _elements(aside, "p"):
            if _text(para).strip().startswith("Inherited from"):
                links = _elements(para, "a")
                return _text(links[0]).strip() if links else _text(para).strip()[len("Inherited from") :].strip()
    return "its base"


def _fold_typedoc(root: Node) -> int:
    """TypeDoc: the inherited members of each group read as one line naming them, where the first stood."""
    folded = 0
    for parent in _elements(root):
        if not any(isinstance(c, Node) and "tsd-is-inherited" in _classes(c) for c in parent.children):
            continue
        kept: list[Node | str] = []
        lines: dict[str, list[str]] = {}
        slot: dict[str, int] = {}
        for child in parent.children:
            if isinstance(child, Node) and child.tag == "section" and "tsd-is-inherited" in _classes(child):
                base = _inherited_from(child)
                anchor = next((a.attrs["id"] for a in _elements(child, "a", "tsd-anchor") if a.attrs.get("id")), "")
                name = anchor or "".join(_text(h) for h in _elements(child, "h3")[:1]).strip() or "a member"
                if base not in lines:
                    lines[base] = []
                    slot[base] = len(kept)
                    kept.append("")
                lines[base].append(name)
                folded += 1
            else:
                kept.append(child)
        for base, names in lines.items():
            kept[slot[base]] = f"Inherited from {base}: {', '.join(names)}."
        parent.children = kept
    return folded


def _row_group(row: Node) -> str | None:
    """The inherited list a Doxygen summary row belongs to (``pub_methods_classgeo_1_1Shape``), else ``None``."""
    classes = _classes(row)
    if row.tag != "tr" or not ({"inherit", "inherit_header"} & set(classes)):
        return None
    return next((c for c in classes if c not in ("inherit", "inherit_header") and ":" not in c), None)


def _row_kind(row: Node) -> str | None:
    """A Doxygen summary row's kind (``memitem``, ``memdesc``, ``separator``, ``memTemplParams``...), ``None`` for
    an inherited member's row (:func:`_row_group`) or any other element."""
    classes = _classes(row)
    if row.tag != "tr" or {"inherit", "inherit_header"} & set(classes) or not classes:
        return None
    kind = classes[0].split(":", 1)[0]
    return kind if kind in ("memitem", "memdesc", "separator", "memTemplParams", "memTemplItem") else None


def _fold_doxygen_summaries(root: Node) -> int:
    """Doxygen: each class's own member summary (``<table class="memberdecls">``: one row per member, its
    declaration and its brief description, which the member's entry below says again) read as one line naming
    them, "Documented below: assertion, log, ..." (or "Documented on their pages" where they link elsewhere)."""
    anchors = {n.attrs["id"] for n in _elements(root) if n.attrs.get("id")}
    folded = 0
    for table in _elements(root, "table", "memberdecls"):
        for parent in [table, *_elements(table)]:
            rows = [c for c in parent.children if isinstance(c, Node) and _row_kind(c)]
            if not rows:
                continue
            links = [
                found[0]
                for row in rows
                if _row_kind(row) in ("memitem", "memTemplItem")
                for found in [_elements(next(iter(_elements(row, "td", "memItemRight")), row), "a")]
                if found
            ]
            names = list(dict.fromkeys(" ".join(_text(a).split()) for a in links if _text(a).strip()))
            if not names:
                continue
            here = all(a.attrs.get("href", "").rpartition("#")[2] in anchors for a in links)
            line = Node("tr", {"class": "memberlist"}, parent)
            cell = Node(
                "td", {}, line, [f"{'Documented below' if here else 'Documented on their pages'}: {', '.join(names)}."]
            )
            line.children = [cell]
            at = parent.children.index(rows[0])
            parent.children = [c for c in parent.children if not (isinstance(c, Node) and _row_kind(c))]
            parent.children.insert(at, line)
            folded += len(names)
    return folded


def _fold_doxygen(root: Node) -> int:
    """Doxygen: each list of members inherited from a base class read as its header and the members' names."""
    folded = 0
    for parent in _elements(root):
        if not any(isinstance(c, Node) and _row_group(c) for c in parent.children):
            continue
        kept: list[Node | str] = []
        names: dict[str, list[str]] = {}
        header: dict[str, Node] = {}
        for child in parent.children:
            group = _row_group(child) if isinstance(child, Node) else None
            if group is None or not isinstance(child, Node):
                kept.append(child)
            elif "inherit_header" in _classes(child):
                header[group] = child
                names[group] = []
                kept.append(child)
            elif any(c.startswith("memitem:") for c in _classes(child)):
                cells = _elements(child, "td", "memItemRight")
                links = _elements(cells[0], "a") if cells else []
                names.setdefault(group, []).append(_text(links[0] if links else child).strip())
                folded += 1
        for group, row in header.items():
            listed = ", ".join(dict.fromkeys(n for n in names.get(group, []) if n))
            title = " ".join(_text(row).split())
            cell = next(iter(_elements(row, "td")), None)
            if cell is not None:  # the header's cell, now holding the line (a row reads its cells)
                cell.children = [f"{title}: {listed}." if listed else title]
                row.children = [cell]
            row.attrs["class"] = f"inherited {group}"  # read as the list it stands for, not as a page header
        parent.children = kept
    return folded


#: the classes rustdoc gives a link to an item by its kind (a module's item list names each item so)
_ITEM_KINDS = frozenset(
    {
        "mod",
        "struct",
        "enum",
        "trait",
        "fn",
        "macro",
        "type",
        "constant",
        "static",
        "union",
        "traitalias",
        "primitive",
        "keyword",
        "attr",
        "derive",
        "foreigntype",
    }
)


def _fold_item_tables(root: Node) -> int:
    """rustdoc: each module's list of items (``item-table``) read as one line naming them."""
    folded = 0
    for table in _elements(root):
        if "item-table" not in _classes(table):
            continue
        names = []
        for link in _elements(table, "a"):
            name = " ".join(_text(link).split())
            if name and _ITEM_KINDS.intersection(_classes(link)):  # not a link inside an item's summary
                names.append(name)
        if names:
            table.children = [f"Documented on their pages: {', '.join(dict.fromkeys(names))}."]
            table.tag = "div"
            folded += 1
    return folded


def _fold_autosummary(root: Node) -> int:
    """Sphinx: each ``autosummary`` table read as one line naming the members it links to."""
    folded = 0
    for table in _elements(root, "table", "autosummary"):
        links = [a for a in _elements(table, "a") if "internal" in _classes(a) and a.attrs.get("href")]
        names = [" ".join(_text(a).split()) for a in links]
        if not any(names):
            continue
        here = all(a.attrs["href"].startswith("#") for a in links)
        where = "Documented below" if here else "Documented on their pages"
        table.children = [f"{where}: {', '.join(dict.fromkeys(n for n in names if n))}."]
        table.tag = "div"
        folded += 1
    return folded


def fold_copies(root: Node, generator: str) -> int:
    """Fold what a ``generator``'s page copies from elsewhere into pointer lines, in place (see the module's
    docs); the number of members or blocks folded. rustdoc's, Javadoc's, Doxygen's, TypeDoc's and Sphinx's pages
    are read so."""
    if generator.startswith("javadoc"):
        return _fold_javadoc(root) + _fold_javadoc_summaries(root)
    if generator == "doxygen":
        return _fold_doxygen(root) + _fold_doxygen_summaries(root)
    if generator != "rustdoc":  # TypeDoc and Sphinx name themselves in no <meta>: their pages are known by classes
        return _fold_typedoc(root) + _fold_autosummary(root)
    folded = _fold_item_tables(root)
    for listing in _elements(root, "div"):
        which = listing.attrs.get("id", "")
        if which not in COPIED_SECTIONS:
            continue
        for block in _elements(listing, "details", "implementors-toggle"):
            _fold_block(block, which in _ALWAYS_COPIED)
            folded += 1
    return folded
