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
