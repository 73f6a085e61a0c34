"""Every environment variable kbflow reads, in one place: what it sets, its default, who reads it.

:data:`VARIABLES` is the table (``docs/configuration.md`` prints it, and a
test keeps the two the same); each reader below reads one of them. Anything
that can be set by a variable can also be set in code, through
:class:`~kbflow.config.Settings` or a function's arguments: the variable only
changes a default.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, overload

from kbflow.errors import ConfigError

__all__ = [
    "DEFAULT_LAKE",
    "DEFAULT_LOG_DAYS",
    "SERVE_OPTIONS_ENV",
    "VARIABLES",
    "Variable",
    "cache_dir",
    "env",
    "env_int",
    "fetch_allow_hosts",
    "resolve_lake",
    "serve_options",
]


@dataclass(frozen=True)
class Variable:
    """One environment variable: its name, its default (as text) and what it sets."""

    name: str
    default: str
    sets: str


#: every environment variable kbflow reads (the test suite's own, ``KBFLOW_BROWSER_TESTS`` and
#: ``KBFLOW_OCR_TESTS``, are not kbflow's); a default in backquotes is code, one in words says how it is chosen
VARIABLES: tuple[Variable, ...] = (
    Variable("KBFLOW_LAKE", "./data/lake", "the lake every command and Retriever.open use when none is named"),
    Variable("KBFLOW_MODEL", "sentence-transformers/all-MiniLM-L6-v2", "the embedding model (Settings.model)"),
    Variable("KBFLOW_BACKEND", "auto", "what runs the model: auto, torch, onnx, bf16, onnx-int8 (Settings.backend)"),
    Variable("KBFLOW_ENGINE", "local", "where an ingest's steps run: local, ray or auto (Settings.engine)"),
    Variable("KBFLOW_CACHE", "~/.cache/kbflow", "kbflow's cache: the model's ONNX export, downloaded pages"),
    Variable("KBFLOW_LOG_DAYS", "90", "days the query and citation logs keep a row; 0 keeps all (Settings.log_days)"),
    Variable("KBFLOW_STORAGE_OPTIONS", "none", "object-storage options of an s3:// lake, a JSON object"),
    Variable("KBFLOW_LEASE_SECONDS", "60", "seconds a writer's lease on an object-storage lake lasts unrenewed"),
    Variable("KBFLOW_PDF_WORKERS", "the CPUs this process may use", "processes that parse PDFs during an ingest"),
    Variable("KBFLOW_TESSERACT", "tesseract on the PATH", "the Tesseract program that reads scanned pages"),
    Variable("KBFLOW_OCR_LANG", "eng", "the languages Tesseract reads, as its -l option takes them (eng+deu)"),
    Variable("KBFLOW_ONNX_RUNTIME", "auto", "what runs the ONNX graph: auto, openvino or onnxruntime"),
    Variable(
        "KBFLOW_FETCH_ALLOW_HOSTS", "none", "private hosts, HOST:PORT pairs or networks every fetch and crawl may reach"
    ),
    Variable("KBFLOW_ALLOW_HOSTS", "none", "kbflow serve --allow-host: more Host names it answers to"),
    Variable("KBFLOW_ALLOW_ORIGINS", "none", "kbflow serve --allow-origin: other sites allowed to call it"),
    Variable("KBFLOW_EVAL_HOME", "./data/eval", "where kbflow eval keeps its lakes and runs"),
    Variable("KBFLOW_EVAL_DATASET", "the bundled sample set", "the Dagster evaluation assets' dataset folder"),
    Variable("KBFLOW_SWEEP", "the bundled sweep", "the Dagster evaluation assets' sweep file"),
    Variable("KBFLOW_DAGSTER_HOME", "the lake's dagster folder", "where kbflow ingest keeps Dagster's run storage"),
    Variable("KBFLOW_DAGSTER_EXECUTOR", "multiprocess", "the Dagster executor kbflow ingest's runs use"),
    Variable("KBFLOW_REFRESH_SECONDS", "300", "how often the Dagster sensor re-reads the source registry"),
    Variable("KBFLOW_AUTOMATION_SECONDS", "120", "how often Dagster's automation condition sensor runs"),
    Variable("KBFLOW_LEASE_HELD", "unset", "internal: set by a Dagster run that holds the lake's lease already"),
    Variable("KBFLOW_SERVE_OPTIONS", "unset", "internal: kbflow serve --workers hands its options to each worker"),
    # others' variables kbflow reads
    Variable("RAY_ADDRESS", "unset (a cluster started here)", "the Ray cluster --engine ray connects to"),
    Variable("AWS_ENDPOINT_URL", "unset", "an s3:// lake's endpoint when its storage options name none"),
    Variable("AWS_REGION", "unset", "an s3:// lake's region when its storage options name none"),
    Variable("MALLOC_ARENA_MAX", "unset (kbflow sets 2)", "glibc's malloc arenas; kbflow keeps a value already set"),
    Variable("HF_HUB_OFFLINE", "unset", "forwarded to Ray workers (kbflow loads models offline)"),
    Variable("TRANSFORMERS_OFFLINE", "unset", "forwarded to Ray workers"),
    Variable("HF_HOME", "unset", "forwarded to Ray workers"),
)
_NAMES = frozenset(v.name for v in VARIABLES)

#: The lake used when neither ``--lake`` nor ``KBFLOW_LAKE`` names one (relative to the cwd).
DEFAULT_LAKE = os.path.join("data", "lake")
#: days the query and citation logs keep a row unless configured (``Settings.log_days``)
DEFAULT_LOG_DAYS = 90


@overload
def env(name: str, default: str) -> str: ...


@overload
def env(name: str, default: None = None) -> str | None: ...


def env(name: str, default: str | None = None) -> str | None:
    """The environment variable ``name`` (one of :data:`VARIABLES`: kbflow reads none it does not list), else
    ``default``."""
    if name not in _NAMES:
        raise KeyError(f"{name} is not in kbflow.config.env.VARIABLES; list it there (and in docs/cli.md) first")
    return os.environ.get(name, default)


def env_int(name: str, default: int) -> int:
    """The whole number environment variable ``name`` holds, else ``default`` (a :class:`ConfigError` naming it when
    it holds something else)."""
    text = (env(name) or "").strip()
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"${name} must be a whole number, got {text!r}") from None


#: how ``kbflow serve --workers N`` hands its options to each worker process (JSON, set by the parent)
SERVE_OPTIONS_ENV = "KBFLOW_SERVE_OPTIONS"


def serve_options() -> dict[str, Any]:
    """The options ``kbflow serve --workers N`` left for a worker process (:data:`SERVE_OPTIONS_ENV`)."""
    import json

    text = env(SERVE_OPTIONS_ENV)
    if not text:
        raise ConfigError(f"${SERVE_OPTIONS_ENV} is not set: worker processes are started by `kbflow serve --workers`")
    return dict(json.loads(text))


def cache_dir(part: str) -> str:
    """A folder of kbflow's local cache: ``$KBFLOW_CACHE`` (default ``~/.cache/kbflow``), plus ``part``."""
    root = env("KBFLOW_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "kbflow")
    return os.path.join(root, part)


def resolve_lake(lake: str | os.PathLike[str] | None = None) -> str:
    """The lake URI to use: ``lake`` if given, else ``$KBFLOW_LAKE``, else ``./data/lake``.

    Local paths are made absolute so a lake keeps its identity when the working
    directory changes; URIs with a scheme (``s3://…``) are returned as given.
    """
    uri = os.fspath(lake) if lake is not None else env("KBFLOW_LAKE") or DEFAULT_LAKE
    if not uri:
        raise ConfigError("the lake URI is empty; pass --lake PATH or set KBFLOW_LAKE")
    if "://" in uri:
        return uri
    return os.path.abspath(os.path.expanduser(uri))


def fetch_allow_hosts() -> list[str]:
    """``$KBFLOW_FETCH_ALLOW_HOSTS``: the private hosts, ``host:port`` pairs and networks every fetch may reach
    (separated by commas or spaces)."""
    return [e for e in (env("KBFLOW_FETCH_ALLOW_HOSTS") or "").replace(",", " ").split() if e]
