"""Words as the lexical aligner and its paraphrase model see them (one definition, shared by both)."""

from __future__ import annotations

from multimsd.text import word_tokenize


def sentence_words(text: str, lang: str) -> list[str]:
    """Lowercased word tokens of ``text`` without punctuation-only tokens (shared with the paraphrase model)."""
    return [w for w in word_tokenize(text.lower(), lang) if any(ch.isalnum() for ch in w)]
