"""``aligner=nm``: n:m sentence alignment with embeddings of concatenated neighbours (beyond the paper).

The paper's argmax aligners emit 1:1 pairs only, but consumer texts often split one professional sentence into
several (in the DEplain-web gold a third of the alignments are 1:m, n:1 or n:m). In the spirit of Bertalign /
Vecalign, a *block* is a run of 1..``max_complex`` consecutive complex (or 1..``max_simple`` consecutive simple)
sentences, embedded as the text of its sentences joined by a space — through the stage's embedder and its
SQLite cache, so a θ sweep or a second run encodes nothing again. A block pair is worth its *score*: by
default (``score=margin``) its cosine minus the article's background (:func:`block_scores`), which puts
articles whose sentences all look alike to the encoder (a retold fairy tale) on the scale of those that do
not (a news item); ``score=cosine`` uses the plain cosine. Per article pair, with ``search=dp`` (the default),
a monotone dynamic programme over the two sentence sequences (Vecalign / Bertalign style): each step skips a
complex sentence (free: consumer texts drop material), skips a simple sentence (``-skip_simple``: nearly every
plain sentence says something of the original) or aligns a complex block with a simple block for
``score - floor - penalty`` per sentence beyond 1:1; the path with the highest total is kept, so a block pair
below ``floor`` is never worth taking and a split is taken when its concatenation beats its single sentences.

``search=greedy`` drops the order constraint (for reordered content):

1. seeds: every sentence's argmax partner in the other article (both directions, as ``aligner=asymmetric``
   but without θ), so a simple sentence that belongs to a split still reaches its complex sentence;
2. candidates: every block pair whose complex block contains a seed's complex sentence and whose simple block
   contains its simple sentence, scored as above;
3. selection: candidates compete greedily by score minus ``penalty`` per sentence beyond 1:1; a candidate is
   taken when none of its sentences is taken yet (each sentence is used at most once), then (``absorb``)
   each taken block grows by free neighbours whose own nearest sentence lies inside it.

Each taken block pair is one :class:`~multimsd.alignment.match.Match` (first members ``i``, ``j``, sizes
``n_c``, ``n_s``) whose ``score`` is the block score (``cosine``: the plain block cosine); θ
(``aligner.threshold``) filters on it afterwards, like every aligner. In gold mode (``tune_on_gold``)
``floor``, ``penalty`` and ``skip_simple`` are first chosen on the validation half from their grids, like θ. Options (``aligner=nm``): :class:`NmAlignerConfig`, its
block settings under ``aligner.nm.*`` (:class:`NmConfig`).

Why this module is long: it is one aligner with two searches over the same block scores (the dynamic
programme, and the greedy selection with its absorption), its options and their tuning on gold; both searches
are defined on the blocks and scores built here, and apart from them neither reads on its own.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from multimsd.alignment.aligners.registry import Aligner, register_aligner
from multimsd.alignment.match import Match
from multimsd.config import AlignConfig, AlignerConfig
from multimsd.errors import MultimsdError

if TYPE_CHECKING:
    from multimsd.gold import GoldDoc

log = logging.getLogger(__name__)

Span = tuple[int, int]  # (first sentence, number of sentences)
BLOCK_EMBEDDINGS = ("concat", "mean")
SEARCHES = ("dp", "greedy")
SCORES = ("margin", "cosine")


@dataclass
class NmConfig:
    # Blocks of 1..max_complex consecutive complex and 1..max_simple consecutive simple sentences are scored
    # against each other (cosine of the embeddings of the concatenated sentences).
    max_complex: int = 2
    max_simple: int = 6
    # dp: monotone dynamic programme with skips (default); greedy: order-free, seeds + greedy block selection.
    search: str = "dp"
    # What a block pair is worth: margin (its cosine minus the mean cosine of its two blocks with the other
    # article, so that every article is on one scale; default) or cosine (the plain cosine: then floor, its
    # grid and θ are cosines, e.g. floor=0.85 floor_grid=[0.75,0.8,0.85,0.9] aligner.threshold=0.9).
    score: str = "margin"
    # dp: a block pair scores score - floor (a skipped complex sentence 0, a skipped simple one -skip_simple),
    # so pairs below the floor are never taken. Subtracted per sentence beyond 1:1: penalty (negative: a bonus
    # for splits). θ (aligner.threshold) applies to the block score.
    # Defaults (align mode): one setting for DEplain dev and the sample gold, every fold's choice in 5-fold CV
    # (benchmarks/nm_defaults_cv.py); for other text, tune on gold of its kind (mode=gold gold.folds=5).
    floor: float = 0.0
    penalty: float = 0.02
    skip_simple: float = 0.0
    # concat: embed the concatenated text (cached like sentences); mean: the normalised mean of the member
    # sentences' embeddings (no extra encoding, cruder).
    block_embedding: str = "concat"
    # Gold mode: choose floor, penalty and skip_simple on the validation half (best F1 over θ) from these
    # grids; align mode uses floor / penalty / skip_simple as given.
    tune_on_gold: bool = True
    floor_grid: list[float] = field(default_factory=lambda: [-0.02, 0.0, 0.02, 0.04])
    penalty_grid: list[float] = field(default_factory=lambda: [0.0, 0.02])
    skip_simple_grid: list[float] = field(default_factory=lambda: [0.0, 0.02])
    # greedy only: grow each taken block by free neighbours whose nearest sentence lies inside it (splits).
    absorb: bool = True


@dataclass
class NmAlignerConfig(AlignerConfig):
    """``aligner=nm``: blocks of consecutive sentences, θ on the block score (margin by default)."""

    # One θ for DEplain dev and the sample gold, by 5-fold CV (benchmarks/nm_defaults_cv.py; docs/alignment.md).
    threshold: float = 0.01
    threshold_grid: list[float] = field(
        # Block margins -0.05 .. 0.20 (nm.score=margin, the default), then block cosines 0.70 .. 0.98
        # (score=cosine); each score type finds its optimum in its own part.
        default_factory=lambda: (
            [round(-0.05 + 0.01 * i, 2) for i in range(26)] + [round(0.7 + 0.01 * i, 2) for i in range(29)]
        )
    )
    nm: NmConfig = field(default_factory=NmConfig)


def spans(n: int, k: int) -> list[Span]:
    """Every block of 1..k consecutive sentences of an n-sentence side; the n single sentences come first."""
    return [(a, size) for size in range(1, k + 1) for a in range(n - size + 1)]


def block_text(sents: Sequence[str], span: Span) -> str:
    """A block's text: its sentences joined by a space, in document order (a single sentence is itself)."""
    a, size = span
    return " ".join(sents[a : a + size])


