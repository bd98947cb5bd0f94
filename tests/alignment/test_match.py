"""Matching on hand-made similarity matrices (MultiMSD section 3.2) and FAISS/numpy agreement."""

import numpy as np
import pytest

from multimsd.alignment.aligners import check_threshold
from multimsd.alignment.match import article_knn, match_from_knn, match_matrix
from multimsd.errors import MultimsdError

# Rows: complex sentences i, columns: simple sentences j.
# Row argmax: 0->0, 1->0, 2->1.  Column argmax: 0->0 (0.9), 1->2 (0.6), 2->1 (0.7).
SIM = np.array(
    [
        [0.9, 0.2, 0.1],
        [0.8, 0.3, 0.7],
        [0.1, 0.6, 0.5],
    ]
)


def pairs(matches):
    return [(m.i, m.j) for m in matches]


def test_symmetric_is_mutual_argmax():
    # (0,0) and (2,1) are mutual; (1,0) is not (column 0 prefers row 0); (1,2) is not (row 1 prefers col 0).
    got = match_matrix(SIM, "symmetric", 0.5)
    assert pairs(got) == [(0, 0), (2, 1)]
    assert [m.score for m in got] == pytest.approx([0.9, 0.6])


def test_asymmetric_is_union_of_both_directions():
    # Forward: (0,0) (1,0) (2,1); backward: (0,0) (2,1) (1,2).
    got = match_matrix(SIM, "asymmetric", 0.5)
    assert pairs(got) == [(0, 0), (1, 0), (1, 2), (2, 1)]
    assert [m.score for m in got] == pytest.approx([0.9, 0.8, 0.7, 0.6])


@pytest.mark.parametrize(
    ("theta", "expected"),
    [
        (0.5999999, [(0, 0), (2, 1)]),
        (0.6, [(0, 0)]),  # θ is strict, as in the MultiMSD authors' script: Phi == θ is dropped
        (0.8999, [(0, 0)]),
        (0.9, []),
        (-1.0, [(0, 0), (2, 1)]),  # θ never adds pairs the argmax did not choose
    ],
)
def test_threshold_edges_symmetric(theta, expected):
    assert pairs(match_matrix(SIM, "symmetric", theta)) == expected


def test_threshold_edges_asymmetric():
    assert pairs(match_matrix(SIM, "asymmetric", 0.75)) == [(0, 0), (1, 0)]
    assert pairs(match_matrix(SIM, "asymmetric", 0.7)) == [(0, 0), (1, 0)]  # strict: 0.7 is not > 0.7
    assert pairs(match_matrix(SIM, "asymmetric", 0.6999)) == [(0, 0), (1, 0), (1, 2)]


def test_ties_go_to_lower_index():
    sim = np.full((2, 2), 0.5)
    # Every argmax is index 0: forward 0->0, 1->0; backward 0->0, 1->0.
    assert pairs(match_matrix(sim, "symmetric", 0.0)) == [(0, 0)]
    assert pairs(match_matrix(sim, "asymmetric", 0.0)) == [(0, 0), (0, 1), (1, 0)]


def test_margin_hand_computed():
    # k = 2. Neighbourhood means: rows 0.85, 0.55; columns 0.85, 0.55.
    # M00 = 0.9 / 0.85 = 1.0588, M01 = M10 = 0.8 / ((0.85 + 0.55) / 2) = 8/7, M11 = 0.3 / 0.55.
    # Row 0 prefers column 1 by margin although column 0 has the higher cosine: the margin discounts the
    # "hub" pair (0,0) whose sentences are close to everything.
    sim = np.array([[0.9, 0.8], [0.8, 0.3]])
    got = match_matrix(sim, "margin", 1.0, margin_k=2)
    assert pairs(got) == [(0, 1), (1, 0)]
    assert [m.score for m in got] == pytest.approx([8 / 7, 8 / 7])
    assert [m.cosine for m in got] == pytest.approx([0.8, 0.8])
    assert pairs(match_matrix(sim, "margin", 1.15, margin_k=2)) == []
    # Plain cosine matching on the same matrix picks the hub pair only.
    assert pairs(match_matrix(sim, "symmetric", 0.0)) == [(0, 0)]


def test_empty_and_single_row():
    assert match_matrix(np.zeros((0, 3)), "symmetric", 0.0) == []
    assert pairs(match_matrix(np.array([[0.1, 0.7, 0.7]]), "asymmetric", 0.0)) == [(0, 0), (0, 1), (0, 2)]


def _unit(rng, n, d=16):
    x = rng.normal(size=(n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("method", ["symmetric", "asymmetric", "margin"])
def test_faiss_and_numpy_agree(method):
    rng = np.random.default_rng(0)
    for m, n in [(7, 11), (12, 5), (1, 4), (20, 20)]:
        c, s = _unit(rng, m), _unit(rng, n)
        c[3 % m] = s[2 % n]  # an exact duplicate sentence: a cosine of 1
        a = match_from_knn(*article_knn(c, s, 4, use_faiss=True), method, -1.0, 4)
        b = match_from_knn(*article_knn(c, s, 4, use_faiss=False), method, -1.0, 4)
        assert pairs(a) == pairs(b)
        assert [x.score for x in a] == pytest.approx([x.score for x in b], abs=1e-5)
        # and both equal matching on the explicit cosine matrix
        ref = match_matrix(c.astype(np.float64) @ s.T.astype(np.float64), method, -1.0, 4)
        assert pairs(a) == pairs(ref)


def test_faiss_ties_are_ordered_like_numpy():
    s = np.eye(4, dtype=np.float32)
    c = np.repeat(((s[0] + s[1]) / np.sqrt(2))[None], 3, axis=0)  # equally close to simple 0 and 1
    a = match_from_knn(*article_knn(c, s, 4, use_faiss=True), "asymmetric", 0.1)
    assert pairs(a) == [(0, 0), (0, 1), (1, 0), (2, 0)]


@pytest.mark.parametrize(
    ("method", "theta"), [("symmetric", 1.01), ("asymmetric", -1.5), ("margin", -0.1), ("nearest", 0.5)]
)
def test_bad_thresholds_and_methods(method, theta):
    with pytest.raises(MultimsdError):
        check_threshold(method, theta)
