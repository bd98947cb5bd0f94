"""Language-aware tokenisers for the evaluation metrics, and the default tokeniser of each language.

SARI, BLEU and METEOR count whitespace-separated tokens, so for languages written without spaces the
tokeniser *is* part of the metric: sacrebleu's ``13a`` leaves a whole Japanese or Chinese clause as one
token, which makes ja/zh SARI meaningless. Importing this module (done by :mod:`multimsd.metrics`)
registers two tokenisers in the registry of :mod:`multimsd.metrics.sari`, built on :mod:`multimsd.text` (the
one owner of the MeCab tagger and the Han character classes):

``ja-mecab``
    MeCab morphemes from ``fugashi`` with the ``unidic-lite`` dictionary (both PyPI wheels, offline),
    surfaces joined by single spaces: ``"薬を飲んでください。"`` -> ``"薬 を 飲ん で ください 。"``.
``zh-char``
    One token per Han character; a run of other letters or digits (Latin words, numbers, kana, ...) stays
    one token, and a decimal number such as ``3.5`` or ``1,000`` is kept whole (as ``13a`` does);
    every other non-space character (punctuation, symbols) is its own token:
    ``"服用DVT药物3.5毫克。"`` -> ``"服 用 DVT 药 物 3.5 毫 克 。"``. (No word segmenter ships offline;
    character-level evaluation is the usual choice for Chinese simplification/MT metrics.)

Defaults per language (:data:`DEFAULT_TOKENIZER`, written into every result file by the evaluation stage):
``13a`` for the space-delimited languages de en es fr it pt ru, ``ja-mecab`` for ja, ``zh-char`` for zh.
"""

from __future__ import annotations

from multimsd.errors import MultimsdError
from multimsd.metrics.sari import get_tokenizer, register_tokenizer
from multimsd.text import ja_morphemes, zh_metric_tokens

__all__ = [
    "DEFAULT_TOKENIZER",
    "SUPPORTED_LANGS",
    "TOKENIZER_DESCRIPTIONS",
    "check_lang",
    "default_tokenizer",
    "ja_mecab_tokenize",
    "resolve_tokenizer",
    "zh_char_tokenize",
]

DEFAULT_TOKENIZER: dict[str, str] = {
    "de": "13a",
    "en": "13a",
    "es": "13a",
    "fr": "13a",
    "it": "13a",
    "ja": "ja-mecab",
    "pt": "13a",
    "ru": "13a",
    "zh": "zh-char",
}
"""Default tokeniser of each supported language (ISO 639-1 code -> registered tokenizer name)."""

SUPPORTED_LANGS: tuple[str, ...] = tuple(sorted(DEFAULT_TOKENIZER))

TOKENIZER_DESCRIPTIONS: dict[str, str] = {
    "13a": "sacrebleu 13a (mteval-v13a punctuation splitting; whitespace-delimited words)",
    "intl": "sacrebleu intl (13a plus Unicode punctuation/symbol splitting)",
    "none": "whitespace split (input already tokenised)",
    "pretokenized": "whitespace split (input already tokenised)",
    "ja-mecab": "MeCab morphemes (fugashi + unidic-lite), surfaces joined by spaces",
    "zh-char": "one token per Han character; Latin/digit runs and decimal numbers whole; punctuation separate",
}
"""One-line human-readable description of the built-in tokenisers (for result files and reports)."""


def check_lang(lang: str) -> str:
    """Return ``lang`` if it is one of the nine supported language codes, else raise MultimsdError."""
    if not isinstance(lang, str) or lang not in DEFAULT_TOKENIZER:
        raise MultimsdError(f"unsupported language {lang!r} (supported: {', '.join(SUPPORTED_LANGS)})")
    return lang


def default_tokenizer(lang: str) -> str:
    """Name of the default tokeniser for ``lang`` (``13a``, ``ja-mecab`` or ``zh-char``)."""
    return DEFAULT_TOKENIZER[check_lang(lang)]


def resolve_tokenizer(lang: str, tokenizer: str | None = None) -> str:
    """``tokenizer`` if given (checked to be registered), else the default of ``lang``."""
    if tokenizer is None:
        return default_tokenizer(lang)
    check_lang(lang)
    get_tokenizer(tokenizer)  # one-line MultimsdError on an unknown name
    return tokenizer


# The MeCab tagger and the Han character classes live in multimsd.text, shared with word_tokenize.
def ja_mecab_tokenize(sent: str) -> str:
    """MeCab (UniDic) morphemes of ``sent`` joined by single spaces."""
    return " ".join(ja_morphemes(sent))


def zh_char_tokenize(sent: str) -> str:
    """Chinese character tokenisation of ``sent`` (see the module docstring), tokens joined by spaces."""
    return " ".join(zh_metric_tokens(sent))


register_tokenizer("ja-mecab", ja_mecab_tokenize, overwrite=True)
register_tokenizer("zh-char", zh_char_tokenize, overwrite=True)
