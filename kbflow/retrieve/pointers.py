"""A chunk that only points elsewhere ranks a share below the pages' own text.

In an API reference, kbflow reads each member a generator copied onto another
page as a pointer line naming it ("Members documented on Borrow: borrow.",
"Inherited from Command: name, help.": :mod:`kbflow.text.pointers`). The
member's text is read where it is defined, but the lines stay, so that a
search for a member's name still finds the types that have it. A chunk that
holds nothing else (rustdoc's ``impl<T> Borrow<T> for T``, its blanket and
auto-trait implementations, a long list of names cut across chunks) says only
that a type has a member documented elsewhere. On indexmap's rustdoc, "look
up entries with a borrowed form of the key" had three such chunks at ranks 3
to 5 (``impl<T> Borrow<T> for T``, ``BorrowMut``, ``impl UnwindSafe for
Keys``).

So :func:`demote` takes from each such chunk's score ``weight`` (the role
signal's :attr:`~kbflow.config.RetrievalSettings.role_weight`) times the
span of the first candidates' scores, as the role signal does for the files
around a repository's code (:mod:`kbflow.retrieve.signals`): a pointer still
comes first where nothing else matches nearly as well ("does Keys implement
UnwindSafe?"). Only the candidates the distinct-text step reads first are
judged (:func:`kbflow.retrieve.distinct.distinct` reads the same rows).

A pointer chunk (:func:`pointer_only`) is a web chunk whose lines below its
headings are all pointer lines, continuations of a list of names cut from
one, or a ``where`` clause (rustdoc's bounds of an implementation), and at
least one of them is not a ``where`` clause or is under an implementation's
heading. A member's own entry, even one without documentation (its heading
alone), is never a pointer. A hit so demoted says so: its ``role`` is
``"pointer"``, and the search shows "(a pointer to documentation elsewhere,
ranked below the page's own text)" under it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from kbflow import schema as S
from kbflow.retrieve.distinct import HEADING_LINE, MIN_WINDOW, Reader
from kbflow.text.pointers import is_pointer_line

__all__ = ["POINTER", "demote", "pointer_only"]

#: the role a pointer hit says it has (``Hit.role``)
POINTER = "pointer"

#: a list of names cut from a pointer line: "interleave, interleave_shortest, intersperse," or "sorted, k_smallest."
_NAMES = re.compile(r"^[\w$.:~<>\[\]]+(?:, [\w$.:~<>\[\]]+)+[.,]?$")
#: rustdoc's bounds of an implementation: "where T: ?Sized,"
_WHERE = re.compile(r"^where\s")
#: an implementation's heading: rustdoc's "impl<T> Borrow<T> for T", "impl<I> Iterator for Combinations<I>"
_IMPL = re.compile(r"^(?:unsafe )?impl\b")


def pointer_only(row: dict[str, Any]) -> bool:
    """Whether a search row (its ``text``, kind and locator) is a web chunk that holds only pointer lines (see the
    module's docs)."""
    if row.get(S.CONTENT_KIND) != "web":
        return False
    lines = [line.strip() for line in str(row.get(S.TEXT) or "").splitlines() if line.strip()]
    body = [line for line in lines if not HEADING_LINE.match(line)]
    if not body:
        return False
    kinds = []
    for line in body:
        if is_pointer_line(line) or _NAMES.match(line):
            kinds.append("pointer")
        elif _WHERE.match(line):
            kinds.append("where")
        else:
            return False
    if "pointer" in kinds:
        return True
    heading = str((row.get(S.LOCATOR) or {}).get("heading_path") or "").rpartition(" > ")[2]
    return _IMPL.match(heading) is not None  # an implementation with no member of its own: its bounds alone


def demote(
    fused: Sequence[tuple[str, float]], k: int, read: Reader, weight: float
) -> tuple[list[tuple[str, float]], frozenset[str]]:
    """``(ranking, pointers)``: ``fused`` (``(chunk id, score)``, best first) with each pointer chunk among the
    first ``max(2k, MIN_WINDOW)`` candidates less ``weight`` times the span of their scores (from 0, or the lowest
    where one is negative, to the best), re-sorted (ties in fused order), the rest as it was; and the chunk ids
    so demoted, whose hits say their role. ``read`` gives the candidates' rows."""
    n = min(len(fused), max(2 * k, MIN_WINDOW))
    if not weight or n == 0:
        return list(fused), frozenset()
    head = fused[:n]
    rows = read([cid for cid, _ in head])
    pointers = frozenset(cid for cid, _ in head if pointer_only(rows[cid]))
    if not pointers:
        return list(fused), pointers
    values = [score for _, score in head]
    lo, hi = min(0.0, *values), max(values)
    span = hi - lo if hi > lo else 1.0
    moved = [(i, cid, score - weight * span if cid in pointers else score) for i, (cid, score) in enumerate(head)]
    moved.sort(key=lambda t: (-t[2], t[0]))
    return [(cid, score) for _, cid, score in moved] + list(fused[n:]), pointers
