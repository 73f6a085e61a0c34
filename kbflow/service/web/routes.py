"""The web page's routes: each fetches with one public :class:`~kbflow.service.core.Service` call (the caller's
key as a dependency) and answers with a pure page of :mod:`kbflow.service.web.pages`.

Plain ``def`` routes, run by FastAPI in its thread pool; every form posted
carries the CSRF token (checked by :func:`require_csrf` before its route).
"""

# no `from __future__ import annotations`: FastAPI reads the route signatures' annotations at run time
import html
import urllib.parse
from typing import Annotated

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from kbflow.errors import KbflowError, ResolveError
from kbflow.records import render
from kbflow.service.core import Service
from kbflow.service.http import COOKIE, caller, service_of
from kbflow.service.reads import SCALE
from kbflow.service.security import CSRF_FIELD, WRITES, check_csrf, csrf_token
from kbflow.service.web import pages
from kbflow.service.web.claims import claim_page as render_claim
from kbflow.usage.keys import ApiKey

__all__ = ["FormRefused", "refused", "require_csrf", "router"]

Caller = Annotated[ApiKey | None, Depends(caller)]
Served = Annotated[Service, Depends(service_of)]
#: the files the original of a chunk is served as (anything else is plain text; HTML is never rendered)
MEDIA = {".pdf": "application/pdf", ".html": "text/plain", ".htm": "text/plain"}


class FormRefused(Exception):
    """A page form that fails its CSRF check (answered with a 403 page)."""


async def require_csrf(request: Request) -> None:
    """Every form the page posts carries the CSRF token of :func:`csrf_field` (checked before its route)."""
    if request.method not in WRITES:
        return
    form = await request.form()
    token = form.get(CSRF_FIELD)
    why = check_csrf(request.app.state.policy, request.scope, token if isinstance(token, str) else None)
    if why:
        raise FormRefused(why)


async def refused(_request: Request, exc: Exception) -> HTMLResponse:
    return HTMLResponse(pages.refused_page(exc), status_code=403)


def csrf_field(request: Request) -> str:
    """The hidden field carrying this browser's CSRF token, for every form that posts."""
    token = csrf_token(request.app.state.policy, request.scope)
    return f"<input type=hidden name={CSRF_FIELD} value='{html.escape(token)}'>"


