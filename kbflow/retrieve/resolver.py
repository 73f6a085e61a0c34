"""Re-read a source at a citation's locator and return the text there.

The invariant the chunkers keep and the tests hold them to: for every chunk,
``resolve(hit.citation) == hit.text``.
"""

from __future__ import annotations

import os

from kbflow.chunk.base import line_span
from kbflow.errors import ResolveError, SourceError
from kbflow.records import Citation
from kbflow.sources.base import read_text
from kbflow.sources.jsonl import iter_records, record_text

__all__ = ["resolve"]


def _file(citation: Citation) -> str:
    uri, path = citation.uri, citation.locator.path
    if os.path.isfile(uri):
        return uri
    if not path:
        raise ResolveError(f"citation of source {citation.source_id!r} has no path")
    return os.path.join(uri, path)


def _slice(text: str, citation: Citation, where: str) -> str:
    loc = citation.locator
    if loc.char_start is None or loc.char_end is None or not 0 <= loc.char_start <= loc.char_end <= len(text):
        raise ResolveError(
            f"{where}: chars {loc.char_start}-{loc.char_end} are outside the text (0-{len(text)}); "
            "the source changed since it was indexed"
        )
    return text[loc.char_start : loc.char_end]


def resolve(citation: Citation) -> str:
    """The text at ``citation``'s locator, read afresh from the source.

    Raises
    ------
    ResolveError
        The source is gone, unreadable, or no longer has that region.
    """
    loc = citation.locator
    try:
        if loc.kind in ("doc", "code"):
            path = _file(citation)
            text = read_text(path)
            if loc.kind == "doc":
                return _slice(text, citation, path)
            try:
                return line_span(text, loc.line_start, loc.line_end)
            except (TypeError, ValueError):
                raise ResolveError(
                    f"{path}: lines {loc.line_start}-{loc.line_end} are not in the file; "
                    "it changed since it was indexed"
                ) from None
        if loc.kind == "pdf":
            from kbflow.sources.pdf import resolve_page

            path = _file(citation)
            return _slice(resolve_page(path, loc.page), citation, f"{path} p.{loc.page}")
        if loc.kind == "web":
            from kbflow.sources.web import read_page

            path = _file(citation)
            return _slice(read_page(path).text, citation, path)
        if loc.kind == "ticket":
            from kbflow.sources.tickets import iter_posts

            path = _file(citation)
            for issue, comment_id, body, _author in iter_posts(path, on_problem=lambda where, reason: None):
                if str(issue["number"]) == loc.ticket_id and comment_id == loc.comment_id:
                    return _slice(body, citation, f"{path} ticket {loc.ticket_id} comment {loc.comment_id}")
            raise ResolveError(f"{path}: no comment {loc.comment_id!r} in ticket {loc.ticket_id!r}")
        if loc.kind == "record":
            for _, obj in iter_records(citation.uri, on_problem=lambda lineno, reason: None):
                if str(obj["_id"]) == loc.record_id:
                    text, _field = record_text(obj)
                    return _slice(text, citation, f"{citation.uri} record {loc.record_id}")
            raise ResolveError(f"{citation.uri}: no record with _id {loc.record_id!r}")
    except SourceError as exc:
        raise ResolveError(f"cannot resolve citation of source {citation.source_id!r}: {exc}") from None
    raise ResolveError(f"resolving {loc.kind!r} locators is not supported yet")
