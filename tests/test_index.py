"""kbflow.index.search: how the vector index is cut into segments (pure), and the malloc arena cap."""

from __future__ import annotations

import pytest

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
