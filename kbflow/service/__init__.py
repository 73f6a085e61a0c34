"""kbflow as a service: ``kbflow serve`` (REST under ``/v1`` and MCP at ``/mcp``), ``kbflow mcp`` (stdio),
and :class:`~kbflow.service.client.Client` for Python callers.

- :mod:`kbflow.service.core`: what the server does, protocol-free (:class:`Service`).
- :mod:`kbflow.service.app`: the FastAPI app and its error mapping.
- :mod:`kbflow.service.mcp`: the MCP tools and resources.
- :mod:`kbflow.service.client`: the HTTP client with ``Retriever``'s search signature.
"""
