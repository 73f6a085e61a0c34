"""Pointer lines: what kbflow writes in an API reference where a generator copied members documented elsewhere.

API generators document a member again on every page that has it: rustdoc
writes a trait's methods on each implementor, Sphinx and pdoc an inherited
method on each subclass, Javadoc and Doxygen a summary table of the members
the page documents below. The readers of :mod:`kbflow.sources.web.apidocs`
replace each such copy by one line naming the members, headed by where they
are documented:

- "Members documented on Iterator: next, size_hint, count." (rustdoc's
  trait, auto-trait and blanket implementations);
- "Inherited from Command: name, help." (Sphinx, pdoc, TypeDoc);
- "Public Member Functions inherited from geo::Shape: area, name."
  (Doxygen);
- "Documented below: add, addAll." and "Documented on their pages: Difference,
  Drain." (the member summaries of Javadoc, Doxygen, Sphinx and rustdoc);
- "Without documentation: __slots__." (Sphinx);
- "Documented on Collection.add(E)." (Javadoc's copied description).

The lines are built here (:func:`pointer_line`) and read back here
(:func:`is_pointer_line`): the retriever ranks a chunk that holds nothing
but such lines a share below the pages' own text
(:mod:`kbflow.retrieve.pointers`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "DOCUMENTED_BELOW",
    "DOCUMENTED_ELSEWHERE",
    "WITHOUT_DOCUMENTATION",
    "documented_on",
    "inherited_from",
    "is_pointer_line",
    "members_of",
    "pointer_line",
]

#: the lead of a summary of members documented on the same page
DOCUMENTED_BELOW = "Documented below"
#: the lead of a summary of items documented on pages of their own
DOCUMENTED_ELSEWHERE = "Documented on their pages"
#: the lead of the members Sphinx lists without a docstring
WITHOUT_DOCUMENTATION = "Without documentation"


def members_of(owner: str) -> str:
    """The lead of a trait's members copied onto an implementor: "Members documented on Iterator"."""
    return f"Members documented on {owner}"


def inherited_from(origin: str, group: str = "") -> str:
    """The lead of members inherited from ``origin``: "Inherited from Command", or with Doxygen's ``group``
    ("Public Member Functions"), "Public Member Functions inherited from geo::Shape"."""
    return f"{group} inherited from {origin}" if group else f"Inherited from {origin}"


def documented_on(owner: str) -> str:
    """The line that stands for a description copied from ``owner``: "Documented on Collection.add(E)."."""
    return f"Documented on {owner}."


def pointer_line(lead: str, names: Iterable[str]) -> str:
    """``lead`` and the ``names`` it stands for (each once, in order, blanks left out): "Inherited from Command:
    name, help."; ``lead`` alone, closed by a full stop, where no name is left."""
    unique = list(dict.fromkeys(n for n in names if n))
    return f"{lead}: {', '.join(unique)}." if unique else f"{lead}."


_POINTER = re.compile(
    r"^(?:Members documented on .+?|(?:.{1,80} )?[Ii]nherited from .+?|"
    rf"{DOCUMENTED_BELOW}|{DOCUMENTED_ELSEWHERE}|{WITHOUT_DOCUMENTATION}): .*\.$"
    r"|^Documented on .+\.$"
)


def is_pointer_line(line: str) -> bool:
    """Whether ``line`` (one line, stripped) is a pointer line :func:`pointer_line` or :func:`documented_on`
    writes."""
    return _POINTER.match(line) is not None
