"""The web page's pages as pure functions: records in, HTML out, testable without a server.

Every value shown is escaped (:func:`_e`); the style sheet is inline and no
page loads a script or anything from outside the server. The routes
(:mod:`kbflow.service.web.routes`) fetch with one public
:class:`~kbflow.service.core.Service` call and hand the records here.
"""

from __future__ import annotations

import html
import re
import urllib.parse
from collections.abc import Iterable, Sequence
from typing import Any

from kbflow import schema as S
from kbflow.config import MODES
from kbflow.records import Hit, Hits, render
from kbflow.retrieve.roles import describe
from kbflow.service.http import status_of
from kbflow.sources.base import loader_names

__all__ = [
    "chunk_page",
    "error_page",
    "insights_page",
    "layout",
    "login_page",
    "refused_page",
    "search_page",
    "source_page",
    "sources_page",
    "versions_page",
]

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


def layout(title: str, body: str, *, active: str = "") -> str:
    """A whole page: the title, the navigation (``active`` marked) and ``body``."""
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
    return page


def error_page(exc: Exception) -> tuple[str, int]:
    """The page of an error, and its HTTP status (:func:`kbflow.service.http.status_of`)."""
    status, code = status_of(exc)
    title = "Not found" if status == 404 else "Error"
    return layout(title, f"<h1>{title}</h1><p class=error>{_e(exc)}</p><p class=muted>{_e(code)}</p>"), status


def refused_page(exc: Exception) -> str:
    """A form that failed its CSRF check (answered 403)."""
    return layout("Refused", f"<h1>Refused</h1><p class=error id=error>{_e(exc)}</p>")


def _options(values: Iterable[str], chosen: str | None) -> str:
    return "".join(f'<option value="{_e(v)}"{" selected" if v == chosen else ""}>{_e(v)}</option>' for v in values)


def _checks(name: str, values: Iterable[str], chosen: Sequence[str]) -> str:
    return " ".join(
        f'<label><input type=checkbox name={name} value="{_e(v)}"{" checked" if v in chosen else ""}>{_e(v)}</label>'
        for v in values
    )


def _pill(status: str) -> str:
    return f'<span class="pill {_e(status)}">{_e(status)}</span>'


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


def _role(hit: Hit) -> str:
    """Where a hit's file stands around code (a test, a build beside its sources), which ranks it lower."""
    return f"<div class='muted role'>{_e(describe(hit.role))}</div>" if hit.role else ""


def _also_in(hit: Hit) -> str:
    """The other places a hit's text appears, as a line under it (empty when there are none)."""
    if not hit.also_in:
        return ""
    return f"<div class='muted also-in'>also in: {_e('; '.join(c.render() for c in hit.also_in))}</div>"


# --- sign in --------------------------------------------------------------------------------------
def login_page(next_page: str, error: str | None, csrf: str) -> str:
    """The sign-in form (``csrf``: the hidden CSRF field every posted form carries)."""
    message = f"<p class=error>{_e(error)}</p>" if error else ""
    body = (
        f"<h1>Sign in</h1>{message}<form method=post action=/login>{csrf}"
        f"<input type=hidden name=next value='{_e(next_page)}'>"
        "<p><label>API key <input name=key type=password size=60 autofocus></label></p>"
        "<p><button>Sign in</button></p></form><p class=muted>Keys come from <code>kbflow keys create</code>.</p>"
    )
    return layout("Sign in", body)


# --- search ---------------------------------------------------------------------------------------
def search_form(
    q: str, mode: str | None, scope: str | None, kinds: Sequence[str], types: Sequence[str], k: str, tag: str | None
) -> str:
    """The search form, filled with the request's values."""
    snapshot = f"<input type=hidden name=tag value='{_e(tag)}'><p>searching the snapshot <b>{_e(tag)}</b></p>"
    return (
        "<form class=search method=get action='/'>"
        f"<p><input name=q value='{_e(q)}' placeholder='Ask the corpus…' autofocus> "
        f"<select name=mode>{_options(['', *MODES], mode or '')}</select> "
        f"k <input name=k value='{_e(k)}' size=3> scope <input name=scope value='{_e(scope or '')}' size=16> "
        f"<button>Search</button></p>"
        f"<p class=muted>kinds: {_checks('kind', S.CONTENT_KINDS, kinds)}</p>"
        f"<p class=muted>source types: {_checks('source_type', loader_names(), types)}</p>"
        + (snapshot if tag else "")
        + "</form>"
    )


