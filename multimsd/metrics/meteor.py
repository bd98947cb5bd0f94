"""METEOR (Banerjee & Lavie 2005) as ``nltk.translate.meteor_score`` computes it (same numbers in the
``exact`` and ``exact+stem`` modes, given the same tokens and stemmer; checked in the tests).

Definition followed (that of nltk 3.10's ``single_meteor_score`` / ``meteor_score``):

1. Both sentences are lowercased and tokenised (our tokeniser registry; default per language from
   :data:`multimsd.metrics.tokenize.DEFAULT_TOKENIZER`), giving unigram lists ``h`` (hypothesis) and
   ``r`` (reference).
2. Unigrams are aligned one-to-one in successive stages, each stage only seeing the words left unmatched
   by the previous ones: **exact** (identical tokens), **stem** (identical Snowball stems), **synonym**
   (the reference token is one of the hypothesis token's WordNet lemma names without ``_``; the words
   themselves are looked up, whereas nltk looks up their *stems* -- the one deliberate difference, which
   only affects the synonym mode).
   Within a stage the alignment is nltk's greedy one: hypothesis positions are visited from last to
   first, and each takes the *last* still-unmatched reference position that fits. (This is not the
   original METEOR's search for the alignment with fewest crossings; nltk does not do that either.)
3. With ``m`` matches: ``P = m/|h|``, ``R = m/|r|``,
   ``Fmean = P*R / (alpha*P + (1-alpha)*R)`` (alpha = 0.9, i.e. Banerjee & Lavie's ``10PR/(R+9P)``).
4. Matches sorted by hypothesis position form ``ch`` chunks (maximal runs adjacent in both sentences);
   ``Penalty = gamma * (ch/m)**beta`` (gamma = 0.5, beta = 3); ``score = Fmean * (1 - Penalty)``;
   0 when there is no match or either side is empty.
5. Several references: the maximum of the per-reference scores (as nltk's ``meteor_score``).
6. Corpus score: the arithmetic mean of the sentence scores, times 100 (nltk has no corpus METEOR;
   HF ``evaluate``'s "meteor" reports the same mean, in [0, 1]).

Modes (which stages run; reported in the result as ``mode``):

* ``exact+stem`` -- de en es fr it pt ru (nltk's Snowball stemmer for the language; nltk's own default
  stemmer is the original Porter stemmer, so English numbers can differ slightly from nltk's defaults).
* ``exact+stem+synonym`` -- English only, and only when nltk's WordNet data is already installed locally
  (nothing is ever downloaded). ``mode="auto"`` picks it when available.
* ``exact`` -- ja and zh (no stemmer or offline synonym resource; tokens come from ``ja-mecab`` /
  ``zh-char``); can also be requested explicitly for any language.

METEOR scores from different modes are not comparable: always report the mode with the score.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from multimsd.errors import MultimsdError
from multimsd.metrics.sari import normalize
from multimsd.metrics.tokenize import check_lang, resolve_tokenizer

__all__ = [
    "METEOR_MODES",
    "SNOWBALL_LANGUAGE",
    "corpus_meteor",
    "meteor_mode",
    "sentence_meteor",
    "single_meteor",
    "wordnet_available",
]

METEOR_MODES = ("exact", "exact+stem", "exact+stem+synonym")

SNOWBALL_LANGUAGE: dict[str, str] = {
    "de": "german",
    "en": "english",
    "es": "spanish",
    "fr": "french",
    "it": "italian",
    "pt": "portuguese",
    "ru": "russian",
}
"""Languages with a stem stage, and the nltk Snowball stemmer used for each."""

SYNONYM_LANGS = frozenset({"en"})

Match = tuple[int, int]
Enum = list[tuple[int, str]]


# --------------------------------------------------------------------------------------------------------
# Resources
# --------------------------------------------------------------------------------------------------------


@functools.cache
def _stemmer(lang: str) -> Callable[[str], str]:
    try:
        from nltk.stem.snowball import SnowballStemmer
    except ImportError as exc:  # pragma: no cover - nltk is a dependency
        raise MultimsdError("METEOR's stem stage needs nltk (pip install nltk)") from exc
    return functools.lru_cache(maxsize=200_000)(SnowballStemmer(SNOWBALL_LANGUAGE[lang]).stem)


@functools.cache
def _local_wordnet() -> Any | None:
    """nltk's WordNet reader if its data is installed locally, else None. Never downloads."""
    try:
        from nltk.corpus import wordnet
    except ImportError:  # pragma: no cover - nltk is a dependency
        return None
    try:
        # nltk's lazy corpus loader looks the data up in nltk.data.path on first use and raises
        # LookupError when it is missing; it never downloads.
        wordnet.synsets("dog")
    except (LookupError, OSError):
        return None
    return wordnet


