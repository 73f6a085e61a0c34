"""The web page of ``kbflow serve``: search, citations on their page, sources, versions, insights.

Server-rendered HTML, readable without JavaScript, with no script and no
resource from outside the server (the style sheet is inline). Every page
calls the same :class:`~kbflow.service.core.Service` as the REST API, with
the caller's key: the same query shows the same hits, and a key sees and
edits what it may on the API. With keys, a browser signs in once at
``/login`` (the key is kept in an HTTP-only, same-site cookie).

- :mod:`.routes`: the routes, each one service call and one page;
- :mod:`.pages`: the pages, pure functions from records to HTML (every value
  escaped; unknown chunks and sources get a 404 page).
"""

from fastapi import FastAPI

from kbflow.service.http import COOKIE
from kbflow.service.web.routes import FormRefused, refused, router

__all__ = ["COOKIE", "mount_web"]


def mount_web(app: FastAPI) -> None:
    """Add the web page's routes to ``app`` (the app of ``kbflow serve``, whose ``state.service`` they call)."""
    app.add_exception_handler(FormRefused, refused)
    app.include_router(router)
