"""Parity of aligner=symmetric / asymmetric with the MultiMSD authors' released script.

EhimeNLP/MultiMSDcorpus ``scripts/alignment/auto_alignment.py`` does, per article pair, in words:

* cosine matrix of professional (rows) x consumer (columns) LaBSE embeddings;
* for every professional sentence, the *first* column holding its row maximum (Python ``max`` over
  ``enumerate``); the pair is kept if that cosine is strictly greater than the threshold;
* the same for every consumer sentence over its column;
* pattern1 = the kept professional->consumer pairs, in professional order, that also occur among the kept
  consumer->professional pairs; pattern2 = the set union of both lists.
* pairs are compared as text lines ("professional<TAB>consumer"), not as indices.

``authors_patterns`` below restates that rule; our aligners must give the same pairs on the same cosines.
"""

from __future__ import annotations

import numpy as np
import pytest

from multimsd.alignment.aligners import get_aligner
from multimsd.alignment.aligners.embedding import EmbeddingAlignerConfig
from multimsd.alignment.filters import filter_pairs
from multimsd.alignment.goldscore import sweep
from multimsd.alignment.match import Match, match_matrix
from multimsd.config import AlignConfig, FilterConfig
from multimsd.gold import GoldDoc


def first_argmax(values: list[float]) -> int:
    best = 0
    for k, v in enumerate(values):
        if v > values[best]:  # only a strictly larger value moves the maximum: the first one wins a tie
            best = k
    return best


def authors_patterns(sim: np.ndarray, threshold: float) -> tuple[list[tuple[int, int]], set[tuple[int, int]]]:
    """(pattern1 in professional order, pattern2 as a set) of index pairs, by the authors' rule."""
    rows = [list(map(float, r)) for r in sim]
    cols = [list(map(float, c)) for c in sim.T]
    forward = []
    for i, row in enumerate(rows):
        j = first_argmax(row)
        if row[j] > threshold:
            forward.append((i, j))
    backward = []
    for j, col in enumerate(cols):
        i = first_argmax(col)
        if col[i] > threshold:
            backward.append((i, j))
    return [p for p in forward if p in backward], set(forward) | set(backward)


# Rows: complex (professional), columns: simple (consumer). Dyadic values, exact in float32 and float64.
# Row ties: row 0 (cols 0, 1), row 2 (cols 2, 3). Column tie: col 3 (rows 2, 3). Values exactly at a θ of the
# test grid: 0.5 (row 1), 0.5625 (3, 4), 0.625 (the maxima).
SIM = np.array(
    [
        [0.625, 0.625, 0.25, 0.0, 0.0],
        [0.5, 0.25, 0.0, 0.0, 0.0],
        [0.0, 0.25, 0.625, 0.625, 0.0],
        [0.0, 0.0, 0.5, 0.625, 0.5625],
    ]
)
THETAS = [-1.0, 0.0, 0.25, 0.4999, 0.5, 0.5625, 0.6, 0.625, 0.7]


