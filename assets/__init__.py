"""kbflow's Dagster code location: thin assets over the kbflow library steps.

``dagster dev`` (from the repo root) loads :mod:`assets.definitions`;
``kbflow ingest`` runs the same assets in-process through :mod:`assets.ingest`.
"""

from kbflow.lake.malloc import limit_malloc_arenas

limit_malloc_arenas()  # before Lance starts its threads: an ingest's memory stays flat (see kbflow.lake.malloc)
