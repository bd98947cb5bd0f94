"""aligner=nm: block spans, greedy block selection, n:m gold scoring — on vectors whose dot products are by hand."""

from __future__ import annotations

import numpy as np
import pytest

from multimsd.alignment.aligners import get_aligner
from multimsd.alignment.aligners.nm import (
    NmConfig,
    align_blocks,
    block_text,
    check_nm_config,
    mean_blocks,
    spans,
)
from multimsd.alignment.goldscore import score_doc, subsets, sweep
from multimsd.alignment.match import Match
from multimsd.errors import MultimsdError
from multimsd.gold import GoldDoc


def test_spans_single_sentences_first():
    assert spans(3, 2) == [(0, 1), (1, 1), (2, 1), (0, 2), (1, 2)]
    assert spans(2, 4) == [(0, 1), (1, 1), (0, 2)]  # no block longer than the side
    assert block_text(["A.", "B.", "C."], (1, 2)) == "B. C."
    assert block_text(["A.", "B."], (0, 1)) == "A."


def test_mean_blocks_is_normalised_mean():
    vecs = np.array([[1.0, 0.0], [0.0, 1.0]])
    out = mean_blocks(vecs, spans(2, 2))
    assert out == pytest.approx(np.array([[1.0, 0.0], [0.0, 1.0], [2**-0.5, 2**-0.5]]))


# One complex sentence c0; simple sentences s0, s1 and the block "s0 s1". Dot products with c0:
# s0 0.6, s1 0.5, s0+s1 0.75.
C_BLOCKS = spans(1, 1)
C_VECS = np.array([[1.0, 0.0, 0.0]])
S_BLOCKS = spans(2, 2)  # (0,1), (1,1), (0,2)
S_VECS = np.array([[0.6, 0.8, 0.0], [0.5, 0.0, 0.5], [0.75, 0.0, 0.0]])


def test_greedy_split_wins_when_it_beats_the_penalty():
    # Penalty 0.1 per extra sentence: 1:2 scores 0.75 - 0.1 = 0.65 > 0.6 (the best 1:1).
    [m] = align_blocks(C_BLOCKS, C_VECS, S_BLOCKS, S_VECS, 0.1, search="greedy")
    assert (m.i, m.j, m.n_c, m.n_s) == (0, 0, 1, 2)
    assert m.complex_members == (0,) and m.simple_members == (0, 1)
    assert m.score == pytest.approx(0.75) and m.cosine == pytest.approx(0.75)  # θ sees the plain cosine


def test_greedy_one_to_one_wins_under_a_larger_penalty():
    # Penalty 0.2: 0.75 - 0.2 = 0.55 < 0.6, so (c0, s0); without absorb s1 stays unaligned (c0 is taken).
    [m] = align_blocks(C_BLOCKS, C_VECS, S_BLOCKS, S_VECS, 0.2, absorb=False, search="greedy")
    assert (m.i, m.j, m.n_c, m.n_s) == (0, 0, 1, 1) and m.score == pytest.approx(0.6)


@pytest.mark.parametrize(
    ("floor", "penalty", "expected"),
    [
        # Path gains: c0-[s0 s1] 0.75 - floor - penalty; c0-s0 0.6 - floor (then skip s1); c0-s1 0.5 - floor.
        (0.5, 0.0, [(0, 0, 1, 2)]),  # 0.25 > 0.1 > 0.0
        (0.7, 0.0, [(0, 0, 1, 2)]),  # 0.05 > 0, the 1:1 paths lose
        (0.8, 0.0, []),  # every pair below the floor: skipping everything (0) is best
        (0.5, 0.2, [(0, 0, 1, 1)]),  # 0.25 - 0.2 = 0.05 < 0.1
    ],
)
def test_dp_hand_computed(floor, penalty, expected):
    got = align_blocks(C_BLOCKS, C_VECS, S_BLOCKS, S_VECS, penalty, search="dp", floor=floor)
    assert [(m.i, m.j, m.n_c, m.n_s) for m in got] == expected
    assert all(m.score == m.cosine for m in got)  # θ filters the plain block cosine


def test_margin_score_hand_computed():
    # Background of c0: mean cosine with the article's simple sentences (0.6 + 0.5) / 2 = 0.55; background of
    # each simple block: its cosine with the one complex sentence. margin = cos - (0.55 + cos) / 2.
    got = align_blocks(C_BLOCKS, C_VECS, S_BLOCKS, S_VECS, 0.02, search="dp", floor=0.0, score="margin")
    assert [(m.i, m.j, m.n_c, m.n_s) for m in got] == [(0, 0, 1, 2)]  # 0.1 - 0.02 beats s0 alone (0.025)
    assert got[0].score == pytest.approx(0.75 - (0.55 + 0.75) / 2)  # θ filters the margin ...
    assert got[0].cosine == pytest.approx(0.75)  # ... the cosine is kept beside it
    # Margins below the floor: nothing is worth taking.
    assert (
        align_blocks(C_BLOCKS, C_VECS, S_BLOCKS, S_VECS, 0.0, search="dp", floor=0.11, score="margin") == []
    )


