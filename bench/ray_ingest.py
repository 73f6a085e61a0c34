"""The same corpus ingested in one process and on a Ray cluster of 1, 2 and 4 worker nodes on this machine.

The corpus is N abstracts of the Cranfield collection (``../shared/datasets``),
one text file each, as one docs source: one load task per file on Ray. Each
Ray run starts a fresh cluster (``ray.cluster_utils.Cluster``: a head node
with no CPU for tasks, and W worker nodes of one CPU each, each its own
processes) and ingests into a fresh lake with the default model, one
embedding worker per node. Printed per run: wall time, chunks/s, and the
peak resident memory of each node's processes (sampled every 0.2 s) and of
this process (the driver). Then the fixed cost of the engine (a one-file
source on a cluster already up, against the same in this process) and, as a
2-core machine cannot show a speed-up past two workers, the projection per
added core from the measured one-worker throughput.

    python bench/ray_ingest.py [--docs 400] [--workers 1,2,4]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import psutil  # noqa: E402

from kbflow.config import Settings  # noqa: E402
from kbflow.lake import Lake  # noqa: E402
from kbflow.pipeline import ingest  # noqa: E402
from kbflow.records import Source  # noqa: E402

CORPUS = os.path.join(os.path.dirname(HERE), "..", "shared", "datasets", "cranfield", "corpus.jsonl")
GIB = 1 << 30


def write_corpus(folder: str, n: int) -> None:
    if not os.path.exists(CORPUS):
        raise SystemExit(f"{CORPUS}: not found (the shared datasets)")
    os.makedirs(folder)
    with open(CORPUS, encoding="utf-8") as fh:
        for i, line in zip(range(n), fh, strict=False):
            row = json.loads(line)
            with open(os.path.join(folder, f"doc{i:05d}.txt"), "w", encoding="utf-8") as out:
                out.write(f"{row.get('title', '')}\n\n{row['text']}\n")


class PeakMemory:
    """The peak resident memory of each of some process trees (this process: itself alone, as the cluster's
    processes are its children), sampled in a thread."""

    def __init__(self, roots: dict[str, int]) -> None:
        self.roots, self.peak = roots, dict.fromkeys(roots, 0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _rss(self, pid: int) -> int:
        try:
            root = psutil.Process(pid)
            procs = [root] if pid == os.getpid() else [root, *root.children(recursive=True)]
        except psutil.Error:
            return 0
        total = 0
        for proc in procs:
            try:
                total += proc.memory_info().rss
            except psutil.Error:
                pass
        return total

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            for name, pid in self.roots.items():
                self.peak[name] = max(self.peak[name], self._rss(pid))

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def run(folder: str, lake_path: str, engine: str, roots: dict[str, int]) -> tuple[float, int, dict[str, int]]:
    lake = Lake(lake_path)
    lake.register(Source("bench", "docs", folder))
    roots = {"driver": os.getpid(), **roots}
    with PeakMemory(roots) as memory:
        t = time.perf_counter()
        summary = ingest(lake, Settings(lake=lake.uri, engine=engine))
        wall = time.perf_counter() - t
    assert summary.ok, summary.to_dict()
    return wall, summary.sources[0].chunks_added, memory.peak


def ray_run(folder: str, tmp: str, workers: int) -> tuple[float, int, dict[str, int], float]:
    import ray
    from ray.cluster_utils import Cluster

    from kbflow.pipeline.engines import ray_engine

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    nodes = [cluster.add_node(num_cpus=1) for _ in range(workers)]
    cluster.wait_for_nodes()
    os.environ["RAY_ADDRESS"] = cluster.address
    try:
        roots = {f"node{i + 1}": n.all_processes["raylet"][0].process.pid for i, n in enumerate(nodes)}
        roots["head"] = cluster.head_node.all_processes["raylet"][0].process.pid
        wall, chunks, peak = run(folder, os.path.join(tmp, f"lake-ray{workers}"), "ray", roots)
        small = os.path.join(tmp, f"one-{workers}")
        os.makedirs(small)
        with open(os.path.join(small, "one.txt"), "w", encoding="utf-8") as out:
            out.write("One short document.\n")
        fixed = run(small, os.path.join(tmp, f"lake-one-ray{workers}"), "ray", {})[0]
        return wall, chunks, peak, fixed
    finally:
        ray_engine.disconnect()
        ray.shutdown()
        cluster.shutdown()
        os.environ.pop("RAY_ADDRESS", None)


def report(name: str, wall: float, chunks: int, peak: dict[str, int]) -> None:
    nodes = ", ".join(f"{k} {v / GIB:.2f}" for k, v in peak.items())
    print(f"{name:<16} {wall:7.1f} s  {chunks / wall:7.1f} chunks/s  peak GiB: {nodes}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=400, help="abstracts in the corpus")
    parser.add_argument("--workers", default="1,2,4", help="Ray worker nodes per run")
    args = parser.parse_args()
    counts = [int(w) for w in args.workers.split(",")]
    with tempfile.TemporaryDirectory(prefix="kbflow-ray-") as tmp:
        folder = os.path.join(tmp, "corpus")
        write_corpus(folder, args.docs)
        print(f"{args.docs} Cranfield abstracts, {os.cpu_count()} cores; default model and backend")
        wall, chunks, peak = run(folder, os.path.join(tmp, "lake-local"), "local", {})
        report("one process", wall, chunks, peak)
        small = os.path.join(tmp, "one-local")
        os.makedirs(small)
        with open(os.path.join(small, "one.txt"), "w", encoding="utf-8") as out:
            out.write("One short document.\n")
        local_fixed = run(small, os.path.join(tmp, "lake-one-local"), "local", {})[0]
        rates, fixed = {}, []
        for workers in counts:
            wall, chunks, peak, one = ray_run(folder, tmp, workers)
            rates[workers] = chunks / wall
            fixed.append(one)
            report(f"ray, {workers} worker{'s' if workers > 1 else ''}", wall, chunks, peak)
    print()
    print(f"a one-file source: {min(fixed):.1f} s on Ray (cluster up) against {local_fixed:.1f} s in one process")
    if 1 in rates:
        print(f"projection from one worker's {rates[1]:.1f} chunks/s, one worker per added core (embedding bound):")
        print("  " + ", ".join(f"{k} cores {k * rates[1]:.0f} chunks/s" for k in (2, 4, 8, 16, 32)))
    print("this machine has 2 cores: runs past 2 workers share them and cannot be faster")


if __name__ == "__main__":
    main()
