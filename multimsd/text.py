"""Language-aware word tokenisation for corpus statistics (vocabulary size, words per sentence)."""

from __future__ import annotations

import functools
import re

# Space-delimited languages: words and single punctuation marks, like Stanza/13a tokenisers count them.
_WORD_RE = re.compile(r"\w+|[^\w\s]", re.UNICODE)
# Chinese: one token per Han character (no word segmenter ships offline); runs of other word characters
# (numbers, Latin abbreviations such as "DVT") stay whole.
_ZH_RE = re.compile(
    r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^\W\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+|[^\w\s]"
)


@functools.cache
def _ja_tagger():
    try:
        import fugashi
    except ImportError:  # pragma: no cover - fugashi is a dependency
        return None
    return fugashi.Tagger()


def word_tokenize(text: str, lang: str) -> list[str]:
    """Split ``text`` into words: MeCab/UniDic morphemes for Japanese, Han characters for Chinese, else regex."""
    if lang == "ja":
        tagger = _ja_tagger()
        if tagger is not None:
            return [w.surface for w in tagger(text) if w.surface.strip()]
        return _ZH_RE.findall(text)
    if lang == "zh":
        return _ZH_RE.findall(text)
    return _WORD_RE.findall(text)
