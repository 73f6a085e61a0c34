"""The ``kbflow`` command's subcommands, one module per kind of work; :mod:`kbflow.cli` adds them to the group.

- :mod:`.search`: ``search``, ``resolve``;
- :mod:`.lake`: ``status``, ``remove``, ``tag``, ``versions``, ``gc``;
- :mod:`.serve`: ``serve``, ``mcp``, ``insights``, ``keys``.

Registering and ingesting (``add``, ``ingest``) stay in :mod:`kbflow.cli`; ``eval`` and ``claims`` live
beside their packages (:mod:`kbflow.evaluate.cli`, :mod:`kbflow.claims.cli`).
"""
