"""Sentence-pair features of Cardon & Grabar (RANLP 2019; MIE/SHTI 2020) for the classifier aligner.

Every (complex sentence i, simple sentence j) pair of an article pair gets the feature vector below, computed
for all m x n pairs at once (:func:`article_features`; :func:`pair_features` is the same thing written out
for a single pair, the reference the bulk code is tested against). The papers list the features but leave
most details open; our decisions are marked *(ours)*.

Preprocessing *(ours)*: a sentence is lowercased; its **words** are the tokens of
:func:`multimsd.text.word_tokenize` (MeCab morphemes for Japanese, Han characters for Chinese, regex words
elsewhere) that contain a letter or digit (punctuation is dropped). "The features are computed on word forms"
(2019, section 2.3): no lemmatisation. W = the set of distinct words of a sentence, C = W minus the
language's stopwords (:mod:`multimsd.alignment.aligners.stopwords`; bundled lists, nltk's corpus is not available
offline). Subscripts c and s are the complex and the simple sentence.

====  ======================  =================================================================================
 #     name                    definition
====  ======================  =================================================================================
 1     common_content_words    |C_c ∩ C_s| — "number of common non-stopwords"
 2     incl_complex_in_simple  |W_c ∩ W_s| / |W_c| — share of the complex sentence's words found in the simple one
 3     incl_simple_in_complex  |W_c ∩ W_s| / |W_s| — and the other direction
 4     length_diff             len_c - len_s, lengths in words (tokens, repeats counted); signed, so the forest
                               sees which side is longer *(ours: the 2019 paper says difference, 2020 ratio)*
 5     avg_word_length_diff    mean characters per word of c minus that of s (signed)
 6     common_char_ngrams      |B2_c ∩ B2_s| + |B3_c ∩ B3_s|: B2/B3 = distinct character bigrams/trigrams of
                               the lowercased, whitespace-normalised sentence (spaces and punctuation included)
                               — "total number of common bigrams and trigrams", one feature as in the paper
 7     word_cosine             |W_c ∩ W_s| / sqrt(|W_c| |W_s|) — binary vectors ("weight of each word set to 1")
 8     word_dice               2 |W_c ∩ W_s| / (|W_c| + |W_s|)
 9     word_jaccard            |W_c ∩ W_s| / |W_c ∪ W_s|
10     char_levenshtein        Levenshtein distance between the normalised sentences (insert/delete/substitute,
                               cost 1 each; a raw count, not normalised, as in the paper)
11     word_levenshtein        the same with words as the units (token sequences, repeats kept)
12     wavg                    cosine of the two sentences' averaged word vectors (Štajner et al. 2018, CATS):
                               the mean is over the tokens that have a vector, repeats counted
13     cwasa                   continuous word alignment-based similarity analysis (Franco-Salvador et al. 2016),
                               defined below
====  ======================  =================================================================================

Every ratio is 0 when its denominator is 0 (an empty word set). WAVG and CWASA are 0 when either sentence
has no word with a vector.

**CWASA**, precisely. Let U_c, U_s be the distinct words of each sentence that have a vector, and
sim(u, v) the cosine of their vectors. Each word is aligned with its most similar word on the other side
(first in sorted order on ties), in both directions, giving the edge set
E = {(u, argmax_v sim(u, v)) : u in U_c} ∪ {(argmax_u sim(u, v), v) : v in U_s} — a set, so two words that
are each other's best match make *one* edge. Edges with sim <= 0 are dropped (a negative cosine is no
alignment). CWASA = the mean of sim over the remaining edges (0 if none). It rewards sentences whose words
all find a close partner, even through synonyms, which WAVG's single averaged vector blurs.

**Word vectors.** The papers train word2vec on their own corpus (CLEAR); so do we by default
(:func:`train_word_vectors`: gensim CBOW on the lowercased words of the sentences at hand, one worker and a
fixed seed and hash so it is reproducible), or load a user's file in word2vec format
(:func:`load_word_vectors`). One vector space holds every language: a pair is always compared within one
language, and the few homographs across languages are mostly stopwords.
"""

