"""An older kbflow's claims store against this one, side by side on one lake: recall speed and history.

The older kbflow is a checkout (``git worktree add /tmp/old <commit>``); each
version runs in its own process with its own code on ``PYTHONPATH``. The
older one fills a store (``--claims`` claims of ``bench/claims.py``'s real
sentences, ``learn_many``), so the lake is one an older kbflow wrote. Then,
in alternating rounds, each version opens it and times ``recall(q, k=5)``
over the same queries (p50 per round; the median of the rounds is printed).
This version must read that store as written: every claim's history is
compared event by event between the two.

Then this version adds ``3 x claims`` relations (``relate_many``) and times,
in the same alternating rounds, a plain recall and a recall ``as_of`` a
moment halfway through the claims' history, so the figures say what the
relations and the time axes cost at that size.

    git worktree add /tmp/old 2bf9880~1
    python bench/claims_versions.py --old /tmp/old --claims 100000 --model hash:384
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
NEW = HERE.parent

#: run inside each version's process: argv = lake, job, model, [args]
JOB = r"""
import json, random, statistics, sys, time
from datetime import datetime, UTC
sys.path.insert(0, sys.argv[5])
import claims as bench
from kbflow import Claims, Evidence
lake, job, model, arg = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
settings = {"model": model}
if job == "fill":
    texts, _ = bench.sentences(int(arg))
    store = Claims.open(lake, settings=settings, actor=("agent", "bench"))
    half = None
    for start in range(0, len(texts), 1000):
        if half is None and start >= len(texts) // 2:
            half = datetime.now(UTC).isoformat()
        store.learn_many({"text": t, "evidence": bench.EVIDENCE} for t in texts[start:start + 1000])
    print(json.dumps({"half": half}))
elif job == "relate":
    store = Claims.open(lake, settings=settings, actor=("agent", "bench"))
    print(json.dumps({"per_s": bench.relate(store, int(arg))}))
elif job == "history":
    store = Claims.open(lake, settings=settings)
    ids = sorted(c.claim_id for c in store.list(statuses=None))[:: max(1, len(store) // 200)]
    print(json.dumps({cid: [e.to_dict() for e in store.history(cid)] for cid in ids}, default=str))
else:
    store = Claims.open(lake, settings=settings, actor=("agent", "bench"))
    qs = bench.queries(200)
    kw = {"as_of": arg} if job == "as_of" else {}
    store.recall("warm up", k=5, **kw)
    times = []
    for q in qs:
        t = time.perf_counter()
        store.recall(q, k=5, **kw)
        times.append(time.perf_counter() - t)
    print(json.dumps({"p50_ms": 1000 * statistics.median(times)}))
"""


def run(code: Path, lake: str, job: str, model: str, arg: str = "") -> dict:
    env = {**os.environ, "PYTHONPATH": str(code)}
    out = subprocess.run(
        [sys.executable, "-c", JOB, lake, job, model, arg, str(code / "bench")],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode:
        raise SystemExit(f"{job} with {code} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def rounds(jobs: list[tuple[str, Path, str, str]], lake: str, model: str, count: int) -> dict[str, float]:
    seen: dict[str, list[float]] = {name: [] for name, *_ in jobs}
    for i in range(count):
        for name, code, job, arg in jobs[i % len(jobs) :] + jobs[: i % len(jobs)]:
            seen[name].append(run(code, lake, job, model, arg)["p50_ms"])
    return {name: statistics.median(values) for name, values in seen.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="a checkout of the older kbflow")
    parser.add_argument("--claims", type=int, default=100_000)
    parser.add_argument("--model", default="hash:384")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kbflow-claims-versions-") as tmp:
        lake = str(Path(tmp) / "lake")
        half = run(args.old, lake, "fill", args.model, str(args.claims))["half"]
        print(f"{args.claims:,} claims written by the older kbflow ({args.old})")
        old_history, new_history = (run(code, lake, "history", args.model) for code in (args.old, NEW))
        same = sum(old_history[cid] == new_history.get(cid) for cid in old_history)
        print(f"history of {len(old_history)} sampled claims read the same by this version: {same}/{len(old_history)}")
        before = rounds([("older", args.old, "plain", ""), ("this", NEW, "plain", "")], lake, args.model, args.rounds)
        rate = run(NEW, lake, "relate", args.model, str(3 * args.claims))["per_s"]
        print(f"{3 * args.claims:,} relations added by this version at {rate:.0f}/s")
        after = rounds([("plain", NEW, "plain", ""), ("as_of", NEW, "as_of", half)], lake, args.model, args.rounds)
    print()
    print(f"| recall p50, median of {args.rounds} rounds | ms |")
    print("| --- | --- |")
    print(f"| older kbflow, its own store | {before['older']:.1f} |")
    print(f"| this kbflow, the same store | {before['this']:.1f} ({before['this'] / before['older']:.2f}x) |")
    print(
        f"| this kbflow, with {3 * args.claims:,} relations | {after['plain']:.1f} "
        f"({after['plain'] / before['older']:.2f}x the older) |"
    )
    print(f"| this kbflow, as_of halfway | {after['as_of']:.1f} ({after['as_of'] / after['plain']:.2f}x plain) |")


if __name__ == "__main__":
    main()
