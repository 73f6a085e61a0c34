"""Pseudo-relevance feedback on prose records: when it applies, the moved query, the first hit kept first."""

import numpy as np
import pytest

from kbflow.retrieve.feedback import (
    PROSE_READ,
    PROSE_SAMPLE,
    PROSE_SHARE,
    applies,
    feedback_vector,
    first_kept,
    prose_documents,
    reads_as_prose,
    sample_rows,
)

ABSTRACT = (
    "An experimental study of the boundary layer on a flat plate at supersonic speeds, with heat transfer "
    "measured along the plate and compared with the theory of laminar flow."
)
FUNCTION = 'def to_json(obj, path):\n    with open(path, "w") as fh:\n        json.dump({"k": obj[0]}, fh)\n'
TABLE = "Revenue | 2023 | 2024\n$1,200 | (3.4) | 12.5%\nTotal | 4,567 | 8,910"


def test_prose_reads_as_prose_and_code_tables_and_blanks_do_not():
    assert reads_as_prose(ABSTRACT)
    assert not reads_as_prose(FUNCTION)
    assert not reads_as_prose(TABLE)
    assert not reads_as_prose("")
    assert not reads_as_prose("   \n ")


def test_the_share_is_read_from_the_head_of_a_long_text():
    # a prose head over a code tail: the first characters decide, so a long record costs the same to judge
    assert reads_as_prose(ABSTRACT * 20 + FUNCTION * 200)
    assert not reads_as_prose(FUNCTION * 200 + ABSTRACT * 20)
    assert 0.9 < PROSE_SHARE < 1.0


def test_feedback_applies_only_where_every_first_hit_is_of_a_record_set_of_prose():
    assert applies([True, True, True])
    assert not applies([True, False, True])
    assert not applies([])


def test_a_record_set_reads_as_prose_where_three_in_four_of_its_sampled_records_do():
    sets = [[ABSTRACT] * 3, [FUNCTION] * 3, [ABSTRACT] * 3 + [TABLE], [ABSTRACT, ABSTRACT, FUNCTION]]
    # CoSQA's records are Python functions; a set with code in a third of its records is no set of prose
    assert prose_documents(sets) == [True, False, True, False]
    assert prose_documents([[]]) == [False]


def test_the_sample_spreads_over_each_record_set_and_the_reads_are_bounded():
    spread = [(i * 1000) // PROSE_SAMPLE for i in range(PROSE_SAMPLE)]
    assert sample_rows([[7, 8, 9], list(range(1000))]) == [[7, 8, 9], spread]
    many = sample_rows([list(range(10))] * 1000)
    assert sum(map(len, many)) <= PROSE_READ and all(len(s) >= 1 for s in many)
    assert sample_rows([[]]) == [[]]


def test_the_moved_query_is_the_query_plus_the_weighted_mean_of_the_hits_unit_vectors():
    q = np.array([3.0, 0.0, 0.0])
    hits = np.array([[0.0, 2.0, 0.0], [0.0, 0.0, 5.0]])
    moved = feedback_vector(q, hits, 0.5)
    assert moved.dtype == np.float32
    assert np.allclose(moved, [1.0, 0.25, 0.25])
    assert np.allclose(feedback_vector(q, np.zeros((0, 3)), 0.5), [1.0, 0.0, 0.0])
    # a zero hit vector adds nothing and divides by nothing
    assert np.allclose(feedback_vector(q, np.zeros((1, 3)), 0.5), [1.0, 0.0, 0.0])


def test_the_first_hit_stays_first_and_nothing_after_it_scores_above_it():
    fused = [("a", 0.9), ("b", 0.8), ("c", 0.7)]
    again = [("c", 1.2), ("a", 1.0), ("d", 0.5), ("b", 0.4)]
    out = first_kept(fused, again)
    assert [cid for cid, _ in out] == ["a", "c", "d", "b"]
    assert out[0] == ("a", 0.9)
    assert all(score <= 0.9 for _, score in out[1:])
    assert first_kept([], again) == again


@pytest.mark.parametrize("weight", [0.0, 0.5, 2.0])
def test_a_weight_of_zero_leaves_the_query_and_more_weight_moves_it_further(weight):
    q = np.array([1.0, 0.0])
    moved = feedback_vector(q, np.array([[0.0, 1.0]]), weight)
    assert moved[1] == pytest.approx(weight)


def test_feedback_is_a_setting_checked_swept_and_overridden_per_search():
    from kbflow.config import RetrievalSettings, Settings
    from kbflow.errors import ConfigError, QueryError
    from kbflow.evaluate.configs import config_for, rank_options
    from kbflow.retrieve.request import retrieval_for

    assert RetrievalSettings().feedback == 0.5 and RetrievalSettings().feedback_hits == 3
    with pytest.raises(ConfigError, match="feedback must be a number"):
        RetrievalSettings(feedback=-0.1)
    with pytest.raises(ConfigError, match="feedback_hits must be in 1..20"):
        RetrievalSettings(feedback_hits=0)
    config = config_for(Settings.coerce(None, lake="/tmp/x"), feedback=0.0)
    assert config["feedback"] == 0.0 and rank_options(config, 10)["feedback"] == 0.0
    settings, _ = retrieval_for(RetrievalSettings(), "q", 5, 100, {"feedback": 0})
    assert settings.feedback == 0
    with pytest.raises(QueryError, match="feedback"):
        retrieval_for(RetrievalSettings(), "q", 5, 100, {"feedback": "lots"})