from __future__ import annotations

import math
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from multimsd.alignment.aligners.stopwords import stopwords
from multimsd.errors import MultimsdError
from multimsd.text import word_tokenize

FEATURE_NAMES = (
    "common_content_words",
    "incl_complex_in_simple",
    "incl_simple_in_complex",
    "length_diff",
    "avg_word_length_diff",
    "common_char_ngrams",
    "word_cosine",
    "word_dice",
    "word_jaccard",
    "char_levenshtein",
    "word_levenshtein",
    "wavg",
    "cwasa",
)
N_FEATURES = len(FEATURE_NAMES)

_HAS_WORD_CHAR = re.compile(r"\w")


@dataclass(frozen=True)
class Sentence:
    """One sentence, preprocessed once for all the pairs it takes part in."""

    text: str  # lowercased, whitespace-normalised (character features)
    tokens: tuple[str, ...]  # lowercased words, in order, repeats kept
    words: frozenset[str]  # W: distinct words
    content: frozenset[str]  # C: distinct non-stopwords
    ngrams: frozenset[str]  # distinct character bigrams and trigrams (a bigram never equals a trigram)


def prepare(sentence: str, lang: str) -> Sentence:
    text = " ".join(sentence.lower().split())
    tokens = tuple(t for t in word_tokenize(text, lang) if _HAS_WORD_CHAR.search(t))
    words = frozenset(tokens)
    grams = {text[k : k + n] for n in (2, 3) for k in range(len(text) - n + 1)}
    return Sentence(text, tokens, words, words - stopwords(lang), frozenset(grams))


def prepare_docs(
    docs: list[tuple[list[str], list[str]]], langs: list[str]
) -> list[tuple[list[Sentence], list[Sentence]]]:
    return [
        ([prepare(s, lang) for s in c], [prepare(s, lang) for s in s_]) for (c, s_), lang in zip(docs, langs)
    ]


# ---------------------------------------------------------------------------------------------- word vectors
def _stable_hash(s: str) -> int:
    # gensim seeds each word's initial vector with hash(word + seed); Python's str hash changes per process.
    return zlib.crc32(s.encode("utf-8"))


def train_word_vectors(
    token_lists: list[list[str]] | list[tuple[str, ...]],
    dim: int = 50,
    window: int = 5,
    min_count: int = 1,
    epochs: int = 20,
    seed: int = 42,
):
    """word2vec (CBOW) on the given sentences, deterministic: one worker, fixed seed, a stable hash."""
    from gensim.models import Word2Vec

    sentences = [list(t) for t in token_lists if t]
    if not sentences:
        raise MultimsdError("no words to train word vectors on")
    model = Word2Vec(
        sentences=sentences,
        vector_size=dim,
        window=window,
        min_count=min_count,
        epochs=epochs,
        seed=seed,
        workers=1,
        hashfxn=_stable_hash,
    )
    return model.wv


def load_word_vectors(path: str | Path, binary: bool = False):
    """A user's word vectors in word2vec format (text, or binary with ``binary=True``)."""
    from gensim.models import KeyedVectors

    p = Path(path).expanduser()
    if not p.is_file():
        raise MultimsdError(f"word vectors {p}: no such file")
    try:
        return KeyedVectors.load_word2vec_format(str(p), binary=binary)
    except Exception as e:  # gensim raises ValueError/UnicodeDecodeError/EOFError on a bad file
        kind = "binary" if binary else "text"
        raise MultimsdError(f"word vectors {p}: not a {kind} word2vec file ({type(e).__name__})") from None


# ---------------------------------------------------------------------------------------------- one pair
def _levenshtein(a, b) -> int:
    """Plain dynamic-programming edit distance (unit costs) over two sequences: the reference implementation."""
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def _div(a: float, b: float) -> float:
    return a / b if b else 0.0


def _unit(v: np.ndarray) -> np.ndarray | None:
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else None


