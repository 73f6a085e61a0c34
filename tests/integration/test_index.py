"""kbflow.index.search: how the vector index is cut into segments (pure), and the malloc arena cap."""

from __future__ import annotations

import pytest
from conftest import SAMPLES

from kbflow.index.search import plan_vector_segments
from kbflow.lake import malloc


def test_first_build_groups_fragments_in_order_up_to_the_group_size():
    frags = [(0, 40), (1, 40), (2, 40), (3, 100), (4, 10)]
    assert plan_vector_segments(frags, [], 100) == [[0, 1], [2], [3], [4]]


def test_a_fragment_larger_than_a_group_is_a_segment_alone():
    assert plan_vector_segments([(0, 500), (1, 5)], [], 100) == [[0], [1]]


def test_nothing_to_build_when_every_fragment_is_covered():
    assert plan_vector_segments([(0, 40), (1, 40)], [{0}, {1}], 100) == []
    assert plan_vector_segments([], [], 100) == []


def test_new_fragments_absorb_the_newest_segment_while_it_has_room():
    # the newest segment (fragments 2, 3: 50 live rows) is rebuilt with the new fragment 5
    frags = [(0, 100), (2, 30), (3, 20), (5, 30)]
    assert plan_vector_segments(frags, [{2, 3}, {0}], 100) == [[2, 3, 5]]


def test_a_full_newest_segment_is_left_alone():
    frags = [(0, 100), (2, 90), (5, 30)]
    assert plan_vector_segments(frags, [{0}, {2}], 100) == [[5]]


def test_a_replaced_segment_keeps_only_its_fragments_that_still_exist():
    # fragment 3 was deleted entirely: the replacement covers 2 and the new ones
    frags = [(0, 100), (2, 30), (6, 30), (7, 60)]
    assert plan_vector_segments(frags, [{0}, {2, 3}], 100) == [[2, 6], [7]]


def test_malloc_arena_cap_is_set_once_and_respects_the_environment(monkeypatch):
    monkeypatch.setattr(malloc, "_done", None)
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert malloc.limit_malloc_arenas() is False  # glibc already honours the variable
    monkeypatch.delenv("MALLOC_ARENA_MAX")
    assert malloc.limit_malloc_arenas() is False  # decided once per process


@pytest.mark.skipif(not malloc.sys.platform.startswith("linux"), reason="glibc only")
def test_malloc_arena_cap_on_glibc(monkeypatch):
    monkeypatch.setattr(malloc, "_done", None)
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    expected = malloc.platform.libc_ver()[0] == "glibc"
    assert malloc.limit_malloc_arenas() is expected


def test_steps_hand_freed_memory_back_when_they_return_or_fail(monkeypatch):
    calls = []
    monkeypatch.setattr(malloc, "release_memory", lambda: calls.append(1))

    @malloc.releases_memory
    def step(x):
        if x is None:
            raise ValueError("bad input")
        return x * 2

    assert step(2) == 4 and len(calls) == 1
    with pytest.raises(ValueError, match="bad input"):
        step(None)
    assert len(calls) == 2
    assert step.__name__ == "step"


@pytest.mark.skipif(not malloc.sys.platform.startswith("linux"), reason="reads /proc")
def test_release_memory_hands_freed_arrow_buffers_back():
    import pyarrow as pa

    def rss_mib() -> int:
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) >> 10 for line in fh if line.startswith("VmRSS"))

    arrays = [pa.array(range(i * 100_000, (i + 1) * 100_000)) for i in range(200)]  # ~160 MB of small buffers
    del arrays  # freed, but Arrow's pool keeps the pages for reuse
    held = rss_mib()
    malloc.release_memory()
    assert held - rss_mib() > 50


def _passages() -> tuple[list[str], list[str]]:
    """The bundled minieval passages and the paragraphs of the sample docs; the minieval queries plus a few
    written for the docs."""
    import json

    samples = SAMPLES
    lines = (samples / "minieval" / "corpus.jsonl").read_text().splitlines()
    docs = [f"{r['title']}. {r['text']}" for r in map(json.loads, lines)]
    for md in sorted((samples / "docs").glob("*.md")):
        docs += [p.strip() for p in md.read_text().split("\n\n") if len(p.split()) >= 5]
    queries = [json.loads(line)["text"] for line in (samples / "minieval" / "queries.jsonl").read_text().splitlines()]
    queries += ["install the package offline", "how are ranks fused", "citation of a pdf page", "refresh a source"]
    return docs, queries


def test_the_keyword_index_ranks_like_rank_bm25_with_the_same_tokenization(tmp_path):
    """Lance's BM25 (the keyword leg's index, kbflow's tokenizer settings) against ``rank_bm25.BM25Okapi`` at
    Lance's k1 1.2 and b 0.75 over the same tokens. The two differ only in their IDF (Okapi's
    log((N-n+.5)/(n+.5)), floored at a fraction of the mean for common terms, against Lucene's log(1 + ...)),
    so the best hit agrees on nearly every query and the top five nearly match (measured: the best hit
    on all 18 queries that match anything, top-5 overlap 0.989)."""
    import re

    import lancedb
    import numpy as np
    import pyarrow as pa
    import rank_bm25
    import Stemmer
    from bm25s.stopwords import STOPWORDS_EN_PLUS

    from kbflow.index.search import fts_config, index_stopwords
    from kbflow.text.terms import TOKEN_PATTERN

    docs, queries = _passages()
    stops = set(index_stopwords(sorted(STOPWORDS_EN_PLUS)))
    assert {"the", "and", "of"} <= stops and "bridge" not in stops
    stem = Stemmer.Stemmer("english")

    def tokens(text: str) -> list[str]:
        return [stem.stemWord(w) for w in re.findall(TOKEN_PATTERN, text.lower()) if w not in stops]

    table = lancedb.connect(str(tmp_path)).create_table("t", pa.table({"id": list(range(len(docs))), "text": docs}))
    table.create_index("text", config=fts_config())
    ds = table.to_lance()
    reference = rank_bm25.BM25Okapi([tokens(d) for d in docs], k1=1.2, b=0.75)
    same_best, overlap = 0, []
    for q in queries:
        ours = ds.to_table(columns=["id", "_score"], full_text_query=q, limit=5).column("id").to_pylist()
        scores = reference.get_scores(tokens(q))
        theirs = [int(i) for i in np.argsort(-scores, kind="stable")[:5] if scores[i] > 0]
        assert bool(ours) == bool(theirs), q
        if not ours:
            continue
        same_best += ours[0] == theirs[0]
        overlap.append(len(set(ours) & set(theirs)) / max(1, min(5, len(theirs))))
    assert len(overlap) >= 15
    assert same_best >= 0.9 * len(overlap), (same_best, len(overlap))
    assert np.mean(overlap) >= 0.85, overlap
