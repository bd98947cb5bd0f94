"""EASSE-style quality-estimation features of a system output against its source (no reference needed).

These are the sentence-pair features of EASSE's ``corpus_quality_estimation`` (which takes them from
``tseval``), re-implemented for all nine languages, each averaged over the sentence pairs (macro mean).
For one pair, with ``o`` / ``s`` the normalised source / system strings (see below) and ``O`` / ``S``
their token multisets (``|X|`` = number of tokens, ``X - Y`` = multiset difference):

* ``compression_ratio``     = ``len(s) / len(o)`` in characters (0 when ``o`` is empty, as tseval);
* ``levenshtein_similarity``= ``1 - indel_distance(o, s) / (len(o) + len(s))``, i.e. python-Levenshtein's
  ``ratio`` that EASSE uses (a substitution costs 2), in [0, 1]; 1 for two empty strings
  (``rapidfuzz.distance.Indel.normalized_similarity``);
* ``exact_copies``          = 1 if ``o == s`` else 0 (so the mean is the proportion of copies);
* ``additions_proportion``  = ``|S - O| / max(|O|, |S|)`` -- tokens added by the system;
* ``deletions_proportion``  = ``|O - S| / max(|O|, |S|)`` -- source tokens deleted;
  both 0 when both sentences are empty. The denominator ``max(|O|, |S|)`` is EASSE's (tseval's).

Normalisation (EASSE: ``normalize(sent, lowercase, tokenizer)`` on both sides before every feature):
tokens come from ``normalize(sent, lowercase=lowercase, tokenizer=<language default>)``.
For the space-delimited languages (tokenizer ``13a``) the character-level features use that same
normalised string, exactly as EASSE does. For ja and zh the tokenisers insert a space between every
token, which would inflate both character features, so they are computed on the sentence with only its
whitespace collapsed (and lowercased if asked) -- exact copies included.
EASSE's "sentence splits" (needs nltk's punkt data) and "lexical complexity" (needs a word-frequency
table) features are not computed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from multimsd.errors import MultimsdError
from multimsd.metrics.sari import normalize
from multimsd.metrics.tokenize import resolve_tokenizer

__all__ = ["SEGMENTING_TOKENIZERS", "quality_features", "sentence_features"]

SEGMENTING_TOKENIZERS = frozenset({"ja-mecab", "zh-char"})
"""Tokenisers that insert spaces between tokens of unspaced text (character features skip them)."""


def _indel_similarity(a: str, b: str) -> float:
    try:
        from rapidfuzz.distance import Indel
    except ImportError as exc:  # pragma: no cover - rapidfuzz is a dependency
        raise MultimsdError("quality features need rapidfuzz (pip install rapidfuzz)") from exc
    return float(Indel.normalized_similarity(a, b))


def sentence_features(
    orig_tokens: list[str], sys_tokens: list[str], orig_chars: str, sys_chars: str
) -> dict[str, float]:
    """The five features of one pair, from its token lists and character-level strings."""
    o_cnt, s_cnt = Counter(orig_tokens), Counter(sys_tokens)
    n_max = max(len(orig_tokens), len(sys_tokens))
    added = sum((s_cnt - o_cnt).values())
    deleted = sum((o_cnt - s_cnt).values())
    return {
        "compression_ratio": len(sys_chars) / len(orig_chars) if orig_chars else 0.0,
        "levenshtein_similarity": _indel_similarity(orig_chars, sys_chars),
        "exact_copies": 1.0 if orig_chars == sys_chars else 0.0,
        "additions_proportion": added / n_max if n_max else 0.0,
        "deletions_proportion": deleted / n_max if n_max else 0.0,
    }


def quality_features(
    orig_sents: Sequence[str],
    sys_sents: Sequence[str],
    *,
    lang: str,
    tokenizer: str | None = None,
    lowercase: bool = False,
) -> dict[str, Any]:
    """Mean EASSE quality-estimation features of ``sys_sents`` against ``orig_sents`` (module docstring).

    :param orig_sents: source sentences.
    :param sys_sents: system outputs, aligned with ``orig_sents``.
    :param lang: one of de en es fr it ja pt ru zh (chooses the default tokenizer).
    :param tokenizer: registered tokenizer name for the token features (default: the language's).
    :param lowercase: lowercase before everything (EASSE's function default False).
    :returns: ``{"compression_ratio", "levenshtein_similarity", "exact_copies", "additions_proportion",
        "deletions_proportion"}`` (floats; exact_copies is a proportion in [0, 1]) plus ``lang``,
        ``tokenizer``, ``lowercase`` and ``n_sentences``.
    """
    tok = resolve_tokenizer(lang, tokenizer)
    for name, value in (("orig_sents", orig_sents), ("sys_sents", sys_sents)):
        if isinstance(value, str):
            raise MultimsdError(f"{name} must be a list of sentences, not a single string")
    if len(orig_sents) != len(sys_sents):
        raise MultimsdError(
            f"quality features: input lengths differ: orig_sents has {len(orig_sents)}, "
            f"sys_sents has {len(sys_sents)}"
        )
    if len(sys_sents) == 0:
        raise MultimsdError("quality features of an empty corpus are undefined (no sentences)")
    segmenting = tok in SEGMENTING_TOKENIZERS

    def prep(sent: str) -> tuple[list[str], str]:
        if not isinstance(sent, str):
            raise MultimsdError(f"quality features expect sentences as strings, got {type(sent).__name__}")
        norm = normalize(sent, lowercase=lowercase, tokenizer=tok)
        if segmenting:
            chars = " ".join((sent.lower() if lowercase else sent).split())
        else:
            chars = norm
        return norm.split(), chars

    sums: Counter[str] = Counter()
    for orig, sys in zip(orig_sents, sys_sents):
        o_tokens, o_chars = prep(orig)
        s_tokens, s_chars = prep(sys)
        sums.update(sentence_features(o_tokens, s_tokens, o_chars, s_chars))
    n = len(sys_sents)
    keys = (
        "compression_ratio",
        "levenshtein_similarity",
        "exact_copies",
        "additions_proportion",
        "deletions_proportion",
    )
    result: dict[str, Any] = {key: sums[key] / n for key in keys}
    result.update(lang=lang, tokenizer=tok, lowercase=lowercase, n_sentences=n)
    return result
