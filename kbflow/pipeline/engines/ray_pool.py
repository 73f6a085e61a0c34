"""The embed step's pool of Ray actors: one per node (or per GPU), spans of texts handed to whichever is free.

The texts to embed (shortest first, as the local step takes them) are cut
into spans, a few per worker (:func:`span_size`), each handed to the next
free worker and written as one fragment. A worker that dies (its node lost, its
process killed for memory) gives its span back to the pool and leaves it;
the step fails with a :class:`~kbflow.errors.ClusterError` only when no
worker is left, before anything is committed.
"""

from __future__ import annotations

import collections
import logging
import secrets
from typing import Any

from kbflow import schema as S
from kbflow.config import Settings
from kbflow.errors import ClusterError
from kbflow.pipeline.engines import ray_work as work
from kbflow.pipeline.engines.ray_work import PROBE_SECONDS, first_line

log = logging.getLogger("kbflow")

__all__ = ["SPAN_BATCHES", "WORKER_PREFIX", "EmbedPool", "span_size", "worker_plan"]

#: write batches per span handed to one worker at a time, at most
SPAN_BATCHES = 4
#: texts per span, at least (each span is one Lance fragment: not too many small ones)
MIN_SPAN = 64
#: spans per worker, at least, where there are texts enough: a slow worker does not hold up the step
SPANS_PER_WORKER = 4
#: the name every embedding worker's starts with
WORKER_PREFIX = "kbflow-embed-"


def worker_plan(nodes: list[dict[str, Any]], actors: int | None) -> list[tuple[str, int, int]]:
    """``(node id, GPUs, threads)`` per embedding worker: one per GPU where the cluster has GPUs, else one per node
    with a CPU, using its CPUs; ``actors`` (when set) takes that many, round the plan."""
    gpus = [(n["NodeID"], n.get("Resources", {})) for n in nodes if n.get("Resources", {}).get("GPU", 0) >= 1]
    if gpus:
        plan = [(node, 1, max(1, int(res.get("CPU", 1) // res["GPU"]))) for node, res in gpus]
        plan = [p for (node, res), p in zip(gpus, plan, strict=True) for _ in range(int(res["GPU"]))]
    else:
        # a node without a CPU for tasks (a head node started with --num-cpus 0) gets no worker
        cpus = [(n["NodeID"], int(n.get("Resources", {}).get("CPU", 0))) for n in nodes]
        plan = [(node, 0, count) for node, count in cpus if count >= 1]
    plan = [p for p in plan if p[0]] or [("", 0, 1)]
    if actors:
        plan = [plan[i % len(plan)] for i in range(actors)]
    return plan


def span_size(texts: int, workers: int, write_batch: int) -> int:
    """Texts per span: :data:`SPANS_PER_WORKER` spans for every worker, within :data:`MIN_SPAN` and
    :data:`SPAN_BATCHES` write batches."""
    cap = write_batch * SPAN_BATCHES
    even = -(-texts // max(1, workers * SPANS_PER_WORKER))
    return min(cap, max(min(MIN_SPAN, cap), even))


class EmbedPool:
    """Embedding workers started for one embed step (each loads the model once) and stopped after it."""

    def __init__(
        self, ray: Any, nodes: list[dict[str, Any]], settings: Settings, storage: dict[str, str], actors: int | None
    ) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self.ray, self.settings = ray, settings
        remote = ray.remote(work.EmbedWorker)
        started, tag = [], secrets.token_hex(4)
        for i, (node, gpus, threads) in enumerate(worker_plan(nodes, actors)):
            where = NodeAffinitySchedulingStrategy(node, soft=True) if node else "SPREAD"
            options = {"num_cpus": 1, "num_gpus": gpus, "max_restarts": 0, "scheduling_strategy": where}
            name = f"{WORKER_PREFIX}{tag}-{i}"  # named: an operator finds them in `ray list actors`
            threads = settings.embed_threads or threads
            started.append(remote.options(name=name, **options).remote(settings, storage, threads))
        ready = {actor.ready.remote(): actor for actor in started}
        done, late = ray.wait(list(ready), num_returns=len(ready), timeout=PROBE_SECONDS)
        self.workers, errors = [], []
        for ref in done:
            try:
                ray.get(ref)
                self.workers.append(ready[ref])
            except ray.exceptions.RayError as exc:
                errors.append(first_line(exc))
        for ref in late:
            ray.kill(ready[ref])
        if self.workers and (errors or late):  # the step goes on with fewer workers: say so
            log.warning(
                "%d of %d embedding workers did not start (%s); embedding on %d",
                len(errors) + len(late),
                len(ready),
                errors[0] if errors else "not placed in time",
                len(self.workers),
            )
        if not self.workers:
            why = errors[0] if errors else f"none was placed within {PROBE_SECONDS:.0f} s (are its CPUs busy?)"
            raise ClusterError(f"no embedding worker started on the Ray cluster: {why}")

    def run(self, lake_uri: str, chunks: Any, todo: Any, progress: Any) -> tuple[list, list[str]]:
        """``(fragments, node per span)``: every text of ``todo`` embedded and written, uncommitted."""
        ray = self.ray
        hashes = todo.column(S.CHUNK_HASH).combine_chunks()
        row_ids = todo.column("_rowid_min").to_numpy()
        n = len(row_ids)
        span = span_size(n, len(self.workers), self.settings.write_batch_size)
        spans = collections.deque((i, min(i + span, n)) for i in range(0, n, span))
        idle, fragments, nodes = list(self.workers), [], []
        running: dict[Any, Any] = {}
        while spans or running:
            while idle and spans:
                worker, (a, b) = idle.pop(0), spans.popleft()  # the longest idle first: spread over the nodes
                ref = worker.embed.remote(lake_uri, chunks.uri, chunks.version, row_ids[a:b], hashes.slice(a, b - a))
                running[ref] = (worker, (a, b))
            [ref], _ = ray.wait(list(running), num_returns=1)
            worker, part = running.pop(ref)
            try:
                written, count, node = ray.get(ref)
            except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError) as exc:
                self.workers.remove(worker)
                spans.appendleft(part)
                log.warning("an embedding worker was lost (%s); its texts go to another", first_line(exc))
                if not self.workers:
                    raise ClusterError(f"the Ray cluster lost every embedding worker: {first_line(exc)}") from None
                continue
            except ray.exceptions.RayError as exc:
                raise ClusterError(f"embedding on the Ray cluster failed: {first_line(exc)}") from None
            fragments.extend(written)
            nodes.append(node)
            idle.append(worker)
            if progress is not None:
                progress(count, n)
        return fragments, nodes

    def close(self) -> None:
        """Stop the workers (their CPUs and GPUs go back to the cluster for the next step's tasks)."""
        for worker in self.workers:
            self.ray.kill(worker)
        self.workers = []
