"""The Ray engine: a source's files loaded, its units chunked and its texts embedded on a Ray cluster.

:func:`connect` joins the cluster ``$RAY_ADDRESS`` names (Ray's own
variable), or starts one in this process when none is named, and checks
before anything is written that every node reads the lake and finds the
model. Then, per source:

- load: one task per file (a source its loader reads as one, such as a web
  crawl or a JSONL file: one task), results taken in file order;
- chunk: one task per :data:`CHUNK_GROUP` units, results taken in unit order;
- embed: a pool of :class:`~.ray_work.EmbedWorker` actors, one per node (or
  per GPU, ``num_gpus=1`` each, where the cluster has GPUs), each loading the
  model once per embed step. Each writes its spans' vectors as uncommitted
  Lance fragments; the step commits them at once. A worker lost with its node
  has its span given to another; with none left the step fails and the
  ``embeddings`` table is as it was.

At most :data:`IN_FLIGHT` tasks per CPU of the cluster are in flight, so the
results waiting to be committed stay bounded.
"""

from __future__ import annotations

import collections
import logging
import os
import secrets
import socket
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from kbflow._lazy import require
from kbflow.config import ChunkSettings, Settings
from kbflow.config.env import env
from kbflow.errors import ClusterError
from kbflow.pipeline.engines import Engine
from kbflow.pipeline.engines import ray_work as work
from kbflow.pipeline.engines.ray_work import PROBE_SECONDS, first_line
from kbflow.records import Source

log = logging.getLogger("kbflow")

__all__ = ["CHUNK_GROUP", "IN_FLIGHT", "RayEngine", "connect", "disconnect"]

#: units per chunk task
CHUNK_GROUP = 64
#: tasks in flight per CPU of the cluster
IN_FLIGHT = 2
#: environment the workers get from the driver: the model hub stays off, caches stay where the driver keeps them
FORWARDED_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "KBFLOW_CACHE", "HF_HOME")

_engines: dict[tuple, RayEngine] = {}


def _reachable(address: str) -> None:
    """A :class:`ClusterError` unless ``host:port`` of a ``RAY_ADDRESS`` answers within 5 seconds."""
    if address in ("auto", "local") or "://" in address and not address.startswith("ray://"):
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except (OSError, ValueError) as exc:
        raise ClusterError(
            f"no Ray cluster reachable at RAY_ADDRESS={address} ({exc}); start one (`ray start --head`) or unset "
            "RAY_ADDRESS to start one in this process"
        ) from None


def _init(ray: Any) -> str:
    """Join the cluster (or start one); returns the address joined."""
    address = (env("RAY_ADDRESS") or "").strip()
    forwarded = {name: value for name in FORWARDED_ENV if (value := env(name)) is not None}
    if not ray.is_initialized():
        if address:
            _reachable(address)
        options: dict[str, Any] = {
            "runtime_env": {"env_vars": forwarded},
            "log_to_driver": False,
            "logging_level": logging.WARNING,
        }
        if not address:
            options["include_dashboard"] = False
        try:
            with warnings.catch_warnings():  # Ray starts its processes by fork: Lance's fork warnings are not ours
                warnings.simplefilter("ignore", RuntimeWarning)
                warnings.simplefilter("ignore", UserWarning)
                ray.init(address=address or None, **options)
        except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError alike
            where = f"RAY_ADDRESS={address}" if address else "this machine"
            raise ClusterError(f"cannot start or join a Ray cluster at {where}: {exc}") from None
    try:
        return ray.get_runtime_context().gcs_address
    except AttributeError:  # a Ray Client connection has no GCS address of its own
        return address


