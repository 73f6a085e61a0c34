"""The REST API of ``kbflow serve``: one ``APIRouter`` per resource, each endpoint a plain function that
FastAPI runs in its thread pool, with the caller and the service as dependencies
(:func:`kbflow.service.http.caller`, :func:`kbflow.service.http.service_of`).

- :mod:`.search`: health, search, chunks, citations resolved and recorded;
- :mod:`.sources`: the source registry;
- :mod:`.claims`: the claims store;
- :mod:`.insights`: what the lake's users asked and cited.
"""

from fastapi import APIRouter

from kbflow.service.api import claims, insights, search, sources

__all__ = ["ROUTERS"]

#: every router of the REST API, in the order the OpenAPI schema lists them
ROUTERS: tuple[APIRouter, ...] = (search.router, sources.router, claims.router, insights.router)
