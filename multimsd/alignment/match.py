"""Sentence matching inside one article pair (MultiMSD section 3.2).

Given L2-normalised embeddings of the complex sentences (rows, i) and the simple sentences (columns, j), the
cosine matrix is Phi[i, j] = <c_i, s_j>. Everything below works from the k nearest neighbours of each sentence
in the other article, found with FAISS inner-product search (or numpy, same answer), so a pair is only ever
scored against its own article — never across articles.

* symmetric (precision):  A_ij = 1 iff j = argmax_k Phi[i, k] and i = argmax_k Phi[k, j], and Phi_ij > θ
* asymmetric (recall):    A_ij = 1 iff j = argmax_k Phi[i, k] or  i = argmax_k Phi[k, j],  and Phi_ij > θ
* margin (beyond the paper; Artetxe & Schwenk 2019, used for LASER bitext mining): the ratio margin
  M_ij = Phi_ij / ((mean of c_i's k best cosines + mean of s_j's k best cosines) / 2); pairs are the mutual
  argmax of M (over each side's k-NN candidates) with M_ij >= θ. It discounts "hub" sentences that are close
  to everything, which plain cosine thresholds cannot.

Ties are broken towards the lower index, on both paths, so results are deterministic.

Parity with the authors' released script (EhimeNLP/MultiMSDcorpus ``scripts/alignment/auto_alignment.py``;
tests/alignment/test_authors_parity.py pins every point): their "pattern1" is our symmetric rule, "pattern2" our
asymmetric one; θ is strict (``sim > threshold``) for both, as in their script, and the first maximum wins a
tie, as Python's ``max`` does. Kept different on purpose: they compare pairs as *text* lines, we as sentence
*indices* — so where an article repeats a sentence verbatim their pattern1 can write one line twice and their
pattern2 (a set) writes it once, while we keep one row per index pair; the stage's duplicate filter
(``filters.drop_duplicates``) makes the text-level results equal again. The margin rule is ours and keeps its
inclusive θ (``M_ij >= θ``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from multimsd.errors import MultimsdError

# The matching rules of this module; multimsd.alignment.aligners.embedding registers one aligner for each.
KNN_METHODS = ("symmetric", "asymmetric", "margin")
# Rules whose θ is strict (score > θ), as in the MultiMSD authors' script; every other score keeps score >= θ.
STRICT_METHODS = ("symmetric", "asymmetric")


def passes(score: float, threshold: float, strict: bool) -> bool:
    """θ as a filter: ``score > θ`` for the authors' cosine rules, ``score >= θ`` for every other score."""
    return score > threshold if strict else score >= threshold


@dataclass(frozen=True)
class Match:
    i: int  # complex sentence index (the first member of an n:m block)
    j: int  # simple sentence index (the first member of an n:m block)
    score: float  # the score θ was applied to: cosine (symmetric/asymmetric) or margin
    cosine: float
    # Block sizes: an n:m match covers complex sentences i .. i+n_c-1 and simple ones j .. j+n_s-1 (blocks of
    # consecutive sentences, so two ints say it all and every 1:1 aligner stays unchanged).
    n_c: int = 1
    n_s: int = 1

    @property
    def complex_members(self) -> tuple[int, ...]:
        return tuple(range(self.i, self.i + self.n_c))

    @property
    def simple_members(self) -> tuple[int, ...]:
        return tuple(range(self.j, self.j + self.n_s))


@dataclass
class Knn:
    scores: np.ndarray  # (m, k) float32, best first
    idx: np.ndarray  # (m, k) int64


