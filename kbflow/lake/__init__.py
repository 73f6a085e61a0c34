"""Lance tables: open the lake, create its tables, read and write the registry."""

from kbflow.lake.lake import Lake

__all__ = ["Lake"]
