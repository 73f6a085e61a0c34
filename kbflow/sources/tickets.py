"""Ticket threads: a JSON export of issues with their comments (GitHub's shape first).

A source is one ``.json`` file or a folder of them. A file holds one issue
object or a list of them::

    {"number": 42, "title": "...", "body": "...", "user": {"login": "..."}, "created_at": "...",
     "comments": [{"id": 1001, "body": "...", "user": {"login": "..."}, "created_at": "..."}]}

One raw unit per post: the issue's opening post (comment id ``body``) and each
comment. The locator names the ticket and comment and the char offsets within
that post's body, which is stored exactly as exported.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from kbflow import ids
from kbflow.errors import SourceError
from kbflow.records import Locator, RawUnit, Source
from kbflow.sources.base import FileSetLoader, decode_text, read_bytes, register_loader

__all__ = ["OPENING_POST", "TicketLoader", "iter_posts"]

#: comment id of an issue's opening post
OPENING_POST = "body"


def iter_posts(path: str, data: bytes | None = None) -> Iterator[tuple[dict[str, Any], str, str, str | None]]:
    """Yield ``(issue, comment id, body, author)`` for every post of every issue in ``path``.

    Raises :class:`SourceError` naming the file (and the issue) on a malformed export.
    """
    text = decode_text(read_bytes(path) if data is None else data, path)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno} ({exc.msg})") from None
    issues = doc if isinstance(doc, list) else [doc]
    for i, issue in enumerate(issues):
        where = f"{path}: issue #{i + 1} of the file"
        if not isinstance(issue, dict):
            raise SourceError(f"{where}: expected an object, got {type(issue).__name__}")
        if issue.get("number") in (None, ""):
            raise SourceError(f'{where}: has no "number"; ticket exports need GitHub\'s issue shape')
        comments = issue.get("comments") or []
        if not isinstance(comments, list):
            raise SourceError(f'{path}: issue {issue["number"]}: "comments" must be a list of comment objects')
        if not isinstance(issue.get("body") or "", str):
            raise SourceError(f'{path}: issue {issue["number"]}: "body" must be a string')
        yield issue, OPENING_POST, issue.get("body") or "", (issue.get("user") or {}).get("login")
        for j, comment in enumerate(comments):
            if not isinstance(comment, dict) or comment.get("id") in (None, ""):
                raise SourceError(f'{path}: issue {issue["number"]}: comment {j + 1} has no "id"')
            if not isinstance(comment.get("body") or "", str):
                raise SourceError(f'{path}: issue {issue["number"]}: comment {comment["id"]}: "body" must be a string')
            yield issue, str(comment["id"]), comment.get("body") or "", (comment.get("user") or {}).get("login")


@register_loader
class TicketLoader(FileSetLoader):
    name = "ticket"
    suffixes = (".json",)
    what = "a JSON ticket export"
    plural = "JSON ticket exports"
    description = "issue threads exported as JSON (GitHub shape: number, title, body, comments[].id/body)"

    def load(self, source: Source) -> Iterator[RawUnit]:
        for rel, path in self.files(source.uri):
            data = read_bytes(path)
            file_hash = ids.bytes_hash(data)
            for issue, comment_id, body, author in iter_posts(path, data):
                if not body.strip():
                    continue
                number = str(issue["number"])
                title = f"#{number} {issue.get('title') or ''}".strip()
                if author:
                    title += f" ({author})"
                yield RawUnit(
                    source_id=source.source_id,
                    unit_key=f"{rel}#{number}/{comment_id}",
                    text=body,
                    content_kind="ticket",
                    locator=Locator(
                        kind="ticket",
                        path=rel,
                        ticket_id=number,
                        comment_id=comment_id,
                        char_start=0,
                        char_end=len(body),
                    ),
                    title=title,
                    file_hash=file_hash,
                    language="markdown",
                )