def search_page(form: str, q: str, hits: Hits | None = None, version: int | None = None, error: str = "") -> str:
    """The search page: the form, then an error, or the hits with their citations, or nothing yet."""
    if error:
        return layout("Search", form + f"<p class=error id=error>{_e(error)}</p>", active="search")
    if hits is None:
        return layout("Search", form, active="search")
    confidence = "" if hits.confidence is None else f", confidence {hits.confidence:.2f}"
    took = f"version {version}, {hits.latency_ms:.0f} ms"
    summary = f"<p id=summary>{len(hits)} hits ({_e(hits.mode)}{confidence}, {took})"
    if hits.low_confidence:
        summary += " — <b>no good match</b>: the corpus likely holds no answer"
    if hits.flag is not None:
        summary += f"<br><span class=muted id=flag>{_e(hits.flag.sentence())}</span>"
    if hits.expansion:
        summary += f"<br><span class=muted id=expansion>searched with the glossary's words: {_e(hits.expansion)}</span>"
    rows = []
    for h in hits:
        ranks = f"dense {h.dense_rank or '–'} · bm25 {h.bm25_rank or '–'}"
        relevance = "" if h.relevance is None else f"{h.relevance:.2f}"
        link = f"/chunks/{urllib.parse.quote(h.chunk_id)}?" + urllib.parse.urlencode({"q": q})
        rows.append(
            f"<tr class=hit><td>{h.rank}</td><td>{h.score:.4f}<br><span class=muted>{relevance}</span></td>"
            f"<td class=muted>{ranks}</td><td><a class=cite href='{_e(link)}'>{_e(h.citation.render())}</a>"
            f"<div class=hit-text>{render.highlight(h.text[:600], q)}</div>{_role(h)}{_also_in(h)}</td></tr>"
        )
    table = (
        "<table id=hits><tr><th>#</th><th>score<br>relevance</th><th>legs</th><th>citation and text</th></tr>"
        + "".join(rows)
        + "</table>"
    )
    return layout(f"{q} — search", form + summary + "</p>" + table, active="search")


# --- a chunk on its page --------------------------------------------------------------------------
def chunk_page(view: dict[str, Any], chunk_id: str, q: str, figure: str = "") -> str:
    """A chunk where it stands (``view``: :meth:`kbflow.service.reads.PageReads.chunk_view`): a PDF page with the
    chunk's regions drawn (``figure``), code with its lines marked, a ticket's thread, or the text around it."""
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
        return layout(citation.render(), body)
    return layout(citation.render(), head + _chunk_in_unit(view))


def _chunk_in_unit(view: dict[str, Any]) -> str:
    """A chunk that is not on a PDF page, in its unit: lines of code, a ticket's posts, or a span of text."""
    row, loc, unit = view["row"], view["citation"].locator, view["unit"]
    text = unit[S.TEXT] if unit else row[S.TEXT]
    if loc.kind == "code" and loc.line_start:
        unit_loc = (unit or {}).get(S.LOCATOR) or {}
        offset = (unit_loc.get("line_start") or 1) - 1
        symbol = f"<p>symbol <code>{_e(loc.symbol)}</code></p>" if loc.symbol else ""
        return symbol + render.mark_lines(text, loc.line_start, loc.line_end, first_line=offset + 1)
    if loc.kind == "ticket" and view["thread"]:
        posts = []
        for d in view["thread"]:
            mine = (d[S.LOCATOR] or {}).get("comment_id") == loc.comment_id
            posts.append(
                f"<div class='post{' cited' if mine else ''}'{' id=cited' if mine else ''}>"
                f"<pre>{_e(d[S.TEXT])}</pre></div>"
            )
        return f"<p>ticket <b>{_e(loc.ticket_id)}</b>, comment <b>{_e(loc.comment_id)}</b></p>" + "".join(posts)
    if loc.char_start is not None and loc.char_end is not None and unit is not None:
        where = f"<p>element <code>{_e(loc.css_path)}</code></p>" if loc.kind == "web" and loc.css_path else ""
        return where + f"<div class=doc>{render.mark_span(text, loc.char_start, loc.char_end)}</div>"
    return f"<div class=doc><mark id=cited>{_e(row[S.TEXT])}</mark></div>"


