"""``aligner=lexical``: Adduru et al. (2018), section 2.2 — the mean of 12 string similarities, kept in a band.

Every complex sentence of an article is paired with every simple sentence of the same article; each pair gets
twelve similarities in [0, 1] (a distance d is turned into 1 - d) and their mean. Pairs with
``threshold <= mean <= max_mean`` (paper: 0.5 and 0.8) are aligned: below the band the sentences are
unrelated, above it they are near copies that teach a simplifier nothing.

The paper lists its metrics by name; where it is specific we follow it, where it is not we decided:

==================== ======== =================================================================================
name                 symbols  similarity (1 = identical)
==================== ======== =================================================================================
levenshtein_char     chars    1 - lev(x, y) / max(|x|, |y|)                         (paper eq. 1)
levenshtein_word     words    the same over word sequences                          (paper: "char- or word-level")
damerau_levenshtein  chars    1 - dl(x, y) / max(|x|, |y|), unrestricted transpositions (Damerau 1964)
osa                  chars    1 - osa(x, y) / max(|x|, |y|), no substring edited twice
jaro_winkler         chars    Jaro-Winkler, p = 0.1, common prefix <= 4             (paper eq. 2-3)
jaro_winkler_word    words    the same over word sequences
lcs                  chars    LCS(x, y) / max(|x|, |y|), i.e. 1 - LCSD              (paper eq. 4)
ngram4               4-grams  LCS(G(x), G(y)) / max(|G(x)|, |G(y)|)                 (see below)
cosine               words    bag of words (counts): <Vx, Vy> / (|Vx| |Vy|)         (paper eq. 5)
jaccard              words    word sets: |X & Y| / |X | Y|
dice                 words    word sets: 2 |X & Y| / (|X| + |Y|)
paraphrase           words    P(paraphrase) of the Siamese BiLSTM (paper 2.3), only with a model
==================== ======== =================================================================================

Decisions where the paper is ambiguous:

* **Which 11 string scores.** The paper names ten string metrics and says Levenshtein is computed at character
  *or* word level, which with the paraphrase probability makes 12 only if one more metric has a word form. Its
  Jaro equation counts "matching words" while the prose speaks of symbols, so Jaro-Winkler is computed at both
  levels too. Every other edit-based metric is on characters (the symbols of the library the list follows).
* **Jaro-Winkler boost.** The prefix bonus ``k p (1 - d_j)`` is applied only when ``d_j >= 0.7`` (Winkler's
  boost threshold; the paper's "if d_j < 0" is a typesetting loss of it), as in rapidfuzz.
* **n-gram distance** (Kondrak 2005, n = 4). The paper: "similar to computing LCS but in this case the symbols
  are n-grams". We take that literally: ``G(s)`` is the sequence of the overlapping character 4-grams of ``s``
  (``len(s) - 3`` of them; a non-empty string shorter than 4 characters is one gram, itself), and
  ``ngram4 = LCS(G(x), G(y)) / max(|G(x)|, |G(y)|)``. Kondrak's own measure also gives partial credit to
  grams that share some characters; the LCS form keeps the score exact and computable in bulk.
* **Cosine / Jaccard / Dice** are over words: cosine over bags (term counts: "vector representation"),
  Jaccard and Dice over sets ("intersection", "union", "number of items").
* **Text normalisation.** Everything is lowercased (the paper normalises case for its paraphrase model) and
  runs of whitespace become one space. Words are :func:`multimsd.text.word_tokenize` tokens (MeCab for
  Japanese, Han characters for Chinese) with punctuation-only tokens dropped: punctuation is not a word.
* **Empty input.** Two empty sequences are identical (1); one empty sequence against a non-empty one scores 0.

Scoring is in bulk per article pair: each edit-based score is one ``rapidfuzz.process.cdist`` call over all
m x n pairs (C++, optionally multi-threaded); word and 4-gram sequences are first mapped to one Unicode code
point per distinct symbol so rapidfuzz compares them as plain strings; the set scores are two sparse matrix
products. :func:`pair_similarities` is the per-pair reference (used by the tests and the benchmark).
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from rapidfuzz import process
from rapidfuzz.distance import OSA, DamerauLevenshtein, Indel, JaroWinkler, LCSseq, Levenshtein

from multimsd.alignment.aligners.paraphrase_config import ParaphraseConfig
from multimsd.alignment.aligners.registry import Aligner, check_unit_threshold, register_aligner
from multimsd.alignment.aligners.words import sentence_words
from multimsd.alignment.match import Match
from multimsd.config import AlignConfig, AlignerConfig
from multimsd.console import progress_bar
from multimsd.errors import MultimsdError

log = logging.getLogger(__name__)


@dataclass
class LexicalConfig:
    # Pairs whose mean similarity lies in [aligner.threshold, max_mean] are aligned (paper: 0.5 <= mean <= 0.8;
    # above 0.8 the two sentences are near copies, which teach a simplifier nothing).
    max_mean: float = 0.8
    # The string similarities averaged (multimsd.alignment.aligners.lexical.STRING_SCORES; default all 11). The
    # paraphrase probability joins them as the 12th when paraphrase.model_path is set.
    scores: list[str] = field(
        default_factory=lambda: [
            "levenshtein_char",
            "levenshtein_word",
            "damerau_levenshtein",
            "osa",
            "jaro_winkler",
            "jaro_winkler_word",
            "lcs",
            "ngram4",
            "cosine",
            "jaccard",
            "dice",
        ]
    )
    workers: int = 1  # rapidfuzz threads per score matrix (-1 = all cores)
    paraphrase: ParaphraseConfig = field(default_factory=ParaphraseConfig)


@dataclass
class LexicalAlignerConfig(AlignerConfig):
    """``aligner=lexical`` (Adduru et al. 2018): the mean of 12 string similarities (the 12th, the Siamese
    BiLSTM paraphrase probability, when lexical.paraphrase.model_path is set), kept when
    threshold <= mean <= lexical.max_mean."""

    threshold: float = 0.5
    lexical: LexicalConfig = field(default_factory=LexicalConfig)


# The 11 string similarities, in the paper's order (the config's default lists them all, so `--cfg job` shows
# them); "paraphrase" (the 12th) needs a trained model.
STRING_SCORES = tuple(LexicalConfig().scores)
PARAPHRASE = "paraphrase"
NGRAM_N = 4
JW_PREFIX_WEIGHT = 0.1  # paper: p = 0.1 (rapidfuzz caps the common prefix at 4, as the paper does)

# name -> (rapidfuzz normalised similarity, which representation it compares)
_EDIT_SCORES = {
    "levenshtein_char": (Levenshtein.normalized_similarity, "chars"),
    "levenshtein_word": (Levenshtein.normalized_similarity, "words"),
    "damerau_levenshtein": (DamerauLevenshtein.normalized_similarity, "chars"),
    "osa": (OSA.normalized_similarity, "chars"),
    "jaro_winkler": (JaroWinkler.similarity, "chars"),
    "jaro_winkler_word": (JaroWinkler.similarity, "words"),
    "lcs": (LCSseq.normalized_similarity, "chars"),
    "ngram4": (LCSseq.normalized_similarity, "grams"),
}
_SET_SCORES = ("cosine", "jaccard", "dice")


# ---------------------------------------------------------------------------------------------- preprocessing
@dataclass(frozen=True)
class Prepared:
    """One sentence in the three representations the scores compare."""

    chars: str  # lowercased, whitespace collapsed
    words: tuple[str, ...]  # lowercased words, punctuation-only tokens dropped
    grams: tuple[str, ...]  # overlapping character 4-grams of ``chars``


def char_ngrams(s: str, n: int = NGRAM_N) -> tuple[str, ...]:
    """Overlapping character n-grams; a non-empty string shorter than n is a single gram (itself)."""
    if len(s) < n:
        return (s,) if s else ()
    return tuple(s[k : k + n] for k in range(len(s) - n + 1))


def prepare(text: str, lang: str = "en") -> Prepared:
    chars = " ".join(text.lower().split())
    return Prepared(chars, tuple(sentence_words(text, lang)), char_ngrams(chars))


def check_scores(names: Sequence[str]) -> list[str]:
    """Validate a list of score names (one clear error line for a typo, a duplicate or an empty list)."""
    names = list(names)
    if not names:
        raise MultimsdError(
            "aligner.lexical.scores is empty: name at least one of " + ", ".join(STRING_SCORES)
        )
    for name in names:
        if name == PARAPHRASE:
            raise MultimsdError(
                "aligner.lexical.scores: 'paraphrase' is added by setting aligner.lexical.paraphrase.model_path"
            )
        if name not in STRING_SCORES:
            raise MultimsdError(
                f"aligner.lexical.scores: unknown score {name!r} (choose from {', '.join(STRING_SCORES)})"
            )
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise MultimsdError(f"aligner.lexical.scores: {', '.join(dupes)} listed twice")
    return names


# ---------------------------------------------------------------------------------------------- per pair
def _set_scores(a: tuple[str, ...], b: tuple[str, ...]) -> dict[str, float]:
    if not a and not b:
        return dict.fromkeys(_SET_SCORES, 1.0)
    if not a or not b:
        return dict.fromkeys(_SET_SCORES, 0.0)
    ca, cb = Counter(a), Counter(b)
    dot = sum(v * cb[w] for w, v in ca.items())
    # One square root of the (exact, integer) product: identical bags then score exactly 1.
    norm = math.sqrt(sum(v * v for v in ca.values()) * sum(v * v for v in cb.values()))
    sa, sb = set(a), set(b)
    inter = len(sa & sb)
    return {
        "cosine": min(1.0, dot / norm),  # rounding of the square roots can overshoot 1 by an ulp
        "jaccard": inter / len(sa | sb),
        "dice": 2 * inter / (len(sa) + len(sb)),
    }


def pair_similarities(
    a: str | Prepared, b: str | Prepared, lang: str = "en", scores: Sequence[str] = STRING_SCORES
) -> dict[str, float]:
    """The string similarities of one sentence pair, one at a time (the reference for the bulk scorer)."""
    a = a if isinstance(a, Prepared) else prepare(a, lang)
    b = b if isinstance(b, Prepared) else prepare(b, lang)
    out = {}
    sets = _set_scores(a.words, b.words) if any(s in _SET_SCORES for s in scores) else {}
    for name in scores:
        if name in _SET_SCORES:
            out[name] = sets[name]
        else:
            fn, rep = _EDIT_SCORES[name]
            # rapidfuzz compares lists of hashables (words, grams) as sequences of symbols.
            x, y = (a.chars, b.chars) if rep == "chars" else (list(getattr(a, rep)), list(getattr(b, rep)))
            out[name] = float(fn(x, y))
    return out


# ---------------------------------------------------------------------------------------------- bulk
def _as_code_strings(seqs: list[tuple[str, ...]]) -> list[str]:
    """Map each distinct symbol (word or gram) to one code point, so a sequence becomes a plain string.

    rapidfuzz then runs its fast string kernels on them; distances are unchanged because equal symbols get
    equal code points and different symbols different ones. Surrogate code points are skipped.
    """
    table: dict[str, int] = {}
    out = []
    for seq in seqs:
        codes = []
        for sym in seq:
            k = table.setdefault(sym, len(table))
            codes.append(k + 0x800 if k >= 0xD800 else k)
        out.append("".join(map(chr, codes)))
    if len(table) + 0x800 > 0x10FFFF:  # pragma: no cover - over a million distinct words in one article
        raise MultimsdError("an article pair has too many distinct words to score")
    return out


def _bag_matrices(a: list[tuple[str, ...]], b: list[tuple[str, ...]]):
    """Sparse term-count matrices (len(a) x V) and (len(b) x V) over the words of both sides."""
    from scipy.sparse import csr_matrix

    vocab: dict[str, int] = {}

    def counts(seqs):
        rows, cols, vals = [], [], []
        for r, seq in enumerate(seqs):
            for w, c in Counter(seq).items():
                rows.append(r)
                cols.append(vocab.setdefault(w, len(vocab)))
                vals.append(c)
        return rows, cols, vals

    ra, rb = counts(a), counts(b)
    shape = max(len(vocab), 1)
    ma = csr_matrix((np.array(ra[2], dtype=np.float64), (ra[0], ra[1])), shape=(len(a), shape))
    mb = csr_matrix((np.array(rb[2], dtype=np.float64), (rb[0], rb[1])), shape=(len(b), shape))
    return ma, mb


def _set_matrices(a: list[tuple[str, ...]], b: list[tuple[str, ...]]) -> dict[str, np.ndarray]:
    ca, cb = _bag_matrices(a, b)
    dot = (ca @ cb.T).toarray()
    sq_a = np.asarray(ca.multiply(ca).sum(axis=1)).ravel()  # squared norms, exact integers
    sq_b = np.asarray(cb.multiply(cb).sum(axis=1)).ravel()
    ba, bb = (ca > 0).astype(np.float64), (cb > 0).astype(np.float64)  # word sets
    inter = (ba @ bb.T).toarray()
    size_a = np.asarray(ba.sum(axis=1)).ravel()
    size_b = np.asarray(bb.sum(axis=1)).ravel()
    sizes = size_a[:, None] + size_b[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        out = {
            "cosine": np.minimum(dot / np.sqrt(sq_a[:, None] * sq_b[None, :]), 1.0),
            "jaccard": inter / (sizes - inter),
            "dice": 2 * inter / sizes,
        }
    # Empty word lists: two empties are identical (1), one empty against words scores 0.
    empty_a, empty_b = size_a == 0, size_b == 0
    both = empty_a[:, None] & empty_b[None, :]
    one = empty_a[:, None] ^ empty_b[None, :]
    for m in out.values():
        m[both] = 1.0
        m[one] = 0.0
    return out


def score_matrices(
    complex_sents: Sequence[str],
    simple_sents: Sequence[str],
    lang: str = "en",
    scores: Sequence[str] = STRING_SCORES,
    workers: int = 1,
    paraphrase_model=None,
    min_mean: float | None = None,
) -> dict[str, np.ndarray]:
    """Every requested similarity of every (complex i, simple j) pair: name -> (m, n) float64 array.

    With ``paraphrase_model`` (from :func:`multimsd.alignment.aligners.paraphrase.load_paraphrase_model`) the
    matrix of paraphrase probabilities is added under ``"paraphrase"``.

    ``min_mean`` (used by :func:`lexical_matches`): only pairs whose mean could reach it need exact values.
    Unrestricted Damerau-Levenshtein has no bit-parallel algorithm and costs ~20x all the other scores
    together, so it is then computed exactly only where an upper bound on it could lift the mean to
    ``min_mean``; elsewhere the matrix holds that upper bound (and those pairs' mean stays below ``min_mean``).
    """
    scores = check_scores(scores)
    a = [prepare(s, lang) for s in complex_sents]
    b = [prepare(s, lang) for s in simple_sents]
    m, n = len(a), len(b)
    out: dict[str, np.ndarray] = {}
    if m == 0 or n == 0:
        names = [*scores, *([PARAPHRASE] if paraphrase_model is not None else [])]
        return {name: np.zeros((m, n)) for name in names}
    reps: dict[str, tuple[list[str], list[str]]] = {"chars": ([p.chars for p in a], [p.chars for p in b])}
    for rep in ("words", "grams"):
        if any(_EDIT_SCORES[s][1] == rep for s in scores if s in _EDIT_SCORES):
            coded = _as_code_strings([getattr(p, rep) for p in a + b])  # one symbol table for both sides
            reps[rep] = (coded[:m], coded[m:])
    bounded_dl = min_mean is not None and min_mean > 0 and "damerau_levenshtein" in scores
    for name in scores:
        if name in _EDIT_SCORES and not (bounded_dl and name == "damerau_levenshtein"):
            fn, rep = _EDIT_SCORES[name]
            q, c = reps[rep]
            out[name] = process.cdist(q, c, scorer=fn, dtype=np.float64, workers=workers)
    if any(s in _SET_SCORES for s in scores):
        sets = _set_matrices([p.words for p in a], [p.words for p in b])
        out.update({name: sets[name] for name in scores if name in _SET_SCORES})
    if paraphrase_model is not None:
        from multimsd.alignment.aligners.paraphrase import paraphrase_matrix

        out[PARAPHRASE] = paraphrase_matrix(paraphrase_model, complex_sents, simple_sents, lang)
    if bounded_dl:
        others = sum(out.values())
        out["damerau_levenshtein"] = _damerau_bounded(*reps["chars"], others, len(out) + 1, min_mean, workers)
    order = [*scores, *([PARAPHRASE] if paraphrase_model is not None else [])]
    return {name: out[name] for name in order}


def _damerau_bounded(
    q: list[str], c: list[str], others: np.ndarray, n_scores: int, min_mean: float, workers: int
) -> np.ndarray:
    """Damerau-Levenshtein similarity, exact wherever the mean of ``n_scores`` scores could reach min_mean.

    Lower bounds on the distance: a substitution or transposition is two insertions/deletions, so
    DL >= ceil(Indel / 2), with Indel = n + m - 2 LCS (bit-parallel, cheap); and DL >= |n - m|. Hence
    sim_DL <= 1 - max(ceil(Indel / 2), |n - m|) / max(n, m), and a pair whose mean with that bound stays
    below min_mean is dropped by the caller whatever its exact DL.
    """
    indel = process.cdist(q, c, scorer=Indel.distance, dtype=np.int64, workers=workers)
    len_q = np.array([len(s) for s in q])[:, None]
    len_c = np.array([len(s) for s in c])[None, :]
    lower = np.maximum(-(-indel // 2), np.abs(len_q - len_c))
    longest = np.maximum(len_q, len_c)
    with np.errstate(divide="ignore", invalid="ignore"):
        sim = np.where(longest > 0, 1.0 - lower / longest, 1.0)
    # A margin of 1e-9 absorbs the rounding difference between this sum and the caller's np.mean.
    need = (others + sim) / n_scores >= min_mean - 1e-9
    if need.all():
        return process.cdist(
            q, c, scorer=DamerauLevenshtein.normalized_similarity, dtype=np.float64, workers=workers
        )
    for i, j in zip(*np.nonzero(need)):
        sim[i, j] = DamerauLevenshtein.normalized_similarity(q[i], c[j])
    return sim


def mean_similarity(matrices: dict[str, np.ndarray]) -> np.ndarray:
    """Paper eq. 6: the plain mean of all similarity matrices."""
    return np.mean(np.stack(list(matrices.values())), axis=0)


def check_config(cfg: LexicalConfig) -> list[str]:
    names = check_scores(cfg.scores)
    if not 0.0 <= cfg.max_mean <= 1.0:
        raise MultimsdError(f"aligner.lexical.max_mean={cfg.max_mean}: the mean similarity lies in [0, 1]")
    if cfg.workers == 0 or cfg.workers < -1:
        raise MultimsdError(f"aligner.lexical.workers={cfg.workers}: use a positive count or -1 (all cores)")
    return names


def lexical_matches(
    docs: Sequence[tuple[Sequence[str], Sequence[str]]],
    langs: Sequence[str],
    cfg: LexicalConfig,
    min_score: float = 0.0,
) -> list[list[Match]]:
    """Candidate pairs of each article pair: every (i, j) with ``min_score <= mean <= cfg.max_mean``.

    ``score`` is the mean similarity (the caller applies ``aligner.threshold`` to it); there is no cosine.
    ``min_score`` only saves memory on large corpora (the caller's threshold); 0 keeps every candidate.
    """
    names = check_config(cfg)
    if min_score > cfg.max_mean:
        raise MultimsdError(
            f"aligner.threshold={min_score} is above aligner.lexical.max_mean={cfg.max_mean}: the band is empty"
        )
    model = None
    if cfg.paraphrase.model_path:
        from multimsd.alignment.aligners.paraphrase import load_paraphrase_model

        model = load_paraphrase_model(cfg.paraphrase.model_path, cfg.paraphrase.device)
    log.info(
        "lexical aligner: mean of %d similarities, band [%g, %g]",
        len(names) + (model is not None),
        min_score,
        cfg.max_mean,
    )
    result = []
    for (c_sents, s_sents), lang in progress_bar(
        list(zip(docs, langs)), desc="lexical scores", unit="article", disable=len(docs) < 50
    ):
        mats = score_matrices(c_sents, s_sents, lang, names, cfg.workers, model, min_mean=min_score)
        mean = mean_similarity(mats)
        # np.nonzero walks the matrix row by row, so the matches come out sorted by (i, j).
        ii, jj = np.nonzero((mean <= cfg.max_mean) & (mean >= min_score))
        result.append([Match(int(i), int(j), float(mean[i, j]), float("nan")) for i, j in zip(ii, jj)])
    return result


# ---------------------------------------------------------------------------------------------- the aligner
def _train_paraphrase(cfg: AlignConfig) -> dict:
    # The paraphrase model (torch) is only imported when this mode runs.
    from multimsd.alignment.aligners.paraphrase import run_train_paraphrase

    return run_train_paraphrase(LexicalAligner().settings(cfg).lexical.paraphrase)


@register_aligner
class LexicalAligner(Aligner):
    """``aligner=lexical``: the mean of the string similarities, kept in the band ``[θ, lexical.max_mean]``."""

    name = "lexical"
    options = LexicalAlignerConfig
    needs = "sentences"

    def candidates(
        self,
        docs: Sequence[tuple[Sequence[str], Sequence[str]]],
        langs: Sequence[str],
        cfg: AlignConfig,
        *,
        gold_train=None,
        min_score: float | None = None,
    ) -> list[list[Match]]:
        # min_score = θ in align mode: on a full corpus the m x n candidates of every article pair would not
        # fit in memory; gold mode needs every candidate down to 0.
        return lexical_matches(
            docs, langs, self.settings(cfg).lexical, min_score=0.0 if min_score is None else min_score
        )

    def check_threshold(self, threshold: float) -> None:
        check_unit_threshold(self.name, threshold)

    def modes(self) -> dict:
        # mode=train_paraphrase trains the Siamese BiLSTM whose probability is the 12th similarity.
        return {"train_paraphrase": _train_paraphrase}