@pytest.mark.parametrize(
    ("skip", "expected"), [(0.0, [(0, 0, 1, 1)]), (0.04, [(0, 0, 1, 1)]), (0.1, [(0, 0, 1, 2)])]
)
def test_skip_simple_cost_hand_computed(skip, expected):
    # floor 0.5, penalty 0.2: c0-[s0 s1] gains 0.75 - 0.5 - 0.2 = 0.05; c0-s0 gains 0.1 and leaves s1 out,
    # which costs `skip`: 0.1 - skip beats 0.05 only while skip < 0.05.
    got = align_blocks(C_BLOCKS, C_VECS, S_BLOCKS, S_VECS, 0.2, search="dp", floor=0.5, skip_simple=skip)
    assert [(m.i, m.j, m.n_c, m.n_s) for m in got] == expected


def test_every_sentence_used_once_and_reordering_allowed():
    # Two complex sentences aligned crosswise (c0-s1, c1-s0); the 2-blocks are orthogonal to everything.
    c_blocks, s_blocks = spans(2, 2), spans(2, 2)
    c = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]])
    s = np.array([[0.1, 0.9, 0.0, 0.0], [0.8, 0.2, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    got = align_blocks(c_blocks, c, s_blocks, s, 0.0, search="greedy")
    assert [(m.i, m.j, m.n_c, m.n_s) for m in got] == [(0, 1, 1, 1), (1, 0, 1, 1)]
    assert [m.score for m in got] == pytest.approx([0.8, 0.9])
    # The dynamic programme is monotone: of the two crossing pairs it keeps the better (gain 0.9 - 0.5 against
    # 0.8 - 0.5); every block is orthogonal to the other side.
    got = align_blocks(c_blocks, c, s_blocks, s, 0.0, search="dp", floor=0.5)
    assert [(m.i, m.j, m.n_c, m.n_s) for m in got] == [(1, 0, 1, 1)]


def test_greedy_absorbs_a_free_neighbour_nearest_to_the_block():
    # c0 is nearest to s0 (0.9); s1's nearest complex sentence is c0 too (0.3), but the block "s0 s1" (0.85)
    # does not beat s0 alone. absorb=True grows (c0, s0) into (c0, [s0 s1]); absorb=False leaves s1 free.
    s = np.array([[0.9, 0.0, 0.0], [0.3, 0.0, 0.0], [0.85, 0.0, 0.0]])
    [m] = align_blocks(C_BLOCKS, C_VECS, S_BLOCKS, s, 0.0, absorb=True, search="greedy")
    assert (m.n_c, m.n_s, m.score) == (1, 2, pytest.approx(0.85))
    [m] = align_blocks(C_BLOCKS, C_VECS, S_BLOCKS, s, 0.0, absorb=False, search="greedy")
    assert (m.n_c, m.n_s, m.score) == (1, 1, pytest.approx(0.9))


def test_nm_gold_scoring_exact_member_sets():
    gold = {((0,), (0, 1)), ((1,), (2,)), ((2, 3), (3,))}
    pred = [Match(0, 0, 0.9, 0.9, 1, 2), Match(1, 2, 0.8, 0.8), Match(2, 3, 0.7, 0.7, 1, 1)]
    # (0, [0,1]) and (1, 2) are gold; (2, 3) is only part of the 2:1 gold item ([2,3], 3): wrong.
    prf = score_doc(pred, gold)
    assert (prf.correct, prf.predicted, prf.gold) == (2, 3, 3)
    doc = GoldDoc("a", "en", ["c0", "c1", "c2", "c3"], ["s0", "s1", "s2", "s3"], gold)
    cands = {("a", "en"): pred}
    sub = subsets(cands, [doc], 0.75)
    # θ = 0.75 drops (2, 3). 1:1: predicted (1,2) of gold (1,2) -> 1/1/1. n:m: (0,[0,1]) of 2 n:m gold -> 1/1/2.
    assert (sub["1:1"].correct, sub["1:1"].predicted, sub["1:1"].gold) == (1, 1, 1)
    assert (sub["n:m"].correct, sub["n:m"].predicted, sub["n:m"].gold) == (1, 1, 2)
    assert sweep(cands, [doc], [0.75])[0.75].f1 == pytest.approx(2 * 1.0 * (2 / 3) / (1 + 2 / 3))


def test_registered_with_its_own_grid_and_checks():
    from multimsd.config import AlignConfig

    nm = get_aligner("nm")
    assert nm.emits_n_to_m and nm.needs == "sentences" and not nm.strict_threshold
    # its own θ grid: block margins -0.05 .. 0.20, then block cosines 0.70 .. 0.98, whatever aligner= says
    grid = nm.thresholds(AlignConfig())
    assert len(grid) == 26 + 29 and grid[:3] == [-0.05, -0.04, -0.03] and grid[25] == 0.2
    assert grid[26:28] == [0.7, 0.71] and grid[-1] == 0.98
    assert nm.default_options().threshold == 0.01 and nm.default_options().nm.max_simple == 6
    with pytest.raises(MultimsdError, match="max_simple"):
        check_nm_config(NmConfig(max_simple=0))
    with pytest.raises(MultimsdError, match="search"):
        check_nm_config(NmConfig(search="beam"))
    with pytest.raises(MultimsdError, match="block_embedding"):
        check_nm_config(NmConfig(block_embedding="sum"))
    with pytest.raises(MultimsdError, match="score"):
        check_nm_config(NmConfig(score="ratio"))
    with pytest.raises(MultimsdError, match="skip_simple"):
        check_nm_config(NmConfig(skip_simple=-0.1))
    with pytest.raises(MultimsdError, match="range of a block score"):
        nm.check_threshold(2.5)
    nm.check_threshold(-0.05)  # a margin may be negative


@pytest.mark.parametrize(
    ("gold_item", "expected"), [(((0,), (0,)), (0.5, 0.2, 0.0)), (((0,), (0, 1)), (0.5, 0.0, 0.0))]
)
def test_gold_mode_tunes_floor_and_penalty_on_the_validation_gold(monkeypatch, gold_item, expected):
    from multimsd.alignment.aligners import nm
    from multimsd.config import AlignConfig

    # The one-complex / two-simple case above: penalty 0 aligns c0 with "s0 s1", penalty 0.2 with s0 alone.
    monkeypatch.setattr(
        nm, "block_vectors", lambda docs, cfg, *stats: [(C_BLOCKS, C_VECS, S_BLOCKS, S_VECS)] * len(docs)
    )
    cfg = AlignConfig(aligner=nm.NmAlignerConfig())
    cfg.aligner.nm.score = "cosine"
    cfg.aligner.nm.floor_grid = [0.5]
    cfg.aligner.nm.penalty_grid = [0.0, 0.2]
    cfg.aligner.nm.skip_simple_grid = [0.0]
    cfg.aligner.threshold_grid = [0.0]
    doc = GoldDoc("a", "en", ["c0"], ["s0", "s1"], {gold_item})
    assert nm.tune_on_gold([doc], cfg) == expected
    [m] = get_aligner("nm").candidates([(doc.complex, doc.simple)], ["en"], cfg, gold_train=[doc])[0:1][0]
    assert ((m.i,), tuple(range(m.j, m.j + m.n_s))) == gold_item  # candidates use the tuned setting


def _brute_force_best(sims, c_blocks, s_blocks, m, n, penalty, floor, skip_simple=0.0):
    """The best total of every monotone path (skips and block pairs), enumerated exhaustively."""
    c_row = {span: r for r, span in enumerate(c_blocks)}
    s_row = {span: r for r, span in enumerate(s_blocks)}

    def best(i, j):
        if i == m and j == n:
            return 0.0
        out = -np.inf
        if i < m:
            out = max(out, best(i + 1, j))
        if j < n:
            out = max(out, best(i, j + 1) - skip_simple)
        for (a, na), r in c_row.items():
            for (b, nb), q in s_row.items():
                if a == i and b == j:
                    gain = sims[r, q] - floor - penalty * (na + nb - 2)
                    out = max(out, gain + best(i + na, j + nb))
        return out

    return best(0, 0)


@pytest.mark.parametrize("seed", range(40))
def test_dp_is_optimal_against_exhaustive_search(seed):
    # Random block cosines on tiny article pairs (including a side of one sentence and rounded scores, so ties
    # happen): the programme's path must be a valid monotone path whose total is the exhaustive optimum.
    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(1, 5)), int(rng.integers(1, 6))
    c_blocks, s_blocks = spans(m, int(rng.integers(1, 4))), spans(n, int(rng.integers(1, 5)))
    sims = rng.uniform(0.3, 1.0, size=(len(c_blocks), len(s_blocks)))
    if seed % 2:
        sims = np.round(sims * 5) / 5
    floor, penalty = float(rng.choice([0.5, 0.7, 0.9])), float(rng.choice([0.0, 0.05]))
    skip = float(rng.choice([0.0, 0.03, 0.2]))
    c_vecs, s_vecs = sims, np.eye(len(s_blocks))  # c_vecs @ s_vecs.T == sims
    got = align_blocks(
        c_blocks, c_vecs, s_blocks, s_vecs, penalty, search="dp", floor=floor, skip_simple=skip
    )
    total, last_c, last_s = 0.0, 0, 0
    for x in got:
        assert x.i >= last_c and x.j >= last_s  # monotone, no sentence used twice
        last_c, last_s = x.i + x.n_c, x.j + x.n_s
        assert (x.i, x.n_c) in c_blocks and (x.j, x.n_s) in s_blocks
        total += x.cosine - floor - penalty * (x.n_c + x.n_s - 2)
    total -= skip * (n - sum(x.n_s for x in got))  # every simple sentence left out costs `skip`
    want = _brute_force_best(sims, c_blocks, s_blocks, m, n, penalty, floor, skip)
    assert total == pytest.approx(want, abs=1e-9)
