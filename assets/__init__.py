"""kbflow's Dagster code location: thin assets over the kbflow library steps.

``dagster dev`` (from the repo root) loads :mod:`assets.definitions`;
``kbflow ingest`` runs the same assets in-process through :mod:`assets.ingest`.
"""
