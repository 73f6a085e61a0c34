"""Ticket threads: a JSON export of issues with their comments (GitHub's shape first).

A source is one ``.json`` file or a folder of them. A file holds one issue
object or a list of them::

    {"number": 42, "title": "...", "body": "...", "user": {"login": "..."}, "created_at": "...",
     "comments": [{"id": 1001, "body": "...", "user": {"login": "..."}, "created_at": "..."}]}

One raw unit per post: the issue's opening post (comment id ``body``: its
title, a blank line and its body) and each comment (its body exactly as
exported). The locator names the ticket and comment and the char offsets
within that post's text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from kbflow.errors import SourceError
from kbflow.records import Locator, RawUnit, Source, ids
from kbflow.sources import jsontext
from kbflow.sources.base import FileIssue, FileSetLoader, listed_with_rest, register_loader
from kbflow.sources.files import decode_text, read_bytes

__all__ = ["OPENING_POST", "TicketLoader", "iter_posts", "opening_text"]

#: comment id of an issue's opening post
OPENING_POST = "body"


def opening_text(issue: dict[str, Any]) -> str:
    """The text of an issue's opening post: its title, a blank line, its body (either may be missing)."""
    title = str(issue.get("title") or "").strip()
    body = issue.get("body") or ""
    return f"{title}\n\n{body}" if title and body else (title or body)


def iter_posts(
    path: str, data: bytes | None = None, on_problem: Callable[[str, str], None] | None = None
) -> Iterator[tuple[dict[str, Any], str, str, str | None]]:
    """Yield ``(issue, comment id, text, author)`` for every post of every issue in ``path``.

    The opening post's text is the issue's title and body (:func:`opening_text`:
    a ticket whose body is null keeps its title); a comment's text is its body
    as exported. A file that is not JSON raises :class:`SourceError`; a
    malformed issue or comment in it is passed to ``on_problem(where, reason)``
    and left out (raised, without ``on_problem``), so one bad entry never loses
    the rest of the file.
    """
    text = decode_text(read_bytes(path) if data is None else data, path)
    try:
        doc = jsontext.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno} ({exc.msg})") from None

    def problem(where: str, reason: str) -> None:
        if on_problem is None:
            raise SourceError(f"{path}: {where}: {reason}")
        on_problem(where, reason)

    issues = doc if isinstance(doc, list) else [doc]
    for i, issue in enumerate(issues):
        where = f"issue #{i + 1} of the file"
        if not isinstance(issue, dict):
            problem(where, f"expected an object, got {type(issue).__name__}")
            continue
        if issue.get("number") in (None, ""):
            problem(where, 'has no "number"; ticket exports need GitHub\'s issue shape')
            continue
        number = issue["number"]
        if isinstance(number, bool) or not isinstance(number, int | str):
            problem(where, f'"number" must be a number or a string, got {type(number).__name__}')
            continue
        comments = issue.get("comments") or []
        if not isinstance(comments, list):
            problem(f"issue {number}", '"comments" must be a list of comment objects')
            comments = []
        if not isinstance(issue.get("body") or "", str) or not isinstance(issue.get("title") or "", str):
            problem(f"issue {number}", '"title" and "body" must be strings')
            continue
        yield issue, OPENING_POST, opening_text(issue), _login(issue)
        for j, comment in enumerate(comments):
            cid = comment.get("id") if isinstance(comment, dict) else None
            if cid in (None, "") or isinstance(cid, bool) or not isinstance(cid, int | str):
                problem(f"issue {number}", f'comment {j + 1} has no "id" (a number or a string)')
                continue
            if not isinstance(comment.get("body") or "", str):
                problem(f"issue {number} comment {cid}", '"body" must be a string')
                continue
            yield issue, str(cid), comment.get("body") or "", _login(comment)


def _login(post: dict[str, Any]) -> str | None:
    """The author's login of an issue or comment, where the export has one as a string."""
    user = post.get("user")
    login = user.get("login") if isinstance(user, dict) else None
    return login if isinstance(login, str) else None


@register_loader
class TicketLoader(FileSetLoader):
    """GitHub-shaped issue exports: one unit per post; a malformed issue is reported and the rest loaded."""

    name = "ticket"
    suffixes = (".json",)
    what = "a JSON ticket export"
    plural = "JSON ticket exports"
    description = "issue threads exported as JSON (GitHub shape: number, title, body, comments[].id/body)"
    max_file_mb = 64.0

    def load_file(self, source: Source, rel: str, path: str) -> Iterable[RawUnit]:
        data = read_bytes(path)
        file_hash = ids.bytes_hash(data)
        units = []

        def problem(where: str, reason: str) -> None:
            self.issues.append(FileIssue(f"{rel} ({where})", reason, failed=True))

        for issue, comment_id, body, author in iter_posts(path, data, on_problem=problem):
            if not body.strip():
                continue
            number = str(issue["number"])
            title = f"#{number} {issue.get('title') or ''}".strip()
            if author:
                title += f" ({author})"
            units.append(
                RawUnit(
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
            )
        return units

    def duplicate_issues(self, source: Source, keys: list[str]) -> list[FileIssue]:
        """A repeated issue number or comment id: the first post is kept, each repeat reported by its place."""
        reasons = []
        for key in keys:
            rel, _, post = key.rpartition("#")
            number, _, comment_id = post.partition("/")
            what = (
                f"issue {number} appears again" if comment_id == OPENING_POST else f"comment {comment_id} appears again"
            )
            reasons.append((f"{rel} (issue {number})", f"{what}; the first is kept"))
        return listed_with_rest(reasons, source.uri, "more repeated posts")
