"""Each text once in a result list: hits whose texts match after whitespace is normalized are one hit, and so
are a web page's copies that differ in their headings only.

The same PDF in two folders, vendored code, a page saved twice: each copy is
a chunk of its own, and without this step a result would show the same text
two or three times in its top five. :func:`distinct` walks the fused ranking
in windows, reading the candidates' texts, and groups equal texts. Each group
takes the position of its best-ranked member and is shown by the member
nearest the start of its own document (a chapter rather than the print page
that repeats every chapter), then with the shortest place (path or URL, then
source URI: the canonical copy is usually the shorter one), and the other
members are listed on the hit (``Hit.also_in``), so no provenance is lost and
the top ``k`` are ``k`` distinct texts.

A web page's chunk is grouped by its text below its headings where that
holds at least :data:`MIN_COPY_BODY` characters: an API reference documents
a member again on every type that has it (Sphinx's inherited members, a
trait's method on each implementor), and the copies differ in their
headings only (the owning type's name), so they are one hit, the others in
``also_in`` (:func:`copy_key`).

An API reference also documents one member several times on its page: each
overload of ``abbreviate`` is a section headed ``abbreviate`` (Javadoc,
Doxygen, Sphinx), and a long entry is cut into several chunks under one
heading. A web page's chunks under one heading path (the whole path) whose
last heading names a member (one identifier, below the page's title) are one
entry: one hit, the other overloads and parts in ``also_in``
(:func:`entry_key`). Such a group is shown by a chunk that starts a section
(an overload's signature), never by one that continues an entry cut into
chunks (the exceptions closing the overload above it), where it has one
(:func:`continues_entry`). A generator may head the parts of an entry too
(TypeDoc's "Parameters", "Returns this", "Example"; rustdoc's "Panics"):
a chunk under such a part is the entry of the member above it. A page that
documents one member is titled by it (TypeDoc's ``Function
combineReducers``, rustdoc's ``Struct Keys``): the parts below its title
are that member's entry, one hit with the title's chunk. A chunk under
a part is grouped by its entry alone, not by its short text: two members'
"Returns this" parts read the same, and would make their two entries one. A
chunk of the member's own text is grouped by its text too, and so is a part
whose text is at least :data:`MIN_COPY_BODY` characters: pdoc and Sphinx
copy a method's docstring, its "Parameters" included, onto an override that
has none, and the copies are one hit (:func:`group_keys`). A chunk whose keys
are in two groups joins them (an override's copy of the docstring, whose
own entry's "Parameters" ranked first, and the definition's hit). A heading names a member when it is one
identifier, a signature (``requests.request(method, url)``) or a
declaration (``def add_command(self, cmd) -> None:``, ``class Group
(name=None)``, ``new Argument(name)``).

Only the windows read are grouped: a copy ranked far below the ``k``-th
distinct text is not looked for (the first window is ``max(2k, 20)``
candidates and each next one doubles).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kbflow import schema as S
from kbflow.records import ids

__all__ = [
    "HEADING_LINE",
    "MIN_COPY_BODY",
    "Distinct",
    "cached",
    "continues_entry",
    "copy_key",
    "distinct",
    "entry_key",
    "group_keys",
    "member_path",
    "place_key",
    "text_key",
]

#: the least number of candidates read in the first window
MIN_WINDOW = 20

# reads ``{chunk id: row}`` (``text`` and the decoded ``hit`` payload) of the chunk ids it is given
Reader = Callable[[Sequence[str]], dict[str, dict[str, Any]]]


def cached(read: Reader, rows: dict[str, dict[str, Any]]) -> Reader:
    """``read`` that reads each chunk id once, keeping what it read in ``rows``: the steps that judge the first
    candidates by their rows (pointer chunks, :mod:`kbflow.retrieve.pointers`; each text once) share one take,
    and the hits are built from the same rows."""

    def reader(chunk_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        missing = [cid for cid in chunk_ids if cid not in rows]
        if missing:
            rows.update(read(missing))
        return {cid: rows[cid] for cid in chunk_ids}

    return reader


def text_key(text: str) -> str:
    """The key equal texts share: the hash of the text with its whitespace runs made one space."""
    return ids.text_hash(" ".join(text.split()))


#: the least text below a web chunk's headings that makes chunks differing in their headings only copies
MIN_COPY_BODY = 80
#: a Markdown heading line of a chunk's text (its page's headings, as web chunks carry them)
HEADING_LINE = re.compile(r"^#{1,6} .*$", re.MULTILINE)


def _body(text: str) -> str:
    """A chunk's text below its headings: its Markdown heading lines taken out, whitespace runs made one space."""
    return " ".join(HEADING_LINE.sub("", text).split())