def wordnet_available() -> bool:
    """True when nltk's WordNet data is installed locally (so ``exact+stem+synonym`` is possible)."""
    return _local_wordnet() is not None


def meteor_mode(lang: str, mode: str = "auto", *, wordnet: Any | None = None) -> str:
    """The matching stages METEOR will use for ``lang``: one of :data:`METEOR_MODES`.

    ``auto`` = the richest mode available offline: ``exact+stem+synonym`` for English when WordNet is
    installed (or a ``wordnet`` object is passed), ``exact+stem`` for the other Snowball languages (and
    English without WordNet), ``exact`` for ja and zh. An explicit mode the language or the installation
    cannot provide raises :class:`MultimsdError`.
    """
    check_lang(lang)
    has_stem = lang in SNOWBALL_LANGUAGE
    has_syn = lang in SYNONYM_LANGS and (wordnet is not None or wordnet_available())
    if mode == "auto":
        if has_syn:
            return "exact+stem+synonym"
        return "exact+stem" if has_stem else "exact"
    if mode not in METEOR_MODES:
        raise MultimsdError(f"unknown METEOR mode {mode!r} (known: auto, {', '.join(METEOR_MODES)})")
    if mode != "exact" and not has_stem:
        raise MultimsdError(f"METEOR mode {mode!r} is not available for {lang!r} (no stemmer): use 'exact'")
    if mode == "exact+stem+synonym" and not has_syn:
        if lang not in SYNONYM_LANGS:
            raise MultimsdError(f"METEOR synonym matching is only available for English, not {lang!r}")
        raise MultimsdError(
            "METEOR mode 'exact+stem+synonym' needs nltk's WordNet data installed locally "
            "(nltk_data/corpora/wordnet); it is never downloaded. Use mode='exact+stem' or 'auto'"
        )
    return mode


# --------------------------------------------------------------------------------------------------------
# Alignment and score (nltk-equivalent)
# --------------------------------------------------------------------------------------------------------


def _match_stage(hyp: Enum, ref: Enum, candidates: Callable[[str], set[str] | None] | None = None):
    """One greedy alignment stage. ``hyp``/``ref``: (original position, key) pairs still unmatched.

    Hypothesis entries are visited from last to first; each takes the last unmatched reference entry
    whose key equals its key (``candidates is None``) or is in ``candidates(key) | {key}``.
    Returns (matches, unmatched hyp, unmatched ref).
    """
    positions: dict[str, list[int]] = defaultdict(list)
    for j, (_, key) in enumerate(ref):
        positions[key].append(j)
    matches: list[Match] = []
    used_h: set[int] = set()
    used_r: set[int] = set()
    for i in range(len(hyp) - 1, -1, -1):
        key = hyp[i][1]
        if candidates is None:
            pos = positions.get(key)
            best = key if pos else None
        else:
            best, best_j = None, -1
            for cand in candidates(key) | {key}:
                pos = positions.get(cand)
                if pos and pos[-1] > best_j:
                    best, best_j = cand, pos[-1]
        if best is None:
            continue
        j = positions[best].pop()
        used_h.add(i)
        used_r.add(j)
        matches.append((hyp[i][0], ref[j][0]))
    rest_h = [p for i, p in enumerate(hyp) if i not in used_h]
    rest_r = [p for j, p in enumerate(ref) if j not in used_r]
    return matches, rest_h, rest_r