def mean_blocks(sent_vecs: np.ndarray, blocks: list[Span]) -> np.ndarray:
    """Block vectors as the L2-normalised mean of their sentences' vectors (``block_embedding=mean``)."""
    out = np.stack([sent_vecs[a : a + size].mean(axis=0) for a, size in blocks]) if blocks else sent_vecs[:0]
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms > 0, norms, 1.0)


def align_blocks(
    c_blocks: list[Span],
    c_vecs: np.ndarray,
    s_blocks: list[Span],
    s_vecs: np.ndarray,
    penalty: float,
    absorb: bool = True,
    search: str = "dp",
    floor: float = 0.85,
    *,
    score: str = "cosine",
    skip_simple: float = 0.0,
) -> list[Match]:
    """Threshold-free n:m matches of one article pair from its block vectors (rows in ``*_blocks`` order).

    ``c_blocks`` / ``s_blocks`` must start with the single sentences 0..m-1 / 0..n-1 (as :func:`spans` gives).
    ``score``: what a block pair is worth (:func:`block_scores`); ``skip_simple``: what leaving a simple
    sentence unaligned costs the programme (``search=dp``).
    """
    m = sum(1 for _, size in c_blocks if size == 1)
    n = sum(1 for _, size in s_blocks if size == 1)
    if m == 0 or n == 0:
        return []
    cos = np.asarray(c_vecs, dtype=np.float64) @ np.asarray(s_vecs, dtype=np.float64).T
    sims = block_scores(cos, m, n, score)
    c_row = {span: r for r, span in enumerate(c_blocks)}
    s_row = {span: r for r, span in enumerate(s_blocks)}
    if search == "dp":
        taken = _dp_select(sims, c_row, s_row, m, n, penalty, floor, skip_simple)
        return _matches(taken, sims, cos, c_row, s_row)
    # np.argmax takes the first maximum, like the symmetric / asymmetric aligners' tie rule.
    seeds = {(i, int(np.argmax(sims[i, :n]))) for i in range(m)}
    seeds |= {(int(np.argmax(sims[:m, j])), j) for j in range(n)}
    c_having = _blocks_having(c_blocks, m)
    s_having = _blocks_having(s_blocks, n)
    cands = {(cb, sb) for i, j in seeds for cb in c_having[i] for sb in s_having[j]}

    def key(cand: tuple[int, int]) -> tuple[float, int, int, int, int, int]:
        (a, na), (b, nb) = c_blocks[cand[0]], s_blocks[cand[1]]
        # Best penalised cosine first; among equals the smaller block, then document order (deterministic).
        return (-(sims[cand] - penalty * (na + nb - 2)), na + nb, a, b, na, nb)

    used_c, used_s = np.zeros(m, dtype=bool), np.zeros(n, dtype=bool)
    taken = []
    for cand in sorted(cands, key=key):
        (a, na), (b, nb) = c_blocks[cand[0]], s_blocks[cand[1]]
        if used_c[a : a + na].any() or used_s[b : b + nb].any():
            continue
        used_c[a : a + na] = True
        used_s[b : b + nb] = True
        taken.append([a, na, b, nb])
    if absorb:
        _absorb(taken, sims[:m, :n], used_c, used_s, set(c_blocks), set(s_blocks))
    return _matches(taken, sims, cos, c_row, s_row)