def pair_features(c: Sentence, s: Sentence, vectors=None) -> np.ndarray:
    """The 13 features of one (complex, simple) pair, computed directly from the definitions."""
    inter = len(c.words & s.words)
    nc, ns = len(c.words), len(s.words)
    avg_c = _div(sum(map(len, c.tokens)), len(c.tokens))
    avg_s = _div(sum(map(len, s.tokens)), len(s.tokens))
    wavg = cwasa = 0.0
    if vectors is not None:
        kv = vectors.key_to_index
        vc = [vectors.vectors[kv[t]].astype(np.float64) for t in c.tokens if t in kv]
        vs = [vectors.vectors[kv[t]].astype(np.float64) for t in s.tokens if t in kv]
        if vc and vs:
            a, b = _unit(np.mean(vc, axis=0)), _unit(np.mean(vs, axis=0))
            wavg = float(a @ b) if a is not None and b is not None else 0.0
        uc = [w for w in sorted(c.words) if w in kv]
        us = [w for w in sorted(s.words) if w in kv]
        if uc and us:
            unit = {w: _unit(vectors.vectors[kv[w]].astype(np.float64)) for w in uc + us}

            def sim(u: str, v: str) -> float:
                return float(unit[u] @ unit[v]) if unit[u] is not None and unit[v] is not None else 0.0

            def best(word: str, others: list[str], forward: bool) -> str:
                top, top_sim = others[0], -math.inf
                for o in others:  # strict > keeps the first of equal similarities
                    v = sim(word, o) if forward else sim(o, word)
                    if v > top_sim:
                        top, top_sim = o, v
                return top

            edges = {(u, best(u, us, True)) for u in uc} | {(best(v, uc, False), v) for v in us}
            sims = [sim(u, v) for u, v in edges if sim(u, v) > 0]
            cwasa = sum(sims) / len(sims) if sims else 0.0
    return np.array(
        [
            len(c.content & s.content),
            _div(inter, nc),
            _div(inter, ns),
            len(c.tokens) - len(s.tokens),
            avg_c - avg_s,
            len(c.ngrams & s.ngrams),
            _div(inter, math.sqrt(nc * ns)),
            _div(2 * inter, nc + ns),
            _div(inter, len(c.words | s.words)),
            _levenshtein(c.text, s.text),
            _levenshtein(c.tokens, s.tokens),
            wavg,
            cwasa,
        ],
        dtype=np.float64,
    )


# ---------------------------------------------------------------------------------------------- all pairs
def _intersections(sets_c: list[frozenset], sets_s: list[frozenset]) -> np.ndarray:
    """|X_i ∩ Y_j| for all i, j: a product of binary incidence matrices over the article's vocabulary."""
    vocab: dict[str, int] = {}
    for st in (*sets_c, *sets_s):
        for x in st:
            vocab.setdefault(x, len(vocab))

    def incidence(sets: list[frozenset]) -> np.ndarray:
        mat = np.zeros((len(sets), max(len(vocab), 1)), dtype=np.float64)
        for r, st in enumerate(sets):
            mat[r, [vocab[x] for x in st]] = 1.0
        return mat

    return incidence(sets_c) @ incidence(sets_s).T


def _safe_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.divide(a, b, out=np.zeros(np.broadcast(a, b).shape), where=b != 0)


