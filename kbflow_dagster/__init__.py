"""kbflow's Dagster code location: thin assets over the kbflow library steps.

``dagster dev`` (from the repo root) loads :mod:`kbflow_dagster.definitions`;
``kbflow ingest`` runs the same assets in-process through
:func:`kbflow_dagster.ingest.run_ingest`, which kbflow finds through its
``kbflow.runners`` entry point (the library never imports Dagster).
"""

from kbflow.lake.malloc import limit_malloc_arenas

limit_malloc_arenas()  # before Lance starts its threads: an ingest's memory stays flat (see kbflow.lake.malloc)