def copy_key(row: dict[str, Any]) -> str:
    """The key copies share: :func:`text_key`, or, for a web page's chunk, the hash of its source and its text
    below its headings where that text is at least :data:`MIN_COPY_BODY` characters (a member documented again
    under each owning type's heading)."""
    text = row[S.TEXT]
    if row.get(S.CONTENT_KIND) == "web":
        body = _body(text)
        if len(body) >= MIN_COPY_BODY:
            return ids.text_hash(f"web body\x00{row.get(S.SOURCE_ID)}\x00{body}")
    return text_key(text)


#: a heading that names a member: one identifier (``abbreviate``, ``is_sorted``, ``std::vector::push_back``), or
#: a signature: an identifier and its parameters (Sphinx's ``requests.request(method, url, **kwargs)``), or a
#: declaration: keywords, an identifier and what follows it (pdoc's ``def add_command(self, cmd) -> None:``,
#: ``class Group(Command):``; pdoc3's ``class Group (name=None)``, ``var chain : bool``, its arrow ``‑>`` written
#: with a non-breaking hyphen; JSDoc's ``argOptional() → {Argument}``, ``new Argument(name)``; rustdoc's
#: ``pub fn retain<F>(&mut self, keep: F)`` and ``pub const fn new() -> Self``, generic parameters and all;
#: TypeDoc's ``map<U>(fn: (value: T) => U): U[]``); a declaration
#: needs its parameters, type or value, so that a heading such as "final thoughts" or "new features" names none
_MEMBER_HEADING = re.compile(
    r"^(?:[A-Za-z_$~][\w$:.~]*(?:\(\))?"  # one identifier
    r"|[A-Za-z_$][\w$.:]*(?:<.*?>)?\(.*\)\s*(?:(?:[-\u2011]>|\u2192|:).*)?"  # a signature
    r"|(?:(?:async|def|class|fn|pub|static|final|abstract|var|prop|new|const|unsafe)\s+)+"  # a declaration
    r"[A-Za-z_$][\w$.:]*(?:<.*?>)?\s?(?:\(.*\)\s*(?:(?:[-\u2011]>|\u2192|:).*)?|\s*(?:[-\u2011]>|\u2192|:|=).*))$"
)


#: the headings API generators give the parts of one member's entry (TypeDoc's "Parameters", "Returns this",
#: "Remarks"; rustdoc's "Examples", "Panics"; Sphinx's "Raises"): a chunk under one is part of that member's entry
_ENTRY_PART = re.compile(
    r"^(?:parameters|params?|arguments|returns?|return (?:type|value)|type parameters|remarks|examples?|throws|"
    r"raises|exceptions|panics|errors|safety|see(?: also)?|deprecated|overrides|inherited from|"
    r"implementation of|defined in|since|notes?)\b.*$",
    re.IGNORECASE,
)


#: a page's title that names the one member the page documents, as TypeDoc and rustdoc title a page of its own
#: (``Function combineReducers``, ``Interface Store<S, A>``, ``Struct Keys``, ``Trait Itertools``)
_TITLED_MEMBER = re.compile(
    r"^(?:Function|Class|Interface|Variable|Type Alias|Enumeration|Enum|Struct|Trait|Union|Macro|Constant|Static"
    r"|Namespace)\s+[A-Za-z_$][\w$.:]*(?:<.*>)?$"
)


def _names_member(heading: str, title: bool) -> bool:
    """Whether ``heading`` names a member: as a heading below the page's title (:data:`_MEMBER_HEADING`), or as a
    page's ``title`` that names the page's one member (:data:`_TITLED_MEMBER`)."""
    return bool(_TITLED_MEMBER.match(heading)) if title else bool(_MEMBER_HEADING.match(heading))


def member_path(heading_path: str) -> list[str] | None:
    """The headings (from the page's title down) of the member entry a chunk under ``heading_path`` belongs to:
    its path where its last heading names a member, less the parts of the entry below it (``... > parse >
    Returns this`` is the entry of ``parse``; TypeDoc's ``Function combineReducers > Parameters`` is the entry
    the page's title names); ``None`` where the chunk is in no member's entry."""
    path = [part.strip() for part in heading_path.split(" > ")]
    while len(path) > 1 and _ENTRY_PART.match(path[-1]) and _names_member(path[-2], title=len(path) == 2):
        path.pop()
    if len(path) == 1 and _TITLED_MEMBER.match(path[0]):
        return path
    if len(path) < 2 or not _MEMBER_HEADING.match(path[-1]):
        return None
    return path


def entry_key(row: dict[str, Any]) -> str | None:
    """The key a web page's chunks share when they stand under one heading path (the whole path, below the
    page's title) whose last heading names a member: a member's overloads, the parts of one long entry. Its
    source, page and heading path; ``None`` for any other chunk (``... > action > Example`` is not
    ``... > parseAsync > Example``: their paths differ)."""
    if row.get(S.CONTENT_KIND) != "web":
        return None
    locator = row.get(S.LOCATOR) or {}
    path = member_path(str(locator.get("heading_path") or ""))
    if path is None:
        return None
    page = locator.get("url") or locator.get("path") or row.get(S.URI) or ""
    return ids.text_hash("web entry\x00" + "\x00".join([str(row.get(S.SOURCE_ID)), page, *path]))