def _synonyms(wordnet: Any) -> Callable[[str], set[str]]:
    @functools.lru_cache(maxsize=100_000)
    def syns(word: str) -> frozenset[str]:
        return frozenset(
            lemma.name()
            for synset in wordnet.synsets(word)
            for lemma in synset.lemmas()
            if "_" not in lemma.name()
        )

    return lambda word: set(syns(word))


def _align(
    hyp: list[str], ref: list[str], stem: Callable[[str], str] | None, syn: Callable[[str], set[str]] | None
) -> list[Match]:
    h: Enum = list(enumerate(hyp))
    r: Enum = list(enumerate(ref))
    matches, h, r = _match_stage(h, r)
    if stem is not None and h and r:
        more, h, r = _match_stage([(i, stem(w)) for i, w in h], [(j, stem(w)) for j, w in r])
        # The synonym stage looks up the *words* left unmatched, not their stems (nltk passes the stems
        # on to WordNet, so that "happy" is looked up as "happi"; the one deliberate difference).
        h = [(i, hyp[i]) for i, _ in h]
        r = [(j, ref[j]) for j, _ in r]
        matches += more
    if syn is not None and h and r:
        more, h, r = _match_stage(h, r, syn)
        matches += more
    matches.sort(key=lambda m: m[0])
    return matches


def _chunks(matches: list[Match]) -> int:
    chunks = 1
    for (h0, r0), (h1, r1) in zip(matches, matches[1:]):
        if not (h1 == h0 + 1 and r1 == r0 + 1):
            chunks += 1
    return chunks


def single_meteor(
    hyp_tokens: Sequence[str],
    ref_tokens: Sequence[str],
    *,
    stem: Callable[[str], str] | None = None,
    synonyms: Callable[[str], set[str]] | None = None,
    alpha: float = 0.9,
    beta: float = 3.0,
    gamma: float = 0.5,
) -> float:
    """METEOR in [0, 1] of one tokenised hypothesis against one tokenised reference (no lowercasing here).

    ``stem`` maps a token to its stem (stem stage skipped when None); ``synonyms`` maps a token to a set of
    synonyms (synonym stage skipped when None).
    """
    hyp, ref = list(hyp_tokens), list(ref_tokens)
    if not hyp or not ref:
        return 0.0
    matches = _align(hyp, ref, stem, synonyms)
    m = len(matches)
    if m == 0:
        return 0.0
    p, r = m / len(hyp), m / len(ref)
    fmean = p * r / (alpha * p + (1 - alpha) * r)
    penalty = gamma * (_chunks(matches) / m) ** beta
    return (1 - penalty) * fmean


# --------------------------------------------------------------------------------------------------------
# Public API on raw sentences
# --------------------------------------------------------------------------------------------------------


class _Scorer:
    def __init__(
        self,
        lang: str,
        tokenizer: str | None,
        mode: str,
        lowercase: bool,
        wordnet: Any | None,
        alpha: float,
        beta: float,
        gamma: float,
    ) -> None:
        self.tokenizer = resolve_tokenizer(lang, tokenizer)
        self.mode = meteor_mode(lang, mode, wordnet=wordnet)
        self.lowercase = lowercase
        self.params = {"alpha": alpha, "beta": beta, "gamma": gamma}
        self.stem = _stemmer(lang) if self.mode != "exact" else None
        self.syn = None
        if self.mode == "exact+stem+synonym":
            self.syn = _synonyms(wordnet if wordnet is not None else _local_wordnet())

    def tokens(self, sent: str) -> list[str]:
        if not isinstance(sent, str):
            raise MultimsdError(f"METEOR expects sentences as strings, got {type(sent).__name__}")
        return normalize(sent, lowercase=self.lowercase, tokenizer=self.tokenizer).split()

    def sentence(self, hyp: str, refs: Sequence[str]) -> float:
        h = self.tokens(hyp)
        return max(
            single_meteor(h, self.tokens(ref), stem=self.stem, synonyms=self.syn, **self.params)
            for ref in refs
        )


