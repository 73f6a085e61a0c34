"""Documentation sites as a person sees the results: right page, each text once, readable citations, honest flag.

    python bench/site_eval.py                      # the Cargo book, the Rust Reference, Rust by Example
    python bench/site_eval.py --sites cargo --model hash:64

Each site of ``bench/sites`` (question sets written by hand over the mdBook
sites rustup installs beside the compiler; the Rust Programming Language book
beside them is held out: no set, nothing tuned on it) is ingested into one lake
as two sources: as kbflow loads a site by default, and with ``--all-pages``
(every page, as kbflow loaded sites before it honored the site's
conventions). Every question of the set and the 30 off-topic questions of
``bench/sites/negatives.jsonl`` are searched (``k=5``) twice:

- ``before``: the all-pages source, each copy of a text shown
  (``distinct=False``), the citation as kbflow printed it before labels
  (``url#css path chars a-b``), the flag from the built-in calibration of the
  model (one curve for every lake);
- ``after``: kbflow's defaults: the site's conventions honored, each text
  once, the citation label, the flag from the lake's own calibration.

Printed per site and configuration: gold page in the top 3, questions with a
repeated text in the top 5 (and repeated hits), hits on pages the site marks
noindex, citation length (mean and longest of the top 5), and both flag
errors: fired although the right page is in the top 3, silent on an
off-topic question.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import replace

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from kbflow import pipeline  # noqa: E402
from kbflow.config import Settings  # noqa: E402
from kbflow.evaluate.beir import load_beir  # noqa: E402
from kbflow.lake import Lake  # noqa: E402
from kbflow.records import Source  # noqa: E402
from kbflow.retrieve.confidence import CALIBRATIONS  # noqa: E402
from kbflow.retrieve.distinct import text_key  # noqa: E402
from kbflow.retrieve.retriever import Retriever  # noqa: E402
from kbflow.sources.web.conventions import ALL_PAGES_OPTION  # noqa: E402

SITES = os.path.join(HERE, "sites")
NAMES = ("cargo", "reference", "rust-by-example")


def legacy_label(citation) -> str:
    """The citation as kbflow printed it for a web hit before labels (its css path and offsets)."""
    loc = citation.locator
    return f"{loc.url}#{loc.css_path} chars {loc.char_start}-{loc.char_end}"


def _lake(name: str, root: str, settings: Settings) -> tuple[Lake, set[str]]:
    """The site's lake (both sources ingested) and the pages its default source left out as noindex."""
    spec = load_beir(os.path.join(SITES, name))
    path = spec.sources[0]["path"]
    lake = Lake(os.path.join(root, f"site-{name}"))
    known = {s.source_id for s in lake.sources()}
    if name not in known:
        # one folder is one source: the all-pages source reads it through a link
        link = os.path.join(os.path.abspath(root), f"site-{name}.all-pages")
        if not os.path.islink(link):
            os.symlink(path, link)
        lake.register(Source(name, "web", path))
        lake.register(Source(f"{name}-all", "web", link, options={ALL_PAGES_OPTION: True}))
    t0 = time.perf_counter()
    pipeline.ingest(lake, settings, progress=True)
    print(f"{name}: lake ready in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    source = lake.get_source(name)
    noindex = {i["path"] for i in source.skipped if "noindex" in i["reason"]}
    return lake, noindex


def measure(retriever: Retriever, spec, negatives: list[str], noindex: set[str], **how) -> dict[str, float]:
    """The figures of one configuration over one site's questions and the off-topic ones."""
    label = how.pop("label")
    gold_top3 = dup_questions = dup_hits = noindex_hits = fired_on_right = right = 0
    lengths: list[int] = []
    for qid, text in spec.queries.items():
        gold = {doc for doc, grade in spec.qrels[qid].items() if grade > 0}
        hits = retriever.search(text, k=5, **how)
        pages = [h.citation.locator.path for h in hits]
        found = any(p in gold for p in pages[:3])
        gold_top3 += found
        keys = [text_key(h.text) for h in hits]
        repeats = len(keys) - len(set(keys))
        dup_questions += repeats > 0
        dup_hits += repeats
        noindex_hits += sum(p in noindex for p in pages)
        lengths += [len(label(h.citation)) for h in hits]
        right += found
        fired_on_right += found and hits.low_confidence
    silent = sum(not retriever.search(q, k=5, **how).low_confidence for q in negatives)
    n = len(spec.queries)
    return {
        "questions": n,
        "gold_top3": gold_top3 / n,
        "dup_questions": dup_questions,
        "dup_hits": dup_hits,
        "noindex_hits": noindex_hits,
        "label_mean": statistics.mean(lengths) if lengths else 0.0,
        "label_max": max(lengths, default=0),
        "flag_on_right": fired_on_right / max(right, 1),
        "silent_on_offtopic": silent / len(negatives),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sites", default=",".join(NAMES), help="comma-separated sets of bench/sites")
    parser.add_argument("--model", default=None, help="embedding model (default: kbflow's)")
    parser.add_argument("--root", default=os.path.join("data", "eval"), help="where the lakes are kept")
    parser.add_argument("--json", action="store_true", help="print one JSON object per site and configuration")
    args = parser.parse_args()
    with open(os.path.join(SITES, "negatives.jsonl"), encoding="utf-8") as fh:
        negatives = [json.loads(line)["text"] for line in fh if line.strip()]
    for name in args.sites.split(","):
        settings = Settings.coerce(None, **({"model": args.model} if args.model else {}))
        lake, noindex = _lake(name, args.root, settings)
        quiet = replace(settings.retrieval, log_queries=False)
        retriever = Retriever.open(lake.uri, settings=replace(settings, retrieval=quiet))
        spec = load_beir(os.path.join(SITES, name))
        curve = CALIBRATIONS.get(retriever.model_id)
        built_in = replace(quiet, calibration=(curve.intercept, curve.slope) if curve else None)
        before_flag = Retriever.open(lake.uri, settings=replace(settings, retrieval=built_in))
        rows = {
            "before": measure(
                before_flag, spec, negatives, noindex, source_ids=[f"{name}-all"], distinct=False, label=legacy_label
            ),
            "after": measure(retriever, spec, negatives, noindex, source_ids=[name], label=lambda c: c.label()),
        }
        for config, row in rows.items():
            if args.json:
                print(json.dumps({"site": name, "config": config, **row}))
                continue
            print(
                f"{name:16} {config:6} gold page in top 3 {row['gold_top3']:.2f} ({row['questions']} questions) | "
                f"repeated text in top 5: {row['dup_questions']} questions, {row['dup_hits']} hits | "
                f"noindex hits {row['noindex_hits']} | citation {row['label_mean']:.0f} chars mean, "
                f"{row['label_max']} max | flag fired on a right answer {row['flag_on_right']:.2f}, "
                f"silent on off-topic {row['silent_on_offtopic']:.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