def block_scores(cos: np.ndarray, m: int, n: int, score: str) -> np.ndarray:
    """What each block pair is worth: its cosine, or (``margin``) its cosine minus the article's background.

    The background of a pair is the mean of (the complex block's mean cosine with every simple sentence of
    the article) and (the simple block's mean cosine with every complex sentence). Cosines of one encoder
    sit at different levels in different articles — a fairy tale retold about one donkey has every sentence
    pair at 0.8-0.9, a news item spreads them — so a fixed floor or θ on the plain cosine is too strict for
    one article and too lax for the other; the margin puts every article on one scale (as the ratio margin
    of ``aligner=margin`` does for 1:1 pairs, here as a difference so that the programme can add it up).
    """
    if score == "cosine":
        return cos
    background_c = cos[:, :n].mean(axis=1)  # each complex block against the article's simple sentences
    background_s = cos[:m, :].mean(axis=0)  # each simple block against its complex sentences
    return cos - 0.5 * (background_c[:, None] + background_s[None, :])


def _matches(
    taken: list[list[int]],
    scores: np.ndarray,
    cos: np.ndarray,
    c_row: dict[Span, int],
    s_row: dict[Span, int],
) -> list[Match]:
    """Taken blocks [a, na, b, nb] as Matches (score: the block score θ filters on; cosine), in document order."""
    out = []
    for a, na, b, nb in taken:
        r, q = c_row[(a, na)], s_row[(b, nb)]
        out.append(Match(a, b, float(scores[r, q]), float(cos[r, q]), na, nb))
    return sorted(out, key=lambda x: (x.i, x.j))


def _dp_select(
    sims: np.ndarray,
    c_row: dict[Span, int],
    s_row: dict[Span, int],
    m: int,
    n: int,
    penalty: float,
    floor: float,
    skip_simple: float = 0.0,
) -> list[list[int]]:
    """Monotone alignment (Vecalign / Bertalign style): the block pairs, in order, with skips on both sides,
    that maximise the sum of (score - floor - penalty per sentence beyond 1:1) minus ``skip_simple`` per
    simple sentence left out. A skipped complex sentence costs nothing (plain texts drop material, and
    DEplain's annotators leave a quarter of the complex sentences unaligned), a skipped simple one may cost
    (nearly every plain sentence is aligned to something), which draws a boundary sentence into a split
    instead of leaving it out; a block pair below ``floor`` is never worth taking.

    ``best[i, j]`` is the best total over the first ``i`` complex and ``j`` simple sentences. A block ending at
    row ``i`` starts in an earlier row, so a whole row is computed at once from the rows above (a few numpy
    operations per complex block size) and the skip of a simple sentence, which moves along the row, is a running
    maximum. Ties resolve as a cell-by-cell programme would that tries, for each cell, blocks with more
    complex, then more simple sentences first, then a skipped complex sentence, then a skipped simple one.
    """
    kc = min(max(size for _, size in c_row), m)
    ks = min(max(size for _, size in s_row), n)
    gain = _block_gains(sims, c_row, s_row, n, ks, penalty, floor)
    step_c, step_s, src = _dp_table(gain, c_row, m, n, kc, ks, skip_simple)
    return _dp_trace(step_c, step_s, src, m, n)


