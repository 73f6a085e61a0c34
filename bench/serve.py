"""kbflow serve under load: served searches/s, refusals, p50 and p99 at 1 to 64 concurrent clients, for several
server settings side by side in one run, and whether the server holds past saturation.

The lake is ``--lake PATH`` (any ingested lake, say the filings' of bench/pdf_ingest.py), or a synthetic one of
``--chunks`` rows (bench/query_latency.py's generator: Zipfian text, random unit vectors; queries are embedded by
the real default model). Each setting runs as ``kbflow serve`` in its own process; the clients are coroutines of
this one (one thread, a minimal HTTP/1.1 reader: 64 of them cost little CPU beside the server's), each a closed
loop over its own keep-alive connection for ``--seconds`` per level. A client told 503 waits the
``Retry-After`` it was given and asks again, as ``kbflow.Client`` does; only answered searches count, and their
latency is their own request's.

Settings (``--settings``): ``unbounded`` (``--max-searches 0``: every request admitted, as before round four),
``default`` (one search per core, twice as many waiting, the rest 503), and ``workers2`` (two processes, the default
bound each). The goal of issue 56: at 32 and 64 clients, throughput at least 90% of the peak, and the served
searches' p99 within 4x the p99 at the peak.

    python bench/serve.py [--lake PATH | --chunks 10000] [--seconds 10] [--settings unbounded default workers2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse

os.environ.setdefault("HF_HUB_OFFLINE", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import httpx  # noqa: E402
from query_latency import build, pct, projection, vocabulary  # noqa: E402

from kbflow.config import DEFAULT_MODEL  # noqa: E402
from kbflow.index.search import sync_search_table  # noqa: E402
from kbflow.lake import Lake  # noqa: E402

LEVELS = (1, 2, 4, 8, 16, 32, 64)
SETTINGS = {
    "unbounded": ["--max-searches", "0"],
    "default": [],
    "workers2": ["--workers", "2"],
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(lake: str, flags: list[str]) -> tuple[subprocess.Popen, str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "kbflow.cli", "--lake", lake, "serve", "--port", str(port), "--no-mcp", "--no-log"]
    server = subprocess.Popen([*command, *flags], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    while True:
        try:
            if httpx.get(f"{url}/v1/health", timeout=2).status_code == 200:
                return server, url
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline or server.poll() is not None:
            server.kill()
            raise SystemExit(f"kbflow serve {' '.join(flags)} did not start")
        time.sleep(0.3)


async def _client(host: str, port: int, queries: list[str], n: int, stop: float, out: dict) -> None:
    """One closed-loop client on its own keep-alive connection: a minimal HTTP/1.1 reader (asyncio streams), so
    that 64 of them in one thread cost this process little and time the server, not the client."""
    rng = random.Random(n)
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while time.monotonic() < stop:
            q = urllib.parse.urlencode({"q": rng.choice(queries), "k": 10})
            t0 = time.perf_counter()
            writer.write(f"GET /v1/search?{q} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
            await writer.drain()
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower()
            length = int(head.split("content-length:")[1].split("\r\n")[0])
            await reader.readexactly(length)
            took = (time.perf_counter() - t0) * 1000
            status = int(head.split()[1])
            if status == 503:
                out["refused"] += 1
                retry = head.split("retry-after:")[1].split("\r\n")[0] if "retry-after:" in head else "1"
                await asyncio.sleep(float(retry))
                continue
            if status != 200:
                raise SystemExit(f"the server answered {status}")
            out["served"].append(took)
    finally:
        writer.close()


def load(url: str, queries: list[str], clients: int, seconds: float) -> dict[str, float]:
    """``clients`` closed-loop clients for ``seconds``: served/s, refused/s, p50 and p99 (ms) of the served."""
    parts = urllib.parse.urlsplit(url)
    out: dict = {"served": [], "refused": 0}

    async def run() -> float:
        stop = time.monotonic() + seconds
        t0 = time.perf_counter()
        await asyncio.gather(*(_client(parts.hostname, parts.port, queries, n, stop, out) for n in range(clients)))
        return time.perf_counter() - t0

    elapsed = asyncio.run(run())
    served = out["served"]
    return {
        "rps": len(served) / elapsed,
        "refused": out["refused"] / elapsed,
        "p50": pct(served, 0.50) if served else float("nan"),
        "p99": pct(served, 0.99) if served else float("nan"),
    }


def verdict(rows: dict[int, dict[str, float]]) -> str:
    peak_level = max(rows, key=lambda c: rows[c]["rps"])
    peak = rows[peak_level]
    parts = [f"peak {peak['rps']:.1f}/s at {peak_level} client(s), p99 {peak['p99']:.0f} ms"]
    ok = True
    for level in (32, 64):
        if level in rows:
            share, ratio = rows[level]["rps"] / peak["rps"], rows[level]["p99"] / peak["p99"]
            ok &= share >= 0.9 and ratio <= 4.0
            parts.append(f"at {level}: {share:.0%} of peak throughput, p99 {ratio:.1f}x the peak's")
    return "; ".join(parts) + ("  -> holds" if ok else "  -> does not hold")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lake", default=None, help="an ingested lake (default: a synthetic one of --chunks rows)")
    ap.add_argument("--chunks", type=int, default=10_000)
    ap.add_argument("--seconds", type=float, default=10.0, help="per level of clients")
    ap.add_argument("--clients", type=int, nargs="+", default=list(LEVELS))
    ap.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    ap.add_argument(
        "--also", nargs="+", default=[], metavar="NAME=FLAGS",
        help="more settings to run, e.g. 'one=--max-searches 1 --queue 4'",
    )  # fmt: skip
    args = ap.parse_args()
    for extra in args.also:
        name, _, flags = extra.partition("=")
        SETTINGS[name] = flags.split()
        args.settings.append(name)

    words, weights = vocab = vocabulary(30_000)
    rng = random.Random(11)
    queries = [" ".join(rng.choices(words, weights, k=rng.randint(2, 8))) for _ in range(500)]
    if args.lake:
        lake = Lake(args.lake, create=False)
    else:
        lake = Lake(os.path.join(tempfile.mkdtemp(prefix="kbflow-servebench-"), "lake"))
        build(lake, args.chunks, vocab, projection())
        sync_search_table(lake, DEFAULT_MODEL)
    rows_in_lake = lake.dataset("search").count_rows()
    print(f"lake {lake.uri}: {rows_in_lake} chunks; {os.cpu_count()} cores; {args.seconds:.0f} s per level")
    results: dict[str, dict[int, dict[str, float]]] = {}
    for name in args.settings:
        server, url = start(lake.uri, SETTINGS[name])
        try:
            load(url, queries, 2, 3.0)  # warm: the model and the vectors of every worker
            print(f"\n{name} ({' '.join(SETTINGS[name]) or 'the defaults'})")
            print(f"{'clients':>8} {'served/s':>9} {'503/s':>7} {'p50 ms':>8} {'p99 ms':>8}")
            results[name] = {}
            for clients in args.clients:
                row = results[name][clients] = load(url, queries, clients, args.seconds)
                print(f"{clients:>8} {row['rps']:>9.1f} {row['refused']:>7.1f} {row['p50']:>8.1f} {row['p99']:>8.1f}")
            print(f"  {verdict(results[name])}")
        finally:
            server.terminate()
            server.wait(30)
    if len(results) > 1:
        best = max(results, key=lambda n: max(r["rps"] for r in results[n].values()))
        print(f"\nhighest peak throughput: {best}")


if __name__ == "__main__":
    main()