# --- sources --------------------------------------------------------------------------------------
def sources_page(listed: list[dict[str, Any]], editor: bool, csrf: str, error: str | None, done: str | None) -> str:
    """Every source the caller sees (``listed``: :meth:`kbflow.service.reads.PageReads.sources_overview`), with
    refresh, remove and add forms for an editor."""
    rows = []
    for s in listed:
        sid = urllib.parse.quote(s["source_id"])
        left_out = s["skipped"] + s["failed_files"]
        issues = "".join(f"<li>{_e(i.get('path'))}: {_e(i.get('reason'))}</li>" for i in left_out[:5])
        more = f"<li>… and {len(left_out) - 5} more</li>" if len(left_out) > 5 else ""
        actions = (
            f"<form class=inline method=post action='/sources/{_e(sid)}/refresh'>{csrf}<button>refresh</button>"
            f"</form> <form class=inline method=post action='/sources/{_e(sid)}/remove'>{csrf}"
            "<button>remove</button></form>"
            if editor
            else ""
        )
        rows.append(
            f"<tr id='source-{_e(s['source_id'])}'><td><a href='/sources/{_e(sid)}'>{_e(s['source_id'])}</a>"
            f"<br><span class=muted>{_e(s['uri'])}</span></td><td>{_e(s['source_type'])}</td>"
            f"<td>{_e(s['scope'])}</td><td>{_pill(s['pill'])}</td><td>{s['chunk_count'] or 0}</td>"
            f"<td>{_e((s['last_indexed'] or '')[:19])}</td><td class=error>{_e(s['last_error'] or '')}"
            f"<ul class=muted>{issues}{more}</ul></td><td>{actions}</td></tr>"
        )
    message = f"<p class=error id=error>{_e(error)}</p>" if error else (f"<p id=done>{_e(done)}</p>" if done else "")
    add = (
        f"<h3>Add a source</h3><form method=post action='/sources/add'>{csrf}"
        "<input name=uri placeholder='path or URL' size=40 required> "
        f"<select name=type>{_options(loader_names(), 'docs')}</select> "
        "<input name=id placeholder='id (optional)' size=14> "
        "<input name=scope placeholder='scope (optional)' size=14> "
        "<button>Add</button></form><p class=muted>Then refresh it to ingest it.</p>"
        if editor
        else ""
    )
    table = (
        "<table id=sources><tr><th>source</th><th>type</th><th>scope</th><th>status</th><th>chunks</th>"
        "<th>last indexed</th><th>last error, files left out</th><th></th></tr>" + "".join(rows) + "</table>"
    )
    return layout("Sources", f"<h1>Sources</h1>{message}{table}{add}", active="sources")


def source_page(view: dict[str, Any], source_id: str, unit: str | None) -> str:
    """One source (``view``: :meth:`kbflow.service.reads.PageReads.source_view`): its documents, and the chunks
    of the ``unit`` asked for."""
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
    return layout(source_id, body, active="sources")


# --- versions and insights ------------------------------------------------------------------------
def versions_page(snapshots: dict[str, dict[str, int]], history: dict[str, list[dict[str, Any]]]) -> str:
    """The lake's tags (each searchable) and every table's versions."""
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
    return layout("Versions", body, active="versions")


def _report_table(title: str, rows: list[dict[str, Any]], element: str) -> str:
    if not rows:
        return f"<h3>{_e(title)}</h3><p class=muted id={element}>none</p>"
    cols = list(rows[0])
    head = "".join(f"<th>{_e(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{_cell(row[c])}</td>" for c in cols) + "</tr>" for row in rows[:20])
    return f"<h3>{_e(title)}</h3><table id={element}><tr>{head}</tr>{body}</table>"


def _retention(report: dict[str, Any]) -> str:
    """What the logs still hold, in words: how long they keep a row and the oldest one."""
    kept = f"The logs keep {report['log_days']} days" if report.get("log_days") else "The logs keep every row"
    oldest = report.get("oldest")
    return f"{kept}; the oldest row is from {str(oldest)[:16]} UTC." if oldest else f"{kept}; none logged yet."


def insights_page(view: dict[str, Any]) -> str:
    """What the lake's users asked and cited (``view``: :meth:`kbflow.service.reads.PageReads.insights_view`)."""
    r = view["report"]
    zero = [g for g in r["content_gaps"] if g.get("reason") == "no hits"]
    body = (
        f"<h1>Insights</h1><p>{r['queries']} searches, {r['citations']} citations "
        f"since {_cell(r['since'] or 'the start')}"
        f" · <a href='/insights?since=1d'>1 day</a> · <a href='/insights?since=7d'>7 days</a> · "
        f"<a href='/insights?since=30d'>30 days</a></p>"
        f"<p class=muted id=retention>{_e(_retention(r))}</p>"
        + _latency_chart(view["latency"])
        + _report_table("Top queries", r["top_queries"], "top-queries")
        + _report_table("Zero-result queries", zero, "zero-results")
        + _report_table("Content gaps (no hit or no good match)", r["content_gaps"], "content-gaps")
        + _report_table("Most cited sources", r["cited_sources"], "cited-sources")
        + _report_table("Sources never cited", r["never_cited"], "never-cited")
        + _report_table("Searches by origin", r["by_origin"], "by-origin")
    )
    return layout("Insights", body, active="insights")