def group_keys(row: dict[str, Any]) -> list[str]:
    """The keys that make a chunk one hit with others: its member entry's (:func:`entry_key`) and, for a chunk
    of the member's own text, its copy key (:func:`copy_key`: a docstring a generator copied onto an override
    is a copy); a chunk under a part of an entry ("Returns this") by its entry alone, since by its short text it
    would join another member's part that reads the same, and the two entries would be one, but by its copy key
    too where its text below its headings is at least :data:`MIN_COPY_BODY` characters (an override's copy of
    the "Parameters" its base documents); any other chunk by its copy key."""
    entry = entry_key(row)
    if entry is None:
        return [copy_key(row)]
    locator = row.get(S.LOCATOR) or {}
    heading_path = str(locator.get("heading_path") or "")
    own = len(member_path(heading_path) or ()) == len(heading_path.split(" > "))
    return [entry, copy_key(row)] if own or len(_body(row[S.TEXT])) >= MIN_COPY_BODY else [entry]


def continues_entry(row: dict[str, Any]) -> bool:
    """Whether a web chunk continues a member's entry without its heading: the exceptions or "See Also" of a
    long entry cut into chunks (Javadoc's ``copyFile`` overloads, each a section headed ``copyFile``). Such a
    chunk is under the entry's heading path but does not start with a heading line, so it shows its group
    only where no chunk of the group starts a section."""
    return entry_key(row) is not None and HEADING_LINE.match(row[S.TEXT].lstrip()) is None


def place_key(row: dict[str, Any]) -> tuple[bool, int, int, int]:
    """What decides which copy shows a group (smallest first): a chunk that starts its section before one that
    continues a member's entry (:func:`continues_entry`), then the chunk's position in its document, the
    length of its path or URL, the length of its source URI."""
    locator = row.get(S.LOCATOR) or {}
    place = locator.get("path") or locator.get("url") or ""
    return continues_entry(row), int(row.get(S.POSITION) or 0), len(place), len(row.get(S.URI) or "")


def decode(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Search-table rows of ``text`` and ``hit`` as flat hit rows (the ``hit`` JSON payload merged in)."""
    out = []
    for row in rows:
        row = dict(row)
        row.update(json.loads(row.pop(S.HIT)))
        out.append(row)
    return out


@dataclass
class Distinct:
    """What :func:`distinct` returns: the kept ranking, each kept id's copies, and every row it read."""

    fused: list[tuple[str, float]]
    #: kept chunk id -> the chunk ids of its copies, best-ranked first
    also_in: dict[str, list[str]] = field(default_factory=dict)
    #: chunk id -> its decoded row (``text`` plus the hit payload), for every candidate read
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)


def distinct(fused: Sequence[tuple[str, float]], k: int, read: Reader) -> Distinct:
    """The first ``k`` distinct texts of ``fused`` (``(chunk id, score)`` best first), copies grouped."""
    groups: dict[int, list[int]] = {}  # group (its first position) -> positions in fused
    group_of: dict[str, int] = {}  # a copy or entry key -> its group, or a group since merged into another
    merged: dict[int, int] = {}  # a group merged into another -> that group

    def found(group: int) -> int:
        while group in merged:
            group = merged[group]
        return group

    rows: dict[str, dict[str, Any]] = {}
    window, pos = max(2 * k, MIN_WINDOW), 0
    while pos < len(fused) and (pos == 0 or len(groups) < k):
        chunk_ids = [cid for cid, _ in fused[pos : pos + window]]
        rows.update(read(chunk_ids))
        for n, cid in enumerate(chunk_ids, start=pos):
            keys = group_keys(rows[cid])
            # a chunk whose keys are in two groups joins them (an override's copy of a docstring whose own
            # entry's "Parameters" part ranked first): the earlier group takes the later one's members
            joined = sorted({found(group_of[key]) for key in keys if key in group_of})
            group = joined[0] if joined else n
            for other in joined[1:]:
                merged[other] = group
                groups[group].extend(groups.pop(other))
            groups.setdefault(group, []).append(n)
            group_of.update((key, group) for key in keys)
        pos, window = pos + len(chunk_ids), window * 2
    out = Distinct([], rows=rows)
    for members in sorted((sorted(m) for m in groups.values()), key=lambda m: m[0])[:k]:
        keep = min(members, key=lambda n: (place_key(rows[fused[n][0]]), n))
        cid = fused[keep][0]
        out.fused.append((cid, fused[members[0]][1]))
        copies = [fused[n][0] for n in members if n != keep]
        if copies:
            out.also_in[cid] = copies
    return out