def _block_gains(
    sims: np.ndarray,
    c_row: dict[Span, int],
    s_row: dict[Span, int],
    n: int,
    ks: int,
    penalty: float,
    floor: float,
) -> np.ndarray:
    """``gain[r, k, j]``: a complex block (row r of sims) with the simple block of nb = ks - k sentences that
    ends before simple sentence j (-inf where none fits): its score - floor - penalty beyond 1:1."""
    # spans() lists blocks by size, then start, so the simple blocks of one size are a slice of sims' columns.
    c_size = np.zeros(sims.shape[0])
    for (_, na), r in c_row.items():
        c_size[r] = na
    gain = np.full((sims.shape[0], ks, n + 1), -np.inf)
    for k, nb in enumerate(range(ks, 0, -1)):
        first = s_row[(0, nb)]
        gain[:, k, nb:] = sims[:, first : first + n + 1 - nb] - floor - penalty * (c_size[:, None] + nb - 2)
    return gain


def _dp_table(
    gain: np.ndarray, c_row: dict[Span, int], m: int, n: int, kc: int, ks: int, skip_simple: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The programme's moves, row by row: (step_c, step_s, src) for :func:`_dp_trace` (see :func:`_dp_select`)."""
    best = np.full((m + 1, n + 1), -np.inf)
    # The move that reached each cell inside its row: (na, nb) of a block, (0, 0) for a skipped complex
    # sentence; src[i, j] the column whose value the running maximum (skipped simple sentences) carried to j.
    step_c = np.zeros((m + 1, n + 1), dtype=np.int16)
    step_s = np.zeros((m + 1, n + 1), dtype=np.int16)
    src = np.zeros((m + 1, n + 1), dtype=np.int64)
    cols = np.arange(n + 1)
    padded = np.full(ks + n + 1, -np.inf)
    window = np.arange(ks)[:, None] + cols[None, :]  # padded[window[k, j]] = best[., j - nb]
    for i in range(m + 1):
        cand = np.full(n + 1, -np.inf)
        if i == 0:
            cand[0] = 0.0
        else:
            for na in range(min(kc, i), 0, -1):
                # padded[window][k, j] = best[i - na, j - nb]: the total before a block of nb simple sentences.
                padded[ks:] = best[i - na]
                g = padded[window] + gain[c_row[(i - na, na)]]
                k = g.argmax(axis=0)  # the first maximum: the most simple sentences
                g = g[k, cols]
                better = np.flatnonzero(g > cand)
                cand[better] = g[better]
                step_c[i, better] = na
                step_s[i, better] = ks - k[better]
            skip = np.flatnonzero(best[i - 1] > cand)
            cand[skip] = best[i - 1][skip]
            step_c[i, skip] = 0
            step_s[i, skip] = 0
        # Skipping simple sentences k+1..j costs skip_simple each: best[i, j] = max_k cand[k] - skip * (j - k),
        # a running maximum of cand[k] + skip * k.
        lifted = cand + skip_simple * cols
        run = np.maximum.accumulate(lifted)
        own = np.ones(n + 1, dtype=bool)
        own[1:] = lifted[1:] >= run[:-1]  # the cell's own move wins a tie with a skipped simple one
        best[i] = run - skip_simple * cols
        src[i] = np.maximum.accumulate(np.where(own, cols, 0))
    return step_c, step_s, src


def _dp_trace(step_c: np.ndarray, step_s: np.ndarray, src: np.ndarray, m: int, n: int) -> list[list[int]]:
    """The taken blocks [a, na, b, nb], in document order, traced back from the last cell."""
    taken = []
    i, j = m, n
    while True:
        j = int(src[i, j])
        if i == 0:
            break
        na, nb = int(step_c[i, j]), int(step_s[i, j])
        if na == 0:
            i -= 1
        else:
            i, j = i - na, j - nb
            taken.append([i, na, j, nb])
    return taken[::-1]


def _absorb(
    taken: list[list[int]],
    sims: np.ndarray,
    used_c: np.ndarray,
    used_s: np.ndarray,
    c_spans: set[Span],
    s_spans: set[Span],
) -> None:
    """Grow taken blocks (in place) by free neighbours whose own nearest sentence lies inside the block.

    A split spreads one complex sentence over several simple ones, each of which is nearest to it, but the
    concatenation of all of them is not always the best-scoring block (a cosine barely moves when a short
    sentence is added). A free neighbouring simple sentence whose argmax complex sentence is a member of the
    block belongs to it (and likewise for the complex side), as long as the block stays within the sizes.
    """
    fwd = sims.argmax(axis=1)  # complex sentence -> nearest simple sentence
    bwd = sims.argmax(axis=0)  # simple sentence -> nearest complex sentence
    for t in taken:
        grown = True
        while grown:
            grown = False
            a, na, b, nb = t
            for k in (b - 1, b + nb):
                if (
                    0 <= k < len(bwd)
                    and not used_s[k]
                    and a <= bwd[k] < a + na
                    and (min(b, k), nb + 1) in s_spans
                ):
                    used_s[k] = True
                    t[2], t[3] = min(b, k), nb + 1
                    grown = True
                    break
            if grown:
                continue
            for k in (a - 1, a + na):
                if (
                    0 <= k < len(fwd)
                    and not used_c[k]
                    and b <= fwd[k] < b + nb
                    and (min(a, k), na + 1) in c_spans
                ):
                    used_c[k] = True
                    t[0], t[1] = min(a, k), na + 1
                    grown = True
                    break


def _blocks_having(blocks: list[Span], n: int) -> list[list[int]]:
    """For each sentence, the rows of the blocks that contain it."""
    having: list[list[int]] = [[] for _ in range(n)]
    for r, (a, size) in enumerate(blocks):
        for k in range(a, a + size):
            having[k].append(r)
    return having


def block_vectors(
    docs: Sequence[tuple[Sequence[str], Sequence[str]]], cfg: AlignConfig, stats: dict | None = None
) -> list[tuple[list[Span], np.ndarray, list[Span], np.ndarray]]:
    """Each document's (complex blocks, their vectors, simple blocks, their vectors), one encoder call a side.

    Single sentences are encoded with exactly the text and prefix the embedding aligners use, so they come
    from the same cache entries; concatenations get entries of their own. ``stats`` (optional) receives
    ``n_encoded``, the number of texts the model actually ran on.
    """
    from multimsd.alignment.encode import make_embedder

    c = NmAligner().settings(cfg).nm
    embedder = make_embedder(cfg)
    per_side = []
    for side, k, prefix in (
        (0, c.max_complex, cfg.embedder.complex_prefix),
        (1, c.max_simple, cfg.embedder.simple_prefix),
    ):
        blocks = [spans(len(d[side]), k) for d in docs]
        if c.block_embedding == "mean":
            texts = [s for d in docs for s in d[side]]
        else:
            texts = [block_text(d[side], span) for d, bs in zip(docs, blocks) for span in bs]
        vecs = embedder.encode(texts, prefix=prefix)
        mats, start = [], 0
        for d, bs in zip(docs, blocks):
            if c.block_embedding == "mean":
                mats.append(mean_blocks(vecs[start : start + len(d[side])], bs))
                start += len(d[side])
            else:
                mats.append(vecs[start : start + len(bs)])
                start += len(bs)
        per_side.append((blocks, mats))
    (cb, cm), (sb, sm) = per_side
    if stats is not None:
        stats["n_encoded"] = embedder.n_encoded  # texts the model ran on (the rest came from the cache)
    return list(zip(cb, cm, sb, sm))


def check_nm_config(c: NmConfig) -> None:
    if c.max_complex < 1 or c.max_simple < 1:
        raise MultimsdError(
            f"aligner.nm.max_complex={c.max_complex}, aligner.nm.max_simple={c.max_simple}: both must be >= 1"
        )
    if c.block_embedding not in BLOCK_EMBEDDINGS:
        raise MultimsdError(
            f"aligner.nm.block_embedding={c.block_embedding!r}: choose {', '.join(BLOCK_EMBEDDINGS)}"
        )
    if not c.floor_grid or not c.penalty_grid:
        raise MultimsdError("aligner.nm.floor_grid and aligner.nm.penalty_grid must not be empty")
    if c.search not in SEARCHES:
        raise MultimsdError(f"aligner.nm.search={c.search!r}: choose {', '.join(SEARCHES)}")
    if c.score not in SCORES:
        raise MultimsdError(f"aligner.nm.score={c.score!r}: choose {', '.join(SCORES)}")
    if c.skip_simple < 0 or any(x < 0 for x in c.skip_simple_grid) or not c.skip_simple_grid:
        raise MultimsdError(
            "aligner.nm.skip_simple and aligner.nm.skip_simple_grid must be >= 0 (grid not empty)"
        )


def tune_on_gold(gold_train: list[GoldDoc], cfg: AlignConfig) -> tuple[float, float, float]:
    """(floor, penalty, skip_simple) from the ``aligner.nm`` grids with the best F1 (at its best θ) on
    ``gold_train``.

    Gold mode passes the validation half only, so the test half stays unseen. Worth it because the best
    trade-off depends on the corpus: splits are common in DEplain (penalty 0 wins) and absent from the bundled
    sample (a penalty keeps 1:1 pairs whole).
    """
    from multimsd.alignment.goldscore import best_threshold, sweep

    o = NmAligner().settings(cfg)
    c = o.nm
    vecs = block_vectors([(d.complex, d.simple) for d in gold_train], cfg)
    scores = {}
    for setting in itertools.product(c.floor_grid, c.penalty_grid, c.skip_simple_grid):
        cands = {
            (d.article_id, d.lang): _align(cb, cv, sb, sv, c, *setting)
            for d, (cb, cv, sb, sv) in zip(gold_train, vecs)
        }
        curve = sweep(cands, gold_train, list(o.threshold_grid))
        scores[setting] = round(curve[best_threshold(curve)].f1, 12)
    # Like θ (goldscore.best_threshold): on equal F1 the more conservative setting (higher floor, then penalty,
    # then skip cost).
    best = max(scores, key=lambda fps: (scores[fps], fps))
    log.info(
        "aligner.nm tuned on %d gold article pair(s): floor=%g penalty=%g skip_simple=%g",
        len(gold_train),
        *best,
    )
    return best


def _align(cb, cv, sb, sv, c: NmConfig, floor: float, penalty: float, skip_simple: float) -> list[Match]:
    return align_blocks(
        cb, cv, sb, sv, penalty, c.absorb, c.search, floor, score=c.score, skip_simple=skip_simple
    )


@register_aligner
class NmAligner(Aligner):
    """Blocks of consecutive sentences aligned by the cosine of their concatenations' embeddings."""

    name = "nm"
    options = NmAlignerConfig
    # It embeds blocks itself (through the stage's embedder and cache), so it takes the sentences.
    needs = "sentences"
    emits_n_to_m = True

    def candidates(
        self,
        docs: Sequence[tuple[Sequence[str], Sequence[str]]],
        langs: Sequence[str],
        cfg: AlignConfig,
        *,
        gold_train: list[GoldDoc] | None = None,
        min_score: float | None = None,
    ) -> list[list[Match]]:
        c = self.settings(cfg).nm
        check_nm_config(c)  # also at the stage's start-up (check_options); here for direct callers
        setting = (c.floor, c.penalty, c.skip_simple)
        if gold_train and c.tune_on_gold:
            setting = tune_on_gold(gold_train, cfg)
        stats: dict = {}
        vecs = block_vectors(docs, cfg, stats)
        self.n_encoded = stats.get("n_encoded", 0)
        return [_align(cb, cv, sb, sv, c, *setting) for cb, cv, sb, sv in vecs]

    def check_options(self, cfg: AlignConfig) -> None:
        from multimsd.alignment.embed import check_available

        check_nm_config(self.settings(cfg).nm)
        check_available(cfg.embedder)  # it embeds blocks with the stage's embedder

    def check_threshold(self, threshold: float) -> None:
        if not -2.0 <= threshold <= 2.0:
            raise MultimsdError(
                f"aligner.threshold={threshold} is outside [-2, 2], the range of a block score (cosine or margin)"
            )
