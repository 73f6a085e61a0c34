"""The web page of ``kbflow serve``: search, citations on their page, sources, versions, insights.

Server-rendered HTML, readable without JavaScript, with no script and no
resource from outside the server (the style sheet is inline). Every page
calls the same :class:`~kbflow.service.core.Service` as the REST API, with
the caller's key: the same query shows the same hits, and a key sees and
edits what it may on the API. With keys, a browser signs in once at
``/login`` (the key is kept in an HTTP-only, same-site cookie).

Every value shown is escaped; unknown chunks and sources get a 404 page.
"""

# no `from __future__ import annotations`: FastAPI reads the route signatures' annotations at run time
import html
import os
import re
import urllib.parse
from collections.abc import Iterable, Sequence
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Form, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from kbflow import render
from kbflow import schema as S
from kbflow.config import MODES
from kbflow.errors import KbflowError, NotFoundError, ResolveError
from kbflow.records import Citation, Hit
from kbflow.service.core import Service
from kbflow.service.http import COOKIE, status_of
from kbflow.service.security import CSRF_FIELD, WRITES, check_csrf, csrf_token

__all__ = ["COOKIE", "mount_web"]

#: page image scale on the citation view (pixels per PDF point)
SCALE = render.DEFAULT_SCALE

_STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#212529;background:#f8f9fa}
header{background:#1c2b39;color:#fff;padding:8px 20px;display:flex;gap:18px;align-items:center}
header a{color:#dee2e6;text-decoration:none}header a.on{color:#fff;font-weight:600}
header b{font-size:17px;margin-right:10px}main{padding:16px 20px;max-width:1200px}
table{border-collapse:collapse;width:100%;background:#fff}td,th{border-bottom:1px solid #e9ecef;padding:6px 8px;
text-align:left;vertical-align:top}th{background:#f1f3f5;font-weight:600}
.pill{display:inline-block;padding:1px 9px;border-radius:10px;font-size:12px;font-weight:600;color:#fff}
.pill.indexed{background:#2b8a3e}.pill.pending{background:#868e96}.pill.stale{background:#e67700}
.pill.failed{background:#c92a2a}.pill.partial{background:#d9480f}
.error{color:#c92a2a;font-weight:600}mark{background:#ffe066}pre{margin:0;white-space:pre-wrap}
form.search input[name=q]{width:480px;font-size:16px;padding:5px}form.inline{display:inline}
.cite{font-family:ui-monospace,monospace;font-size:13px}.muted{color:#868e96}.hit-text{max-width:620px}
table.code td{border:0;padding:0 6px;font:12px ui-monospace,monospace}table.code td.ln{color:#adb5bd;
text-align:right;width:1%}table.code tr.cited{background:#fff3bf}.doc{background:#fff;padding:12px;
border:1px solid #dee2e6;white-space:pre-wrap;font:13px/1.5 ui-monospace,monospace;max-height:70vh;overflow:auto}
.post{background:#fff;border:1px solid #dee2e6;padding:8px;margin:6px 0}.post.cited{border:2px solid #e8590c}
svg{background:#fff;border:1px solid #dee2e6}
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _layout(title: str, body: str, *, active: str = "", status: int = 200) -> HTMLResponse:
    nav = "".join(
        f'<a href="{href}"{" class=on" if name == active else ""}>{name.title()}</a>'
        for name, href in (
            ("search", "/"),
            ("sources", "/sources"),
            ("versions", "/versions"),
            ("insights", "/insights"),
        )
    )
    page = (
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{_e(title)} · kbflow</title>"
        f"<meta name=viewport content='width=device-width'><style>{_STYLE}</style></head>"
        f"<body><header><b>kbflow</b>{nav}</header><main>{body}</main></body></html>"
    )
    return HTMLResponse(page, status_code=status)


def _error_page(exc: Exception) -> HTMLResponse:
    status, code = status_of(exc)
    title = "Not found" if status == 404 else "Error"
    return _layout(title, f"<h1>{title}</h1><p class=error>{_e(exc)}</p><p class=muted>{_e(code)}</p>", status=status)


def _options(values: Iterable[str], chosen: str | None) -> str:
    return "".join(f'<option value="{_e(v)}"{" selected" if v == chosen else ""}>{_e(v)}</option>' for v in values)


def _checks(name: str, values: Iterable[str], chosen: Sequence[str]) -> str:
    return " ".join(
        f'<label><input type=checkbox name={name} value="{_e(v)}"{" checked" if v in chosen else ""}>{_e(v)}</label>'
        for v in values
    )


def _pill(status: str) -> str:
    return f'<span class="pill {_e(status)}">{_e(status)}</span>'


class _FormRefused(Exception):
    """A page form that fails its CSRF check (answered with a 403 page)."""


async def _require_csrf(request: Request) -> None:
    """Every form the page posts carries the CSRF token of :func:`_csrf_input` (checked before its handler)."""
    if request.method not in WRITES:
        return
    form = await request.form()
    token = form.get(CSRF_FIELD)
    why = check_csrf(request.app.state.policy, request.scope, token if isinstance(token, str) else None)
    if why:
        raise _FormRefused(why)


async def _refused_page(_request: Request, exc: Exception) -> HTMLResponse:
    return _layout("Refused", f"<h1>Refused</h1><p class=error id=error>{_e(exc)}</p>", status=403)


def _csrf_input(request: Request) -> str:
    """The hidden field carrying this browser's CSRF token, for every form that posts."""
    token = csrf_token(request.app.state.policy, request.scope)
    return f"<input type=hidden name={CSRF_FIELD} value='{_e(token)}'>"


def _also_in(hit: Hit) -> str:
    """The other places a hit's text appears, as a line under it (empty when there are none)."""
    if not hit.also_in:
        return ""
    return f"<div class='muted also-in'>also in: {_e('; '.join(c.render() for c in hit.also_in))}</div>"


def mount_web(app: FastAPI, service: Service) -> None:
    """Add the web page's routes to ``app`` (the REST app of ``kbflow serve``)."""

    router = APIRouter(include_in_schema=False, dependencies=[Depends(_require_csrf)])
    app.add_exception_handler(_FormRefused, _refused_page)

    def key(request: Request):
        return request.scope.get("state", {}).get("kbflow_key")

    async def call(fn, *args, **kwargs):
        return await run_in_threadpool(fn, *args, **kwargs)

    def can_edit(request: Request) -> bool:
        k = key(request)
        return k is None or k.role == "editor"

    # --- sign in -------------------------------------------------------------------------------
    @router.get("/login", include_in_schema=False)
    async def login_form(request: Request, next: str = "/", error: str | None = None):
        message = f"<p class=error>{_e(error)}</p>" if error else ""
        body = (
            f"<h1>Sign in</h1>{message}<form method=post action=/login>{_csrf_input(request)}"
            f"<input type=hidden name=next value='{_e(next)}'>"
            "<p><label>API key <input name=key type=password size=60 autofocus></label></p>"
            "<p><button>Sign in</button></p></form><p class=muted>Keys come from <code>kbflow keys create</code>.</p>"
        )
        return _layout("Sign in", body)

    @router.post("/login", include_in_schema=False)
    async def login(key_text: Annotated[str, Form(alias="key")], next: Annotated[str, Form()] = "/"):
        try:
            await call(service.principal, key_text.strip())
        except KbflowError as exc:
            return RedirectResponse("/login?" + urllib.parse.urlencode({"error": str(exc), "next": next}), 303)
        target = next if next.startswith("/") and not next.startswith(("//", "/\\")) else "/"  # never off-site
        response = RedirectResponse(target, 303)
        response.set_cookie(COOKIE, key_text.strip(), httponly=True, samesite="strict")
        return response

    # --- search --------------------------------------------------------------------------------
    @router.get("/", include_in_schema=False)
    async def search_page(
        request: Request,
        q: str = "",
        mode: str | None = None,
        scope: str | None = None,
        kind: Annotated[list[str] | None, Query()] = None,
        source_type: Annotated[list[str] | None, Query()] = None,
        k: Annotated[str, Query()] = "10",
        tag: str | None = None,
    ):
        kinds, types = kind or [], source_type or []
        form = (
            "<form class=search method=get action='/'>"
            f"<p><input name=q value='{_e(q)}' placeholder='Ask the corpus…' autofocus> "
            f"<select name=mode>{_options(['', *MODES], mode or '')}</select> "
            f"k <input name=k value='{_e(k)}' size=3> scope <input name=scope value='{_e(scope or '')}' size=16> "
            f"<button>Search</button></p>"
            f"<p class=muted>kinds: {_checks('kind', S.CONTENT_KINDS, kinds)}</p>"
            f"<p class=muted>source types: {_checks('source_type', S.SOURCE_TYPES, types)}</p>"
            + (
                f"<input type=hidden name=tag value='{_e(tag)}'><p>searching the snapshot <b>{_e(tag)}</b></p>"
                if tag
                else ""
            )
            + "</form>"
        )
        if not q.strip():
            return _layout("Search", form, active="search")
        try:
            n = int(k)
        except ValueError:
            error = f"<p class=error id=error>k must be a whole number, got {_e(k)}</p>"
            return _layout("Search", form + error, active="search", status=400)
        try:
            hits, version = await call(
                service.search, key(request), q, n, origin="web", mode=mode or None, scope=scope or None,
                kinds=kinds or None, source_types=types or None, tag=tag or None,
            )  # fmt: skip
        except KbflowError as exc:
            return _layout("Search", form + f"<p class=error id=error>{_e(exc)}</p>", active="search", status=400)
        confidence = "" if hits.confidence is None else f", confidence {hits.confidence:.2f}"
        summary = (
            f"<p id=summary>{len(hits)} hits ({_e(hits.mode)}{confidence}, version {version}, {hits.latency_ms:.0f} ms)"
        )
        if hits.low_confidence:
            summary += " — <b>no good match</b>: the corpus likely holds no answer"
        rows = []
        for h in hits:
            ranks = f"dense {h.dense_rank or '–'} · bm25 {h.bm25_rank or '–'}"
            relevance = "" if h.relevance is None else f"{h.relevance:.2f}"
            link = f"/chunks/{urllib.parse.quote(h.chunk_id)}?" + urllib.parse.urlencode({"q": q})
            rows.append(
                f"<tr class=hit><td>{h.rank}</td><td>{h.score:.4f}<br><span class=muted>{relevance}</span></td>"
                f"<td class=muted>{ranks}</td><td><a class=cite href='{_e(link)}'>{_e(h.citation.render())}</a>"
                f"<div class=hit-text>{render.highlight(h.text[:600], q)}</div>{_also_in(h)}</td></tr>"
            )
        table = (
            "<table id=hits><tr><th>#</th><th>score<br>relevance</th><th>legs</th><th>citation and text</th></tr>"
            + "".join(rows)
            + "</table>"
        )
        return _layout(f"{q} — search", form + summary + "</p>" + table, active="search")

    # --- a chunk on its page --------------------------------------------------------------------
    def chunk_view(k, chunk_id: str) -> dict[str, Any]:
        row = service._chunk_row(k, chunk_id)
        citation = Citation.from_row(row)
        where = f"{S.SOURCE_ID} = {S.sql_str(row[S.SOURCE_ID])} AND {S.UNIT_HASH} = {S.sql_str(row[S.UNIT_HASH])}"
        siblings = service.lake.scan(S.CHUNKS, [S.CHUNK_ID, S.POSITION, S.TEXT], where).to_pylist()
        unit = service.lake.scan(S.DOCUMENTS, [S.TEXT, S.LOCATOR], where).to_pylist()
        thread: list[dict[str, Any]] = []
        loc = citation.locator
        if loc.kind == "ticket" and loc.ticket_id:
            docs = service.lake.scan(S.DOCUMENTS, [S.TEXT, S.LOCATOR], f"{S.SOURCE_ID} = {S.sql_str(row[S.SOURCE_ID])}")
            thread = [d for d in docs.to_pylist() if (d[S.LOCATOR] or {}).get("ticket_id") == loc.ticket_id]
        return {
            "row": row,
            "citation": citation,
            "siblings": sorted(siblings, key=lambda r: r[S.POSITION]),
            "unit": unit[0] if unit else None,
            "thread": thread,
        }

    @router.get("/chunks/{chunk_id}", include_in_schema=False)
    async def chunk_page(request: Request, chunk_id: str, q: str = ""):
        try:
            view = await call(chunk_view, key(request), chunk_id)
        except KbflowError as exc:
            return _error_page(exc)
        row, citation = view["row"], view["citation"]
        loc = citation.locator
        quoted = urllib.parse.quote(chunk_id)
        head = (
            f"<h1 class=cite id=citation>{_e(citation.render())}</h1>"
            f"<p class=muted>source <a href='/sources/{_e(urllib.parse.quote(row[S.SOURCE_ID]))}'>"
            f"{_e(row[S.SOURCE_ID])}</a>"
            f" ({_e(row[S.SOURCE_TYPE])}), kind {_e(row[S.CONTENT_KIND])}, scope {_e(row[S.SCOPE])}, "
            f"chunk <code>{_e(chunk_id)}</code> · <a id=original href='/chunks/{_e(quoted)}/file"
            f"{'#page=' + str(loc.page) if loc.kind == 'pdf' and loc.page else ''}'>open the original</a></p>"
        )
        if loc.kind == "pdf" and loc.page:
            boxes = render.region_boxes(citation, SCALE)
            try:
                _, size = await call(render.page_png, render.pdf_file(citation), loc.page, SCALE)
                figure = render.overlay_html(f"/chunks/{quoted}/page.png", size, boxes)
            except ResolveError as exc:
                figure = f"<p class=error>the page cannot be rendered: {_e(exc)}</p>"
            others = "".join(
                f"<li>{'<b>this chunk</b>' if s[S.CHUNK_ID] == chunk_id else ''} "
                f"<a href='/chunks/{_e(urllib.parse.quote(s[S.CHUNK_ID]))}'>"
                f"{_e(s[S.TEXT][:90])}…</a></li>"
                for s in view["siblings"]
            )
            body = (
                f"{head}<div style='display:flex;gap:20px;align-items:flex-start'><div>{figure}</div>"
                f"<div style='max-width:420px'><h3>The chunk</h3>"
                f"<div class=doc>{render.highlight(row[S.TEXT], q)}</div>"
                f"<h3>Chunks of this page</h3><ol id=siblings>{others}</ol></div></div>"
            )
            return _layout(citation.render(), body)
        unit = view["unit"]
        text = unit[S.TEXT] if unit else row[S.TEXT]
        if loc.kind == "code" and loc.line_start:
            unit_loc = (unit or {}).get(S.LOCATOR) or {}
            offset = (unit_loc.get("line_start") or 1) - 1
            symbol = f"<p>symbol <code>{_e(loc.symbol)}</code></p>" if loc.symbol else ""
            content = symbol + render.mark_lines(text, loc.line_start, loc.line_end, first_line=offset + 1)
        elif loc.kind == "ticket" and view["thread"]:
            posts = []
            for d in view["thread"]:
                mine = (d[S.LOCATOR] or {}).get("comment_id") == loc.comment_id
                posts.append(
                    f"<div class='post{' cited' if mine else ''}'{' id=cited' if mine else ''}>"
                    f"<pre>{_e(d[S.TEXT])}</pre></div>"
                )
            content = f"<p>ticket <b>{_e(loc.ticket_id)}</b>, comment <b>{_e(loc.comment_id)}</b></p>" + "".join(posts)
        elif loc.char_start is not None and loc.char_end is not None and unit is not None:
            where = f"<p>element <code>{_e(loc.css_path)}</code></p>" if loc.kind == "web" and loc.css_path else ""
            content = where + f"<div class=doc>{render.mark_span(text, loc.char_start, loc.char_end)}</div>"
        else:
            content = f"<div class=doc><mark id=cited>{_e(row[S.TEXT])}</mark></div>"
        return _layout(citation.render(), head + content)

    @router.get("/chunks/{chunk_id}/page.png", include_in_schema=False)
    async def chunk_page_image(request: Request, chunk_id: str):
        try:
            row = await call(service._chunk_row, key(request), chunk_id)
            citation = Citation.from_row(row)
            if citation.locator.kind != "pdf" or not citation.locator.page:
                raise NotFoundError(f"chunk {chunk_id!r} is not on a PDF page")
            data, _ = await call(render.page_png, render.pdf_file(citation), citation.locator.page, SCALE)
        except KbflowError as exc:
            return _error_page(exc)
        return Response(data, media_type="image/png", headers={"Cache-Control": "private, max-age=3600"})

    @router.get("/chunks/{chunk_id}/file", include_in_schema=False)
    async def chunk_file(request: Request, chunk_id: str):
        """The original file the chunk came from (PDFs open at the page with ``#page=N``)."""
        from kbflow.retrieve.resolver import _source_file
        from kbflow.sources.web import is_url

        try:
            row = await call(service._chunk_row, key(request), chunk_id)
            citation = Citation.from_row(row)
            if is_url(citation.uri):
                return RedirectResponse(citation.uri, 303)
            path = _source_file(citation)
            if not os.path.isfile(path):
                raise NotFoundError(f"{path}: the source file is gone")
        except KbflowError as exc:
            return _error_page(exc)
        media = {".pdf": "application/pdf", ".html": "text/plain", ".htm": "text/plain"}.get(
            os.path.splitext(path)[1].lower(), "text/plain; charset=utf-8"
        )
        with open(path, "rb") as fh:
            data = fh.read()
        # a sandbox: whatever the file holds runs in no origin of this server's
        headers = {"Content-Disposition": "inline", "Content-Security-Policy": "sandbox; default-src 'none'"}
        return Response(data, media_type=media, headers=headers)

    # --- sources -------------------------------------------------------------------------------
    def sources_view(k) -> list[dict[str, Any]]:
        from kbflow.pipeline import stale_sources

        listed = service.sources(k)
        stale = (
            {s.source_id: s for s in stale_sources(service.lake, [s["source_id"] for s in listed])} if listed else {}
        )
        for s in listed:
            found = stale.get(s["source_id"])
            s["pill"] = s["status"]
            if found is not None and found.reason == "changed" and s["status"] in (S.INDEXED, S.PARTIAL):
                s["pill"] = "stale"
                s["stale_detail"] = found.detail
        return listed

    @router.get("/sources", include_in_schema=False)
    async def sources_page(request: Request, error: str | None = None, done: str | None = None):
        try:
            listed = await call(sources_view, key(request))
        except KbflowError as exc:
            return _error_page(exc)
        editor = can_edit(request)
        token = _csrf_input(request)
        rows = []
        for s in listed:
            sid = urllib.parse.quote(s["source_id"])
            left_out = s["skipped"] + s["failed_files"]
            issues = "".join(f"<li>{_e(i.get('path'))}: {_e(i.get('reason'))}</li>" for i in left_out[:5])
            more = f"<li>… and {len(left_out) - 5} more</li>" if len(left_out) > 5 else ""
            actions = (
                f"<form class=inline method=post action='/sources/{_e(sid)}/refresh'>{token}<button>refresh</button>"
                f"</form> <form class=inline method=post action='/sources/{_e(sid)}/remove'>{token}"
                "<button>remove</button></form>"
                if editor else ""
            )  # fmt: skip
            rows.append(
                f"<tr id='source-{_e(s['source_id'])}'><td><a href='/sources/{_e(sid)}'>{_e(s['source_id'])}</a>"
                f"<br><span class=muted>{_e(s['uri'])}</span></td><td>{_e(s['source_type'])}</td>"
                f"<td>{_e(s['scope'])}</td><td>{_pill(s['pill'])}</td><td>{s['chunk_count'] or 0}</td>"
                f"<td>{_e((s['last_indexed'] or '')[:19])}</td><td class=error>{_e(s['last_error'] or '')}"
                f"<ul class=muted>{issues}{more}</ul></td><td>{actions}</td></tr>"
            )
        message = (
            f"<p class=error id=error>{_e(error)}</p>" if error else (f"<p id=done>{_e(done)}</p>" if done else "")
        )
        add = (
            f"<h3>Add a source</h3><form method=post action='/sources/add'>{token}"
            "<input name=uri placeholder='path or URL' size=40 required> "
            f"<select name=type>{_options(S.SOURCE_TYPES, 'docs')}</select> "
            "<input name=id placeholder='id (optional)' size=14> "
            "<input name=scope placeholder='scope (optional)' size=14> "
            "<button>Add</button></form><p class=muted>Then refresh it to ingest it.</p>"
            if editor else ""
        )  # fmt: skip
        table = (
            "<table id=sources><tr><th>source</th><th>type</th><th>scope</th><th>status</th><th>chunks</th>"
            "<th>last indexed</th><th>last error, files left out</th><th></th></tr>" + "".join(rows) + "</table>"
        )
        return _layout("Sources", f"<h1>Sources</h1>{message}{table}{add}", active="sources")

    def back(error: str | None = None, done: str | None = None) -> RedirectResponse:
        query = {k: v for k, v in (("error", error), ("done", done)) if v}
        return RedirectResponse("/sources" + ("?" + urllib.parse.urlencode(query) if query else ""), 303)

    @router.post("/sources/add", include_in_schema=False)
    async def sources_add(
        request: Request,
        uri: Annotated[str, Form()],
        type: Annotated[str, Form()],
        id: Annotated[str, Form()] = "",
        scope: Annotated[str, Form()] = "",
    ):
        body = {"uri": uri, "type": type, "id": id or None, "scope": scope or None}
        try:
            added = await call(service.add_source, key(request), body)
        except KbflowError as exc:
            return back(error=str(exc))
        return back(done=f"added {added['source_id']}; refresh it to ingest it")

    @router.post("/sources/{source_id}/remove", include_in_schema=False)
    async def sources_remove(request: Request, source_id: str):
        try:
            await call(service.remove_source, key(request), source_id)
        except KbflowError as exc:
            return back(error=str(exc))
        return back(done=f"removed {source_id}")

    @router.post("/sources/{source_id}/refresh", include_in_schema=False)
    async def sources_refresh(request: Request, source_id: str):
        try:
            summary = await call(service.refresh_source, key(request), source_id)
        except KbflowError as exc:
            return back(error=str(exc))
        report = next((s for s in summary["sources"] if s["source_id"] == source_id), None)
        if report and report.get("error"):
            return back(error=f"{source_id}: {report['error']}")
        return back(done=f"refreshed {source_id}: {report['status'] if report else 'done'}")

    def source_view(k, source_id: str) -> dict[str, Any]:
        source = service.source(k, source_id)
        where = f"{S.SOURCE_ID} = {S.sql_str(source_id)}"
        docs = (
            service.lake.scan(S.DOCUMENTS, [S.UNIT_HASH, S.UNIT_KEY, S.TEXT], where).to_pylist()
            if service.lake.has_table(S.DOCUMENTS)
            else []
        )
        chunks = (
            service.lake.scan(S.CHUNKS, [S.CHUNK_ID, S.UNIT_HASH, S.POSITION, S.TEXT], where).to_pylist()
            if service.lake.has_table(S.CHUNKS)
            else []
        )
        return {"source": source, "docs": docs, "chunks": chunks}

    @router.get("/sources/{source_id}", include_in_schema=False)
    async def source_page(request: Request, source_id: str, unit: str | None = None):
        try:
            view = await call(source_view, key(request), source_id)
        except KbflowError as exc:
            return _error_page(exc)
        s = view["source"]
        counts: dict[str, int] = {}
        for c in view["chunks"]:
            counts[c[S.UNIT_HASH]] = counts.get(c[S.UNIT_HASH], 0) + 1
        sid = urllib.parse.quote(source_id)
        docs = "".join(
            f"<tr><td><a href='/sources/{_e(sid)}?unit={_e(d[S.UNIT_HASH])}'>{_e(d[S.UNIT_KEY])}</a></td>"
            f"<td>{len(d[S.TEXT] or ''):,}</td><td>{counts.get(d[S.UNIT_HASH], 0)}</td></tr>"
            for d in sorted(view["docs"], key=lambda d: d[S.UNIT_KEY] or "")[:2000]
        )
        body = (
            f"<h1>{_e(source_id)} {_pill(s['status'])}</h1>"
            f"<p>{_e(s['source_type'])} · {_e(s['uri'])} · scope {_e(s['scope'])}"
            f" · {s['chunk_count'] or 0} chunks · last indexed {_e(s['last_indexed'] or 'never')}</p>"
            + (f"<p class=error>{_e(s['last_error'])}</p>" if s["last_error"] else "")
        )
        if unit:
            chunks = sorted((c for c in view["chunks"] if c[S.UNIT_HASH] == unit), key=lambda c: c[S.POSITION])
            items = "".join(
                f"<li><a href='/chunks/{_e(urllib.parse.quote(c[S.CHUNK_ID]))}'>{_e(c[S.TEXT][:120])}</a></li>"
                for c in chunks
            )
            body += f"<h3>Chunks of this document</h3><ol id=chunks>{items}</ol>"
        body += (
            f"<h3>Documents ({len(view['docs'])})</h3><table id=documents><tr><th>unit</th><th>characters</th>"
            f"<th>chunks</th></tr>{docs}</table>"
        )
        return _layout(source_id, body, active="sources")

    # --- versions ------------------------------------------------------------------------------
    @router.get("/versions", include_in_schema=False)
    async def versions_page(request: Request):
        try:
            snapshots, history = await call(lambda: (service.lake.snapshots(), service.lake.history()))
        except KbflowError as exc:
            return _error_page(exc)
        tags = (
            "".join(
                f"<tr><td><b>{_e(tag)}</b></td><td>{_e(', '.join(f'{t} v{v}' for t, v in tables.items()))}</td>"
                f"<td><a href='/?{_e(urllib.parse.urlencode({'tag': tag}))}'>search this snapshot</a></td></tr>"
                for tag, tables in snapshots.items()
            )
            or "<tr><td colspan=3 class=muted>no tags yet: <code>kbflow tag NAME</code></td></tr>"
        )
        tables = "".join(
            f"<tr><td>{_e(name)}</td><td>{versions[-1]['version'] if versions else ''}</td><td>{len(versions)}</td>"
            f"<td>{_e(str(versions[-1]['timestamp'])[:19] if versions else '')}</td></tr>"
            for name, versions in history.items()
        )
        body = (
            "<h1>Versions and tags</h1><table id=tags><tr><th>tag</th><th>table versions</th><th></th></tr>"
            f"{tags}</table><h3>Tables</h3><table id=tables><tr><th>table</th><th>latest version</th>"
            f"<th>readable versions</th><th>last written</th></tr>{tables}</table>"
        )
        return _layout("Versions", body, active="versions")

    # --- insights ------------------------------------------------------------------------------
    def insights_view(k, since: str | None) -> dict[str, Any]:
        from kbflow import usage

        report = service.insights(k, since)
        log = usage.read_log(service.lake, S.QUERY_LOG)
        points: list[tuple[str, float]] = []
        if log.height:
            import polars as pl

            by_hour = (
                log.with_columns(pl.col(S.LOGGED_AT).dt.truncate("1h").alias("hour"))
                .group_by("hour")
                .agg(pl.col(S.LATENCY_MS).median().alias("p50"))
                .sort("hour")
                .tail(168)
            )
            points = [(str(h)[:16], float(v)) for h, v in by_hour.iter_rows()]
        return {"report": report, "latency": points}

    @router.get("/insights", include_in_schema=False)
    async def insights_page(request: Request, since: str = "7d"):
        try:
            view = await call(insights_view, key(request), since or None)
        except KbflowError as exc:
            return _error_page(exc)
        r = view["report"]

        def table(title: str, rows: list[dict[str, Any]], element: str) -> str:
            if not rows:
                return f"<h3>{_e(title)}</h3><p class=muted id={element}>none</p>"
            cols = list(rows[0])
            head = "".join(f"<th>{_e(c)}</th>" for c in cols)
            body = "".join("<tr>" + "".join(f"<td>{_cell(row[c])}</td>" for c in cols) + "</tr>" for row in rows[:20])
            return f"<h3>{_e(title)}</h3><table id={element}><tr>{head}</tr>{body}</table>"

        zero = [g for g in r["content_gaps"] if g.get("reason") == "no hits"]
        body = (
            f"<h1>Insights</h1><p>{r['queries']} searches, {r['citations']} citations "
            f"since {_cell(r['since'] or 'the start')}"
            f" · <a href='/insights?since=1d'>1 day</a> · <a href='/insights?since=7d'>7 days</a> · "
            f"<a href='/insights?since=30d'>30 days</a></p>"
            + _latency_chart(view["latency"])
            + table("Top queries", r["top_queries"], "top-queries")
            + table("Zero-result queries", zero, "zero-results")
            + table("Content gaps (no hit or no good match)", r["content_gaps"], "content-gaps")
            + table("Most cited sources", r["cited_sources"], "cited-sources")
            + table("Sources never cited", r["never_cited"], "never-cited")
            + table("Searches by origin", r["by_origin"], "by-origin")
        )
        return _layout("Insights", body, active="insights")

    app.include_router(router)


def _cell(value: Any) -> str:
    """A report value as a table cell: numbers rounded, times to the second."""
    if isinstance(value, float):
        return f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"
    text = str(value) if value is not None else ""
    if re.match(r"\d{4}-\d\d-\d\dT?\s?\d\d:\d\d:\d\d", text):
        text = text[:19].replace("T", " ")
    return _e(text)


def _latency_chart(points: list[tuple[str, float]], width: int = 640, height: int = 160) -> str:
    """Median search latency per hour as an inline SVG line (no script)."""
    if not points:
        return "<h3>Latency</h3><p class=muted>no searches logged yet</p>"
    top = max(v for _, v in points) or 1.0
    step = (width - 40) / max(1, len(points) - 1)
    xy = [(30 + i * step, height - 20 - (v / top) * (height - 40)) for i, (_, v) in enumerate(points)]
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
    dots = "".join(
        f"<circle cx='{x:.1f}' cy='{y:.1f}' r='2.5' fill='#1c7ed6'><title>{_e(t)}: {v:.1f} ms</title></circle>"
        for (x, y), (t, v) in zip(xy, points, strict=True)
    )
    return (
        f"<h3>Latency (median per hour, ms)</h3><svg id=latency width={width} height={height} role=img>"
        f"<text x=2 y=14 font-size=11>{top:.0f} ms</text><text x=2 y={height - 6} font-size=11>0</text>"
        f"<polyline fill=none stroke='#1c7ed6' stroke-width=2 points='{line}'/>{dots}"
        f"<text x={width - 150} y={height - 4} font-size=11>{_e(points[-1][0])}</text></svg>"
    )
