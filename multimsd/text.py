"""Language-aware word tokenisation: the one module that owns the MeCab tagger and the Han (CJK) character
classes, for every language.

Users: :func:`word_tokenize` for corpus statistics, the aligners, the LSTM and medical-term matching; the
metrics' ``ja-mecab`` / ``zh-char`` tokenizers (:mod:`multimsd.metrics.tokenize`) through
:func:`ja_morphemes` and :func:`zh_metric_tokens`.

Two Chinese tokenisations exist on purpose, both one token per Han character, and kept apart so that no
stored number moves: :func:`zh_characters` (word counts; BMP Han blocks only, ``3.5`` -> ``3 . 5``) and
:func:`zh_metric_tokens` (the ``zh-char`` metric tokenizer; also U+3007 〇 and the supplementary-plane
extensions, decimal numbers such as ``3.5`` or ``1,000`` whole, as sacrebleu's ``13a`` keeps them).
"""

from __future__ import annotations

import functools
import re

from multimsd.errors import MultimsdError

__all__ = [
    "HAN",
    "HAN_BMP",
    "MecabUnavailable",
    "ja_morphemes",
    "mecab_tagger",
    "word_tokenize",
    "zh_characters",
    "zh_metric_tokens",
]

# Han ideographs. HAN_BMP: CJK Unified Ideographs Extension A + the main block + compatibility ideographs.
# HAN adds U+3007 (〇) and the supplementary-plane extensions B..H.
HAN_BMP = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
HAN = "\u3007" + HAN_BMP + "\U00020000-\U0003134f"

# Space-delimited languages: words and single punctuation marks, like Stanza/13a tokenisers count them.
_WORD_RE = re.compile(r"\w+|[^\w\s]", re.UNICODE)
# Chinese word counts: one token per Han character (no word segmenter ships offline); runs of other word
# characters (numbers, Latin abbreviations such as "DVT") stay whole.
_ZH_WORD_RE = re.compile(rf"[{HAN_BMP}]|[^\W{HAN_BMP}]+|[^\w\s]")
# Chinese for the metrics (zh-char): as above over all of HAN, and decimal numbers whole.
_ZH_METRIC_RE = re.compile(
    rf"[{HAN}]"  # one Han character
    r"|\d+(?:[.,]\d+)+"  # decimal number / digit groups: 3.5, 1,000
    rf"|[^\W{HAN}]+"  # run of other letters/digits (Latin words, numbers, kana, ...)
    r"|[^\w\s]"  # any other non-space character: punctuation or symbol
)


class MecabUnavailable(MultimsdError):
    """fugashi (MeCab) is not installed."""


@functools.cache
def mecab_tagger():
    """The process's one MeCab tagger (fugashi with the unidic-lite dictionary)."""
    try:
        import fugashi
    except ImportError as exc:  # pragma: no cover - fugashi is a dependency
        raise MecabUnavailable(
            "Japanese tokenisation needs fugashi and unidic-lite (pip install fugashi unidic-lite)"
        ) from exc
    try:
        return fugashi.Tagger()
    except RuntimeError as exc:  # pragma: no cover - no MeCab dictionary installed
        raise MultimsdError(f"MeCab could not start (is unidic-lite installed?): {exc}") from exc


def ja_morphemes(text: str) -> list[str]:
    """MeCab (UniDic) morpheme surfaces of ``text``, whitespace dropped."""
    return [w.surface for w in mecab_tagger()(text) if w.surface.strip()]


def zh_characters(text: str) -> list[str]:
    """Chinese word-count tokens: Han characters one by one, other word-character runs whole."""
    return _ZH_WORD_RE.findall(text)


def zh_metric_tokens(text: str) -> list[str]:
    """Chinese metric tokens (the ``zh-char`` tokenizer): see the module docstring."""
    return _ZH_METRIC_RE.findall(text)


def word_tokenize(text: str, lang: str) -> list[str]:
    """Split ``text`` into words: MeCab/UniDic morphemes for Japanese, Han characters for Chinese, else regex."""
    if lang == "ja":
        try:
            return ja_morphemes(text)
        except MecabUnavailable:  # pragma: no cover - without fugashi, characters are the next best thing
            return zh_characters(text)
    if lang == "zh":
        return zh_characters(text)
    return _WORD_RE.findall(text)
