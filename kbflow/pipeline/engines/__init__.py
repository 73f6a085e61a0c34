"""Where an ingest's work runs: this process (``local``) or a Ray cluster (``ray``), picked per source.

The steps (:mod:`kbflow.pipeline.load`, :mod:`.chunking`, :mod:`.embedding`)
keep every decision (what changed, what to delete, what is already embedded)
and every commit; an engine only does the work between them:

- :meth:`Engine.load_rows`: a source's raw units, as ``documents`` rows, in
  the loader's order (Ray: one task per file);
- :meth:`Engine.chunk_rows`: the ``chunks`` rows of a run of units, in order
  (Ray: one task per group of units), for the step to merge;
- :meth:`Engine.write_chunks` (Ray only: :attr:`Engine.writes_fragments`): a
  source's first chunks, written as uncommitted Lance fragments by the
  workers, one task per group of units; the step commits them once;
- :meth:`Engine.write_embeddings` (Ray only): vectors for the texts to embed,
  written as uncommitted fragments by the workers; the step commits them
  once.

So a Ray ingest writes the same rows as a local one, and a failure before a
step's commit leaves its table as it was. :func:`open_engine` picks the engine
for a source from :attr:`kbflow.config.Settings.engine`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from kbflow.chunk.base import chunk_unit
from kbflow.config import ChunkSettings, Settings
from kbflow.errors import ConfigError, KbflowError
from kbflow.records import RawUnit, Source

__all__ = ["AUTO_RAY_BYTES", "LOCAL", "Engine", "open_engine", "ray_installed"]

#: ``engine="auto"`` sends a source to Ray when it is estimated to read at least this many bytes (a PDF's bytes
#: count an eighth; :meth:`kbflow.sources.base.Loader.estimate_bytes`). Below it the cluster's start-up (connecting,
#: starting one embedding worker per node, each loading the model: ``python bench/ray_ingest.py`` prints it) costs
#: more than the texts take to embed in this process.
AUTO_RAY_BYTES = 4 << 20


class Engine:
    """The local engine: every step's work in this process, one unit after another."""

    #: the engine's name in reports (``kbflow ingest --json``: ``engine``)
    name = "local"
    #: the cluster it runs on (Ray's address; None: this process)
    address: str | None = None
    #: whether the engine's workers write the rows of a step as uncommitted fragments (:meth:`write_chunks`,
    #: :meth:`write_embeddings`), else the step writes them from this process
    writes_fragments = False

    def load_rows(self, loader: Any, source: Source) -> Iterator[dict[str, Any]]:
        """The ``documents`` rows of ``source`` in the loader's order (its ``issues``: what was left out)."""
        for unit in loader.load(source):
            yield unit.to_row()

    def chunk_rows(
        self, docs: Iterable[dict[str, Any]], source: Source, chunker: str, chunking: ChunkSettings
    ) -> Iterator[dict[str, Any]]:
        """The ``chunks`` rows of the ``documents`` rows ``docs``, in their order."""
        for doc in docs:
            yield from chunk_document(doc, source, chunker, chunking)

    def write_chunks(
        self, lake: Any, docs: Iterable[dict[str, Any]], source: Source, chunker: str, chunking: ChunkSettings
    ) -> tuple[list, Any]:
        """``(uncommitted fragments of chunks, their chunk ids)`` for the ``documents`` rows ``docs`` (engines that
        :attr:`writes_fragments`: a source's first chunks)."""
        raise ConfigError(f"the {self.name} engine writes chunks from the step itself")

    def write_embeddings(self, lake: Any, chunks: Any, todo: Any, settings: Settings, progress: Any) -> list:
        """Uncommitted Lance fragments of ``embeddings`` for the texts ``todo`` names (engines that
        :attr:`writes_fragments`)."""
        raise ConfigError(f"the {self.name} engine embeds in the step itself")

    def placement(self, step: str) -> dict[str, Any] | None:
        """Where the last ``step`` (``"load"``, ``"chunk"``, ``"embed"``) ran: ``{"engine", "tasks", "nodes"}``,
        or ``None`` when it ran in this process."""
        return None


def chunk_document(doc: dict[str, Any], source: Source, chunker: str, chunking: ChunkSettings) -> list[dict[str, Any]]:
    """The ``chunks`` rows of one ``documents`` row (what every engine runs per unit)."""
    unit = RawUnit.from_row(doc)
    return [chunk.to_row(source, unit.file_hash, chunker) for chunk in chunk_unit(unit, chunking)]


#: the one local engine (it holds no state)
LOCAL = Engine()


def ray_installed() -> bool:
    """Whether Ray can be imported here (``pip install 'kbflow[ray]'``)."""
    from importlib.util import find_spec

    return find_spec("ray") is not None


def _estimate(source: Source) -> int:
    from kbflow.sources.base import get_loader

    try:
        return get_loader(source.source_type).estimate_bytes(source)
    except KbflowError:
        return 0


def open_engine(settings: Settings, lake: Any, source: Source | None = None) -> Engine:
    """The engine for ``source``'s steps under ``settings.engine``.

    ``"ray"`` connects once per process (:func:`kbflow.pipeline.engines.ray_engine.connect`: a clear
    :class:`~kbflow.errors.ClusterError` before anything is written when the cluster, the lake or the
    model cannot be reached); ``"auto"`` takes Ray for a source of at least :data:`AUTO_RAY_BYTES`
    where Ray is installed, this process for the rest.
    """
    if settings.engine == "local":
        return LOCAL
    if settings.engine == "auto" and (not ray_installed() or source is None or _estimate(source) < AUTO_RAY_BYTES):
        return LOCAL
    from kbflow.pipeline.engines.ray_engine import connect

    return connect(settings, lake)