def _page(html: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(html, status_code=status)


def _error(exc: Exception) -> HTMLResponse:
    return _page(*pages.error_page(exc))


router = APIRouter(include_in_schema=False, dependencies=[Depends(require_csrf)])


# --- sign in --------------------------------------------------------------------------------------
@router.get("/login")
def login_form(request: Request, next: str = "/", error: str | None = None):
    return _page(pages.login_page(next, error, csrf_field(request)))


@router.post("/login")
def login(service: Served, key_text: Annotated[str, Form(alias="key")], next: Annotated[str, Form()] = "/"):
    try:
        service.principal(key_text.strip())
    except KbflowError as exc:
        return RedirectResponse("/login?" + urllib.parse.urlencode({"error": str(exc), "next": next}), 303)
    target = next if next.startswith("/") and not next.startswith(("//", "/\\")) else "/"  # never off-site
    response = RedirectResponse(target, 303)
    response.set_cookie(COOKIE, key_text.strip(), httponly=True, samesite="strict")
    return response


# --- search and a chunk on its page ---------------------------------------------------------------
@router.get("/")
def search_page(
    key: Caller,
    service: Served,
    q: str = "",
    mode: str | None = None,
    scope: str | None = None,
    kind: Annotated[list[str] | None, Query()] = None,
    source_type: Annotated[list[str] | None, Query()] = None,
    k: Annotated[str, Query()] = "10",
    tag: str | None = None,
):
    kinds, types = kind or [], source_type or []
    form = pages.search_form(q, mode, scope, kinds, types, k, tag)
    if not q.strip():
        return _page(pages.search_page(form, q))
    if not k.strip().isdigit():
        return _page(pages.search_page(form, q, error=f"k must be a whole number, got {k}"), 400)
    try:
        hits, version = service.search(
            key,
            q,
            int(k),
            origin="web",
            mode=mode or None,
            scope=scope or None,
            kinds=kinds or None,
            source_types=types or None,
            tag=tag or None,
        )
    except KbflowError as exc:
        return _page(pages.search_page(form, q, error=str(exc)), 400)
    return _page(pages.search_page(form, q, hits, version))


@router.get("/chunks/{chunk_id}")
def chunk_page(key: Caller, service: Served, chunk_id: str, q: str = ""):
    try:
        view = service.pages.chunk_view(key, chunk_id)
    except KbflowError as exc:
        return _error(exc)
    figure, loc = "", view["citation"].locator
    if loc.kind == "pdf" and loc.page:
        try:
            _, size = service.pages.page_image(view["citation"])  # the view's citation: no second read
            image = f"/chunks/{urllib.parse.quote(chunk_id)}/page.png"
            figure = render.overlay_html(image, size, render.region_boxes(view["citation"], SCALE))
        except ResolveError as exc:
            figure = f"<p class=error>the page cannot be rendered: {html.escape(str(exc))}</p>"
    return _page(pages.chunk_page(view, chunk_id, q, figure))


@router.get("/chunks/{chunk_id}/page.png")
def chunk_page_image(key: Caller, service: Served, chunk_id: str):
    try:
        data, _ = service.pages.chunk_page_image(key, chunk_id)
    except KbflowError as exc:
        return _error(exc)
    return Response(data, media_type="image/png", headers={"Cache-Control": "private, max-age=3600"})


@router.get("/chunks/{chunk_id}/file")
def chunk_file(key: Caller, service: Served, chunk_id: str):
    """The original file the chunk came from (PDFs open at the page with ``#page=N``), or its web page."""
    import os

    try:
        kind, where = service.pages.chunk_original(key, chunk_id)
    except KbflowError as exc:
        return _error(exc)
    if kind == "url":
        return RedirectResponse(where, 303)
    media = MEDIA.get(os.path.splitext(where)[1].lower(), "text/plain; charset=utf-8")
    with open(where, "rb") as fh:
        data = fh.read()
    # a sandbox: whatever the file holds runs in no origin of this server's
    headers = {"Content-Disposition": "inline", "Content-Security-Policy": "sandbox; default-src 'none'"}
    return Response(data, media_type=media, headers=headers)


# --- sources --------------------------------------------------------------------------------------
def _back(error: str | None = None, done: str | None = None) -> RedirectResponse:
    query = {k: v for k, v in (("error", error), ("done", done)) if v}
    return RedirectResponse("/sources" + ("?" + urllib.parse.urlencode(query) if query else ""), 303)


@router.get("/sources")
def sources_page(request: Request, key: Caller, service: Served, error: str | None = None, done: str | None = None):
    try:
        listed = service.pages.sources_overview(key)
    except KbflowError as exc:
        return _error(exc)
    editor = key is None or key.role == "editor"
    return _page(pages.sources_page(listed, editor, csrf_field(request), error, done))


@router.post("/sources/add")
def sources_add(
    key: Caller,
    service: Served,
    uri: Annotated[str, Form()],
    type: Annotated[str, Form()],
    id: Annotated[str, Form()] = "",
    scope: Annotated[str, Form()] = "",
):
    try:
        added = service.sources.add(key, {"uri": uri, "type": type, "id": id or None, "scope": scope or None})
    except KbflowError as exc:
        return _back(error=str(exc))
    return _back(done=f"added {added['source_id']}; refresh it to ingest it")


@router.post("/sources/{source_id}/remove")
def sources_remove(key: Caller, service: Served, source_id: str):
    try:
        service.sources.remove(key, source_id)
    except KbflowError as exc:
        return _back(error=str(exc))
    return _back(done=f"removed {source_id}")


@router.post("/sources/{source_id}/refresh")
def sources_refresh(key: Caller, service: Served, source_id: str):
    try:
        summary = service.sources.refresh(key, source_id)
    except KbflowError as exc:
        return _back(error=str(exc))
    report = next((s for s in summary["sources"] if s["source_id"] == source_id), None)
    if report and report.get("error"):
        return _back(error=f"{source_id}: {report['error']}")
    return _back(done=f"refreshed {source_id}: {report['status'] if report else 'done'}")


@router.get("/sources/{source_id}")
def source_page(key: Caller, service: Served, source_id: str, unit: str | None = None):
    try:
        view = service.pages.source_view(key, source_id)
    except KbflowError as exc:
        return _error(exc)
    return _page(pages.source_page(view, source_id, unit))


@router.get("/claims/{claim_id}")
def claim_page(key: Caller, service: Served, claim_id: str):
    try:
        claim = service.claims.get(key, claim_id)
        relations = service.claims.relations(key, claim_id, statuses=("proposed", "confirmed", "rejected", "withdrawn"))
        events = service.claims.history(key, claim_id)["events"]
    except KbflowError as exc:
        return _error(exc)
    return _page(render_claim(claim, relations["relations"], events))


# --- versions and insights ------------------------------------------------------------------------
@router.get("/versions")
def versions_page(key: Caller, service: Served):
    try:
        snapshots, history = service.pages.lake_versions(key)
    except KbflowError as exc:
        return _error(exc)
    return _page(pages.versions_page(snapshots, history))


@router.get("/insights")
def insights_page(key: Caller, service: Served, since: str = "7d"):
    try:
        view = service.pages.insights_view(key, since or None)
    except KbflowError as exc:
        return _error(exc)
    return _page(pages.insights_page(view))
