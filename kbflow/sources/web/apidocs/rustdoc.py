"""rustdoc's pages: a trait's members copied onto every implementor read as one pointer line each.

rustdoc writes, on each type's page, every method of every trait the type
implements (``Trait Implementations``), of the auto traits (``Auto Trait
Implementations``) and of the blanket implementations (``Blanket
Implementations``: ``From``, ``Into``, ``TryFrom``, ``Borrow`` ...), each with
the trait's own documentation: an iterator's page holds the 75 methods of
``Iterator`` again. Such copies differ from each other by the owning type's
name only; they outrank the type's own members and fill a top 5 with one
text.

:func:`read` reads each such implementation block as one pointer: its
heading (``impl<'a, K, V> Iterator for Keys<'a, K, V>``) and one line naming
its members, "Members documented on Iterator: next, size_hint, count, ...",
so a search for a member's name still finds the types that have it, and the
member's text is read where it is defined. A member the type documents
itself (an implementation whose documentation is its own, not the trait's
summary with its "Read more" link) is kept whole.

A module's page lists its items (``<dl class="item-table">``), each with the
first line of the item's own page: each list is read as one line,
"Documented on their pages: Difference, Drain, IndexSet, ...".

A trait's or type's declaration at the top of its page (``<pre
class="item-decl">``) writes every member's signature again, before each
member's own entry below; where the list is long, rustdoc folds it into a
closed ``<details class="type-contents-toggle">`` ("Show 106 methods"). That
list is read as one line, "Documented below: interleave, zip_longest, ...":
on itertools' ``Itertools`` trait it was 24 chunks of signatures, each
matching questions about the methods it names.
"""

from __future__ import annotations

import re

from kbflow.sources.web.apidocs.nodes import classes, elements, text
from kbflow.sources.web.tree import Node
from kbflow.text.pointers import DOCUMENTED_BELOW, DOCUMENTED_ELSEWHERE, members_of, pointer_line

__all__ = ["COPIED_SECTIONS", "read"]

#: rustdoc's lists of implementations whose members are the trait's, as copied onto the type
COPIED_SECTIONS = frozenset(
    {"trait-implementations-list", "synthetic-implementations-list", "blanket-implementations-list"}
)
#: lists where every member is a copy (auto and blanket implementations are never the type's own code)
_ALWAYS_COPIED = frozenset({"synthetic-implementations-list", "blanket-implementations-list"})
#: a link to a member's own entry on the page (not the ``#`` of a notable-trait tooltip, "ⓘ")
_OWN_ITEM = re.compile(r"^#(?:method|tymethod|associatedtype|associatedconstant|variant|structfield)\.")
_MEMBER_ID = re.compile(r"^(?:method|tymethod|associatedtype|associatedconstant)\.(.+)$")


def _member(entry: Node) -> tuple[str, bool] | None:
    """The name of a member entry of an implementation (``<details class="method-toggle">`` or a bare
    ``<section class="trait-impl">``) and whether its documentation is the trait's, copied; ``None`` for
    anything else."""
    section = entry if entry.tag == "section" else next(iter(elements(entry, "section")), None)
    if section is None or "trait-impl" not in classes(section):
        return None
    found = _MEMBER_ID.match(section.attrs.get("id", ""))
    if found is None:
        return None
    name = re.sub(r"-\d+$", "", found.group(1))  # rustdoc numbers a page's repeated anchors: method.next-1
    docs = elements(entry, None, "docblock")
    copied = not docs or any(text(a).strip() == "Read more" for d in docs for a in elements(d, "a"))
    return name, copied


def _trait(block: Node) -> str:
    """The trait an implementation block implements: its heading's ``<a class="trait">`` (``"the trait"``
    where its heading names none)."""
    for header in elements(block, "h3", "code-header"):
        for link in elements(header, "a", "trait"):
            return text(link).strip()
    return "the trait"


def _fold_block(block: Node, always: bool) -> None:
    """Replace the copied members of one implementation block (``<details class="implementors-toggle">``)
    by a line naming them."""
    for items in elements(block, "div", "impl-items"):
        kept: list[Node | str] = []
        names: list[str] = []
        for child in items.children:
            member = _member(child) if isinstance(child, Node) else None
            if member is not None and (always or member[1]):
                names.append(member[0])
            else:
                kept.append(child)
        if names:
            kept.append(pointer_line(members_of(_trait(block)), names))
        items.children = kept


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
    for table in elements(root):
        if "item-table" not in classes(table):
            continue
        names = []
        for link in elements(table, "a"):
            name = " ".join(text(link).split())
            if name and _ITEM_KINDS.intersection(classes(link)):  # not a link inside an item's summary
                names.append(name)
        if names:
            table.children = [pointer_line(DOCUMENTED_ELSEWHERE, names)]
            table.tag = "div"
            folded += 1
    return folded


def _fold_declarations(root: Node) -> int:
    """rustdoc: each long list of a type's members in its declaration (``<pre class="item-decl">``'s collapsed
    ``<details class="type-contents-toggle">``, "Show 106 methods") read as one line naming them."""
    folded = 0
    for decl in elements(root, "pre", "item-decl"):
        for toggle in elements(decl, "details", "type-contents-toggle"):
            names = [text(a).strip() for a in elements(toggle, "a") if _OWN_ITEM.match(a.attrs.get("href", ""))]
            if names:
                toggle.children = [f"    {pointer_line(DOCUMENTED_BELOW, names)}\n"]
                folded += 1
    return folded


def read(root: Node) -> int:
    """Fold a rustdoc page's copied trait members, its long declarations and its modules' item lists into pointer
    lines, in place; the number of blocks and lists folded."""
    folded = _fold_item_tables(root) + _fold_declarations(root)
    for listing in elements(root, "div"):
        which = listing.attrs.get("id", "")
        if which not in COPIED_SECTIONS:
            continue
        for block in elements(listing, "details", "implementors-toggle"):
            _fold_block(block, which in _ALWAYS_COPIED)
            folded += 1
    return folded