def _cwasa_matrix(c: list[Sentence], s: list[Sentence], vectors) -> np.ndarray:
    """CWASA of all pairs: one word-by-word cosine matrix per article pair, then per-pair edge sets."""
    out = np.zeros((len(c), len(s)))
    kv = vectors.key_to_index
    uc = [[w for w in sorted(x.words) if w in kv] for x in c]
    us = [[w for w in sorted(x.words) if w in kv] for x in s]
    vocab = sorted({w for ws in uc + us for w in ws})
    if not vocab:
        return out
    pos = {w: k for k, w in enumerate(vocab)}
    emb = vectors.vectors[[kv[w] for w in vocab]].astype(np.float64)
    norms = np.linalg.norm(emb, axis=1, keepdims=True)
    emb = np.divide(emb, norms, out=np.zeros_like(emb), where=norms > 0)
    sim = emb @ emb.T
    ic = [np.array([pos[w] for w in ws], dtype=np.int64) for ws in uc]
    is_ = [np.array([pos[w] for w in ws], dtype=np.int64) for ws in us]
    for i, a in enumerate(ic):
        if not len(a):
            continue
        rows = sim[a]
        for j, b in enumerate(is_):
            if not len(b):
                continue
            block = rows[:, b]  # (|U_c|, |U_s|)
            fwd = block.argmax(axis=1)  # best simple word of each complex word
            bwd = block.argmax(axis=0)  # best complex word of each simple word
            f = block[np.arange(len(a)), fwd]
            g = block[bwd, np.arange(len(b))]
            # A backward edge (bwd[v], v) is already a forward edge iff v is its complex word's best match.
            new = fwd[bwd] != np.arange(len(b))
            keep_f, keep_g = f > 0, (g > 0) & new
            n = int(keep_f.sum() + keep_g.sum())
            if n:
                out[i, j] = (f[keep_f].sum() + g[keep_g].sum()) / n
    return out


def _wavg_matrix(c: list[Sentence], s: list[Sentence], vectors) -> np.ndarray:
    kv = vectors.key_to_index

    def means(sents: list[Sentence]) -> np.ndarray:
        m = np.zeros((len(sents), vectors.vector_size))
        for r, x in enumerate(sents):
            idx = [kv[t] for t in x.tokens if t in kv]
            if idx:
                m[r] = vectors.vectors[idx].astype(np.float64).mean(axis=0)
        norms = np.linalg.norm(m, axis=1, keepdims=True)
        return np.divide(m, norms, out=np.zeros_like(m), where=norms > 0)

    return means(c) @ means(s).T


def article_features(c: list[Sentence], s: list[Sentence], vectors=None) -> np.ndarray:
    """Features of every pair of one article pair: shape (m * n, 13), row i * n + j is pair (i, j)."""
    from rapidfuzz import process
    from rapidfuzz.distance import Levenshtein

    m, n = len(c), len(s)
    if not m or not n:
        return np.zeros((0, N_FEATURES), dtype=np.float32)
    inter = _intersections([x.words for x in c], [x.words for x in s])
    nc = np.array([len(x.words) for x in c], dtype=np.float64)[:, None]
    ns = np.array([len(x.words) for x in s], dtype=np.float64)[None, :]
    len_c = np.array([len(x.tokens) for x in c], dtype=np.float64)
    len_s = np.array([len(x.tokens) for x in s], dtype=np.float64)
    avg_c = _safe_div(np.array([sum(map(len, x.tokens)) for x in c], dtype=np.float64), len_c)
    avg_s = _safe_div(np.array([sum(map(len, x.tokens)) for x in s], dtype=np.float64), len_s)
    feats = np.zeros((m, n, N_FEATURES), dtype=np.float64)
    feats[..., 0] = _intersections([x.content for x in c], [x.content for x in s])
    feats[..., 1] = _safe_div(inter, nc)
    feats[..., 2] = _safe_div(inter, ns)
    feats[..., 3] = len_c[:, None] - len_s[None, :]
    feats[..., 4] = avg_c[:, None] - avg_s[None, :]
    feats[..., 5] = _intersections([x.ngrams for x in c], [x.ngrams for x in s])
    feats[..., 6] = _safe_div(inter, np.sqrt(nc * ns))
    feats[..., 7] = _safe_div(2 * inter, nc + ns)
    feats[..., 8] = _safe_div(inter, nc + ns - inter)
    # rapidfuzz compares strings by character and lists of strings by element: both edit distances at C speed.
    feats[..., 9] = process.cdist([x.text for x in c], [x.text for x in s], scorer=Levenshtein.distance)
    feats[..., 10] = process.cdist(
        [list(x.tokens) for x in c], [list(x.tokens) for x in s], scorer=Levenshtein.distance
    )
    if vectors is not None:
        feats[..., 11] = _wavg_matrix(c, s, vectors)
        feats[..., 12] = _cwasa_matrix(c, s, vectors)
    return feats.reshape(m * n, N_FEATURES).astype(np.float32)