def embeddings(sim: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vectors whose complex x simple inner products are exactly ``sim``.

    Simple sentence j is the unit vector e_j; complex sentence i is row i of ``sim`` plus a private dimension
    that makes it unit length (it meets no simple vector, so it changes no inner product).
    """
    m, n = sim.shape
    s_vecs = np.zeros((n, n + m), dtype=np.float32)
    s_vecs[:, :n] = np.eye(n)
    c_vecs = np.zeros((m, n + m), dtype=np.float32)
    c_vecs[:, :n] = sim
    c_vecs[np.arange(m), n + np.arange(m)] = np.sqrt(1.0 - (sim**2).sum(axis=1))
    return c_vecs, s_vecs


def ours(method: str, theta: float, use_faiss: bool) -> list[Match]:
    cfg = AlignConfig(aligner=EmbeddingAlignerConfig(method=method, use_faiss=use_faiss))
    aligner = get_aligner(method)
    c_vecs, s_vecs = embeddings(SIM)
    return [m for m in aligner.score_article(c_vecs, s_vecs, "en", cfg) if aligner.keeps(m.score, theta)]


def test_hand_computed_patterns():
    # Forward (first max): 0->0, 1->0 (0.5), 2->2, 3->3. Backward: 0->0, 1->0, 2->2, 3->2 (tie), 4->3 (0.5625).
    p1, p2 = authors_patterns(SIM, 0.5)
    assert p1 == [(0, 0), (2, 2)]  # (3, 3) is not mutual: column 3's first maximum is row 2
    # (1, 0) sits exactly at θ = 0.5 and is dropped: the threshold is strict.
    assert p2 == {(0, 0), (0, 1), (2, 2), (2, 3), (3, 3), (3, 4)}
    # A simple sentence may serve two complex ones in pattern2 (column 3 in (2, 3) and (3, 3)), and a complex
    # one two simple ones ((0, 0), (0, 1)).


@pytest.mark.parametrize("use_faiss", [False, True])
@pytest.mark.parametrize("theta", THETAS)
def test_symmetric_is_pattern1_asymmetric_is_pattern2(theta, use_faiss):
    p1, p2 = authors_patterns(SIM, theta)
    sym = [(m.i, m.j) for m in ours("symmetric", theta, use_faiss)]
    asym = [(m.i, m.j) for m in ours("asymmetric", theta, use_faiss)]
    assert sym == p1  # same pairs, same order (professional order)
    assert len(asym) == len(set(asym)) and set(asym) == p2
    # The matrix path (match_matrix) applies θ inside the rule; it must agree too.
    assert [(m.i, m.j) for m in match_matrix(SIM, "symmetric", theta)] == p1
    assert {(m.i, m.j) for m in match_matrix(SIM, "asymmetric", theta)} == p2


def test_threshold_is_strict_everywhere():
    # Exactly at θ: the authors drop the pair; align mode, match_matrix and the gold sweep all agree.
    assert (1, 0) not in authors_patterns(SIM, 0.5)[1]
    assert (1, 0) in authors_patterns(SIM, 0.4999)[1]
    assert get_aligner("symmetric").strict_threshold and get_aligner("asymmetric").strict_threshold
    assert not get_aligner("margin").keeps(0.99, 1.0) and get_aligner("margin").keeps(1.0, 1.0)  # margin: >=
    doc = GoldDoc("a", "en", ["c0"], ["s0"], {((0,), (0,))})
    cands = {("a", "en"): [Match(0, 0, 0.5, 0.5)]}
    assert sweep(cands, [doc], [0.5], strict=True)[0.5].predicted == 0
    assert sweep(cands, [doc], [0.5], strict=False)[0.5].predicted == 1


def test_ties_first_maximum_not_last():
    # With the last maximum instead, row 0 would pick column 1 and (3, 3) would become mutual.
    p1, _ = authors_patterns(SIM, 0.0)
    assert (0, 1) not in p1 and (3, 3) not in p1
    assert [(m.i, m.j) for m in match_matrix(SIM, "symmetric", 0.0)] == p1


def test_repeated_sentence_text_vs_index_difference():
    """Kept on purpose: the authors compare text lines, we compare indices; the duplicate filter evens it out."""
    complex_sents = ["Alpha is a long sentence.", "Beta is another one.", "Alpha is a long sentence."]
    simple_sents = ["Alpha, simply.", "Beta, simply."]
    # Rows 0 and 2 are the same sentence, hence the same embedding and the same cosines.
    sim = np.array([[0.75, 0.25], [0.25, 0.625], [0.75, 0.25]])

    def lines(pairs):
        return [f"{complex_sents[i]}\t{simple_sents[j]}" for i, j in pairs]

    # The authors' script on text: forward lines A-a, B-b, A-a; backward A-a (column 0's first max, row 0), B-b.
    forward, backward = lines([(0, 0), (1, 1), (2, 0)]), lines([(0, 0), (1, 1)])
    pattern1 = [p for p in forward if p in backward]
    pattern2 = set(forward) | set(backward)
    assert pattern1 == [lines([(0, 0)])[0], lines([(1, 1)])[0], lines([(0, 0)])[0]]  # A-a written twice
    assert authors_patterns(sim, 0.5)[0] == [(0, 0), (1, 1)]  # by index (2, 0) is not mutual

    sym = [(m.i, m.j) for m in match_matrix(sim, "symmetric", 0.5)]
    asym = [(m.i, m.j) for m in match_matrix(sim, "asymmetric", 0.5)]
    assert sym == [(0, 0), (1, 1)]  # one row per index pair: A-a once
    assert asym == [(0, 0), (1, 1), (2, 0)]  # two index pairs with the same text

    def filtered(pairs):
        rows = [{"lang": "en", "complex": complex_sents[i], "simple": simple_sents[j]} for i, j in pairs]
        kept, _ = filter_pairs(rows, FilterConfig())
        return [f"{r['complex']}\t{r['simple']}" for r in kept]

    # After the stage's duplicate filter the text pairs are the same sets as the authors'.
    assert set(filtered(sym)) == set(pattern1) and len(filtered(sym)) == 2
    assert set(filtered(asym)) == pattern2 and len(filtered(asym)) == 2
