"""The Dagster definitions, by file: ``dagster dev -f assets/definitions.py``.

kbflow's code location is the installed package :mod:`kbflow_dagster` (plain
``dagster dev`` at the repo root loads it through ``pyproject.toml``); this file
only keeps the repo's ``assets/`` entry point for tools that load definitions
from a file.
"""

from kbflow_dagster.definitions import defs

__all__ = ["defs"]