def _order_ties(scores: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # FAISS returns equal scores in heap order; re-sort each row by (-score, index) so ties go to the
    # lower index, exactly like the numpy path.
    order = np.lexsort((idx, -scores), axis=-1)
    return np.take_along_axis(scores, order, -1), np.take_along_axis(idx, order, -1)


def knn_numpy(queries: np.ndarray, base: np.ndarray, k: int) -> Knn:
    sims = queries @ base.T
    k = min(k, base.shape[0])
    # A stable sort of -sim keeps the lower index first among equals.
    idx = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    return Knn(np.take_along_axis(sims, idx, 1).astype(np.float32), idx.astype(np.int64))


def knn_faiss(queries: np.ndarray, base: np.ndarray, k: int) -> Knn:
    import faiss

    k = min(k, base.shape[0])
    index = faiss.IndexFlatIP(base.shape[1])
    index.add(np.ascontiguousarray(base, dtype=np.float32))
    scores, idx = index.search(np.ascontiguousarray(queries, dtype=np.float32), k)
    scores, idx = _order_ties(scores, idx)
    return Knn(scores, idx.astype(np.int64))


def knn_from_matrix(sim: np.ndarray, k: int) -> tuple[Knn, Knn]:
    """Forward (rows -> columns) and backward (columns -> rows) k-NN of a given similarity matrix."""
    sim = np.asarray(sim, dtype=np.float64)

    def top(m: np.ndarray) -> Knn:
        kk = min(k, m.shape[1])
        idx = np.argsort(-m, axis=1, kind="stable")[:, :kk]
        return Knn(np.take_along_axis(m, idx, 1), idx)

    return top(sim), top(sim.T)


def match_from_knn(fwd: Knn, bwd: Knn, method: str, threshold: float, margin_k: int = 4) -> list[Match]:
    """Turn forward/backward neighbour lists into aligned pairs (sorted by complex, then simple index).

    The lists may hold more neighbours than ``margin_k`` (searching a few extra makes tie order exact);
    the margin uses the first ``margin_k``.
    """
    if method not in KNN_METHODS:
        raise MultimsdError(f"unknown matching rule {method!r} (choose from {', '.join(KNN_METHODS)})")
    m, n = fwd.idx.shape[0], bwd.idx.shape[0]
    if m == 0 or n == 0:
        return []
    fwd_best, bwd_best = fwd.idx[:, 0], bwd.idx[:, 0]
    pairs: dict[tuple[int, int], tuple[float, float]] = {}
    if method in ("symmetric", "asymmetric"):
        for i in range(m):
            j = int(fwd_best[i])
            if method == "asymmetric" or bwd_best[j] == i:
                pairs[(i, j)] = (float(fwd.scores[i, 0]),) * 2
        if method == "asymmetric":
            for j in range(n):
                i = int(bwd_best[j])
                pairs.setdefault((i, j), (float(bwd.scores[j, 0]),) * 2)
    else:
        fwd = Knn(fwd.scores[:, :margin_k], fwd.idx[:, :margin_k])
        bwd = Knn(bwd.scores[:, :margin_k], bwd.idx[:, :margin_k])
        # Each sentence's mean similarity to its k nearest neighbours in the other article.
        fwd_mean, bwd_mean = fwd.scores.mean(axis=1), bwd.scores.mean(axis=1)

        def best_by_margin(
            knn: Knn, own_mean: np.ndarray, other_mean: np.ndarray, r: int
        ) -> tuple[int, float, float]:
            cos = knn.scores[r]
            margin = cos / ((own_mean[r] + other_mean[knn.idx[r]]) / 2.0)
            # argmax takes the first maximum; candidates are already in (-cos, index) order.
            b = int(np.argmax(margin))
            return int(knn.idx[r, b]), float(margin[b]), float(cos[b])

        bwd_choice = [best_by_margin(bwd, bwd_mean, fwd_mean, j)[0] for j in range(n)]
        for i in range(m):
            j, margin, cos = best_by_margin(fwd, fwd_mean, bwd_mean, i)
            if bwd_choice[j] == i:
                pairs[(i, j)] = (margin, cos)
    strict = method in STRICT_METHODS
    out = [Match(i, j, s, c) for (i, j), (s, c) in pairs.items() if passes(s, threshold, strict)]
    return sorted(out, key=lambda x: (x.i, x.j))


def match_matrix(sim: np.ndarray, method: str, threshold: float, margin_k: int = 4) -> list[Match]:
    """Align from a ready similarity matrix (rows: complex, columns: simple). Handy for tests and analysis."""
    k = margin_k if method == "margin" else 1
    fwd, bwd = knn_from_matrix(sim, k)
    return match_from_knn(fwd, bwd, method, threshold, margin_k)


def article_knn(c_vecs: np.ndarray, s_vecs: np.ndarray, k: int, use_faiss: bool = True) -> tuple[Knn, Knn]:
    """k-NN of one article pair in both directions. ``k`` covers the margin's neighbourhood and ties."""
    search = knn_faiss if use_faiss else knn_numpy
    return search(c_vecs, s_vecs, k), search(s_vecs, c_vecs, k)
