"""Lance tables: open the lake, create its tables, read and write the registry.

:class:`Lake` loads on first use, so importing :mod:`kbflow.lake.malloc` (which
every entry point does first) loads no pyarrow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["Lake"]


def __getattr__(name: str) -> Any:
    if name == "Lake":
        from kbflow.lake.lake import Lake

        return Lake
    raise AttributeError(f"module 'kbflow.lake' has no attribute {name!r}")


if TYPE_CHECKING:  # pragma: no cover
    from kbflow.lake.lake import Lake