def _probe(ray: Any, lake: Any, settings: Settings) -> list[dict[str, Any]]:
    """The alive nodes, each checked by a task pinned to it: it reads the lake and finds the model."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    nodes = [n for n in ray.nodes() if n.get("Alive")]
    token = secrets.token_hex(8) if lake.is_local else None
    probe = os.path.join(lake.uri.removeprefix("file://"), f".kbflow-probe-{token}") if token else None
    check = ray.remote(num_cpus=0, max_retries=0)(work.check_node)
    try:
        if probe and token:
            with open(probe, "w", encoding="utf-8") as fh:
                fh.write(token)
        refs = [
            check.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote(
                lake.uri, token, settings
            )
            for n in nodes
        ]
        try:
            answers = ray.get(refs, timeout=PROBE_SECONDS)
        except ray.exceptions.GetTimeoutError:
            raise ClusterError(f"the Ray cluster's nodes did not answer within {PROBE_SECONDS:.0f} s") from None
        except ray.exceptions.RayError as exc:
            why = first_line(exc)
            raise ClusterError(f"a Ray node cannot run kbflow ({why}); install kbflow on every node") from None
    finally:
        if probe and os.path.exists(probe):
            os.remove(probe)
    problems = [f"node {node[:8]}: {p}" for node, found in answers for p in found]
    if problems:
        raise ClusterError("; ".join(problems))
    return nodes


def connect(settings: Settings, lake: Any) -> RayEngine:
    """The Ray engine for ``lake`` and ``settings``' model, joined and checked once per process.

    A :class:`ClusterError` (one line) when no cluster answers at ``$RAY_ADDRESS``, when a node cannot read the
    lake (a local path on a cluster of several machines) or find the model, or when Ray is not installed.
    """
    ray = require("ray")
    address = _init(ray)
    key = (address, lake.uri, settings.model, settings.backend, settings.engine_actors)
    if key not in _engines:
        _engines[key] = RayEngine(ray, address, _probe(ray, lake, settings), settings, lake.storage_options)
    return _engines[key]


def disconnect() -> None:
    """Leave the cluster (and stop the one this process started); the next :func:`connect` joins again."""
    _engines.clear()
    ray = require("ray")
    if ray.is_initialized():
        ray.shutdown()


class RayEngine(Engine):
    """An ingest's load, chunk and embed work on a Ray cluster (see the module's docstring)."""

    name = "ray"
    writes_fragments = True

    def __init__(
        self, ray: Any, address: str, nodes: list[dict[str, Any]], settings: Settings, storage: dict[str, str]
    ) -> None:
        self.ray, self.address, self.nodes, self.storage = ray, address, nodes, storage
        self.actors = settings.engine_actors
        self.cpus = max(1, int(sum(n.get("Resources", {}).get("CPU", 0) for n in nodes)))
        self._placement: dict[str, dict[str, Any]] = {}
        task = {"num_cpus": 1, "max_retries": 3, "scheduling_strategy": "SPREAD"}  # retried where a node is lost
        self._load_file = ray.remote(**task)(work.load_file)
        self._load_whole = ray.remote(**task)(work.load_whole)
        self._chunk = ray.remote(**task)(work.chunk_group)
        self._chunk_write = ray.remote(**task)(work.chunk_write)

    def placement(self, step: str) -> dict[str, Any] | None:
        return self._placement.get(step)

    def _record(self, step: str, nodes: list[str]) -> None:
        self._placement[step] = {"engine": self.name, "tasks": len(nodes), "nodes": sorted(set(nodes))}

    def _ordered(self, submit: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        """``ray.get`` of ``submit(item)`` for each item, in order, with a bounded number in flight."""
        pending: collections.deque = collections.deque()
        for item in items:
            pending.append(submit(item))
            if len(pending) >= self.cpus * IN_FLIGHT:
                yield self._get(pending.popleft())
        while pending:
            yield self._get(pending.popleft())

    def _get(self, ref: Any) -> Any:
        try:
            return self.ray.get(ref)
        except self.ray.exceptions.RayError as exc:
            raise ClusterError(f"a Ray task failed: {first_line(exc)}") from None

    def load_rows(self, loader: Any, source: Source) -> Iterator[dict[str, Any]]:
        from kbflow.sources.base import FileSetLoader

        nodes: list[str] = []
        if not isinstance(loader, FileSetLoader) or type(loader).load is not FileSetLoader.load:
            rows, issues, error, node = self._get(self._load_whole.remote(source, loader.lake_uri))
            loader.issues, nodes = list(issues), [node]
            self._record("load", nodes)
            if error is not None:
                raise _source_error(error)
            yield from rows
            return
        files = loader.files(source.uri, source.options)
        listed = list(loader.issues)
        loader.report_progress(total=len(files))
        loaded = 0
        results = self._ordered(lambda f: self._load_file.remote(source, f[0], f[1], loader.lake_uri), files)
        for rows, issues, node in results:
            listed.extend(issues)
            nodes.append(node)
            loaded += len(rows)
            yield from rows
            loader.report_progress(files=1)
        loader.issues = listed
        self._record("load", nodes)
        if not loaded:
            raise loader.nothing_loaded(source)

    def chunk_rows(
        self, docs: Iterable[dict[str, Any]], source: Source, chunker: str, chunking: ChunkSettings
    ) -> Iterator[dict[str, Any]]:
        nodes: list[str] = []
        for rows, node in self._ordered(
            lambda group: self._chunk.remote(group, source, chunker, chunking), _groups(docs, CHUNK_GROUP)
        ):
            nodes.append(node)
            yield from rows
        self._record("chunk", nodes)

    def write_chunks(
        self, lake: Any, docs: Iterable[dict[str, Any]], source: Source, chunker: str, chunking: ChunkSettings
    ) -> tuple[list, Any]:
        fragments: list = []
        ids: list[str] = []
        nodes: list[str] = []

        def submit(group: list[dict[str, Any]]) -> Any:
            return self._chunk_write.remote(group, source, chunker, chunking, lake.uri, self.storage)

        for written, chunk_ids, node in self._ordered(submit, _groups(docs, CHUNK_GROUP)):
            fragments.extend(written)
            ids.extend(chunk_ids)
            nodes.append(node)
        self._record("chunk", nodes)
        return fragments, ids

    def write_embeddings(self, lake: Any, chunks: Any, todo: Any, settings: Settings, progress: Any) -> list:
        from kbflow.pipeline.engines.ray_pool import EmbedPool

        self.nodes = [n for n in self.ray.nodes() if n.get("Alive")] or self.nodes  # nodes come and go
        pool = EmbedPool(self.ray, self.nodes, settings, self.storage, self.actors)
        try:
            fragments, nodes = pool.run(lake.uri, chunks, todo, progress)
        finally:
            pool.close()
        self._record("embed", nodes)
        return fragments


def _groups(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    group: list[Any] = []
    for item in items:
        group.append(item)
        if len(group) == size:
            yield group
            group = []
    if group:
        yield group


def _source_error(message: str) -> Exception:
    from kbflow.errors import SourceError

    return SourceError(message)
