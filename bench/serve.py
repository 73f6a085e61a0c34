"""kbflow serve under load: REST requests/s and latency at 1, 4 and 16 concurrent clients, next to the
in-process Retriever.search on the same queries, and the query log's cost on p50, all in one run.

A synthetic 10k-chunk lake (bench/query_latency.py's generator: Zipfian text, random unit vectors; queries
are embedded by the real default model). The server runs as ``kbflow serve`` in its own process; clients
are threads here, each with its own HTTP connection. Every figure is a median of ``--repeats`` rounds.

    python bench/serve.py [--chunks 10000] [--requests 200] [--repeats 3] [--clients 1 4 16]
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import httpx  # noqa: E402
from query_latency import build, pct, vocabulary  # noqa: E402

from kbflow import Retriever, usage  # noqa: E402
from kbflow.config import DEFAULT_MODEL, Settings  # noqa: E402
from kbflow.index.search import sync_search_table  # noqa: E402
from kbflow.lake import Lake  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def in_process(lake: Lake, queries: list[str], log: bool) -> list[float]:
    settings = Settings.coerce({"lake": lake.uri, "retrieval": {"log_queries": log}})
    r = Retriever.open(lake, settings=settings)
    lat = []
    for q in queries:
        t0 = time.perf_counter()
        r.search(q, k=10)
        lat.append((time.perf_counter() - t0) * 1000)
    usage.flush()
    return lat


def over_rest(url: str, queries: list[str], clients: int) -> tuple[float, list[float]]:
    """requests/s and per-request latencies (ms) with ``clients`` threads sharing the queries."""
    lat: list[float] = []
    lock = threading.Lock()
    chunks = [queries[i::clients] for i in range(clients)]

    def run(mine: list[str]) -> None:
        with httpx.Client(base_url=url, timeout=60) as http:
            for q in mine:
                t0 = time.perf_counter()
                response = http.get("/v1/search", params={"q": q, "k": 10})
                took = (time.perf_counter() - t0) * 1000
                response.raise_for_status()
                with lock:
                    lat.append(took)

    threads = [threading.Thread(target=run, args=(c,)) for c in chunks]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(queries) / (time.perf_counter() - t0), lat


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=10_000)
    ap.add_argument("--requests", type=int, default=200, help="searches per measurement")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16])
    args = ap.parse_args()

    words, weights = vocab = vocabulary(30_000)
    rng = random.Random(11)
    queries = [" ".join(rng.choices(words, weights, k=rng.randint(2, 8))) for _ in range(args.requests)]
    lake = Lake(os.path.join(tempfile.mkdtemp(prefix="kbflow-servebench-"), "lake"))
    build(lake, args.chunks, vocab)
    sync_search_table(lake, DEFAULT_MODEL)
    print(f"{args.chunks} synthetic chunks; {args.requests} queries per measurement; median of {args.repeats}")

    warm = Retriever.open(lake)
    warm.search("warm up", k=10)
    rounds: dict[str, list[float]] = {"log": [], "nolog": []}
    for _ in range(args.repeats):  # side by side, alternating
        for name, log in (("log", True), ("nolog", False)):
            rounds[name].append(statistics.median(in_process(lake, queries, log)))
    log_p50, nolog_p50 = statistics.median(rounds["log"]), statistics.median(rounds["nolog"])
    print(f"in-process Retriever.search  p50 {log_p50:6.2f} ms with the query log, {nolog_p50:6.2f} ms without")
    print(f"  query log overhead on p50: {log_p50 - nolog_p50:+.2f} ms")

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "kbflow.cli", "--lake", lake.uri, "serve", "--port", str(port), "--no-mcp"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit("kbflow serve did not start")
            time.sleep(0.3)
        over_rest(url, queries[:20], 1)  # warm the server's model and vectors
        single = None
        for clients in args.clients:
            rps, p50, p95 = [], [], []
            for _ in range(args.repeats):
                r, lat = over_rest(url, queries, clients)
                rps.append(r)
                p50.append(statistics.median(lat))
                p95.append(pct(lat, 0.95))
            print(
                f"REST, {clients:>2} client(s): {statistics.median(rps):6.1f} req/s  "
                f"p50 {statistics.median(p50):6.1f} ms  p95 {statistics.median(p95):6.1f} ms"
            )
            if clients == 1:
                single = statistics.median(p50)
        if single is not None:
            print(f"  REST p50 at 1 client over in-process p50: {single / log_p50:.2f}x (+{single - log_p50:.1f} ms)")
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