def sentence_meteor(
    sys_sent: str,
    refs: Sequence[str],
    *,
    lang: str = "en",
    tokenizer: str | None = None,
    mode: str = "auto",
    lowercase: bool = True,
    wordnet: Any | None = None,
    alpha: float = 0.9,
    beta: float = 3.0,
    gamma: float = 0.5,
) -> float:
    """METEOR of one system sentence against its references, in [0, 100] (max over the references).

    Parameters as :func:`corpus_meteor`; ``refs`` is the list of references of *this* sentence.
    Use :func:`meteor_mode` to know which mode was used.
    """
    if isinstance(refs, str) or len(refs) == 0:
        raise MultimsdError("sentence_meteor: refs must be a non-empty list of reference strings")
    scorer = _Scorer(lang, tokenizer, mode, lowercase, wordnet, alpha, beta, gamma)
    return 100.0 * scorer.sentence(sys_sent, refs)


def corpus_meteor(
    sys_sents: Sequence[str],
    refs_sents: Sequence[Sequence[str]],
    *,
    lang: str = "en",
    tokenizer: str | None = None,
    mode: str = "auto",
    lowercase: bool = True,
    wordnet: Any | None = None,
    alpha: float = 0.9,
    beta: float = 3.0,
    gamma: float = 0.5,
) -> dict[str, Any]:
    """Corpus METEOR: the mean of the sentence METEOR scores, in [0, 100] (definition: module docstring).

    :param sys_sents: system outputs.
    :param refs_sents: reference *streams* (``refs_sents[k][i]`` = k-th reference of sentence i), as for
        SARI and BLEU; each sentence scores the max over its references.
    :param lang: one of de en es fr it ja pt ru zh; chooses the default tokenizer and the stemmer.
    :param tokenizer: registered tokenizer name; default :func:`~multimsd.metrics.tokenize.default_tokenizer`.
    :param mode: ``auto`` (default) or one of :data:`METEOR_MODES` (see :func:`meteor_mode`).
    :param lowercase: lowercase before tokenising (nltk's default preprocessing; default True).
    :param wordnet: optional object with nltk's WordNet interface (``synsets(word)`` -> synsets with
        ``lemmas()`` -> lemmas with ``name()``) to use instead of nltk's locally installed WordNet.
    :returns: ``{"meteor": float, "mode": str, "lang", "tokenizer", "lowercase", "n_sentences", "n_refs",
        "alpha", "beta", "gamma"}``.
    """
    if isinstance(sys_sents, str):
        raise MultimsdError("sys_sents must be a list of sentences, not a single string")
    if isinstance(refs_sents, str) or len(refs_sents) == 0:
        raise MultimsdError("refs_sents must be a non-empty list of reference streams (lists of sentences)")
    n = len(sys_sents)
    for k, stream in enumerate(refs_sents):
        if isinstance(stream, str):
            raise MultimsdError(
                f"refs_sents[{k}] is a string: refs_sents must be a list of reference streams, "
                "refs_sents[k][i] being the k-th reference of sentence i"
            )
        if len(stream) != n:
            raise MultimsdError(
                f"METEOR input lengths differ: sys_sents has {n}, refs_sents[{k}] has {len(stream)} "
                "(refs_sents is a list of reference streams, each aligned with sys_sents)"
            )
    if n == 0:
        raise MultimsdError("METEOR of an empty corpus is undefined (no system sentences)")
    scorer = _Scorer(lang, tokenizer, mode, lowercase, wordnet, alpha, beta, gamma)
    total = sum(scorer.sentence(hyp, refs) for hyp, *refs in zip(sys_sents, *refs_sents))
    return {
        "meteor": 100.0 * total / n,
        "mode": scorer.mode,
        "lang": lang,
        "tokenizer": scorer.tokenizer,
        "lowercase": lowercase,
        "n_sentences": n,
        "n_refs": len(refs_sents),
        **scorer.params,
    }
