"""The paraphrase identifier's data: sentence pairs, their split, the vocabulary and pre-trained word vectors.

What :mod:`multimsd.alignment.aligners.paraphrase` trains on (Adduru et al. 2018, section 2.3; see there for the
model): pairs read from TSV or JSONL (:func:`read_pairs`) or taken from the bundled sample's gold alignments
(:func:`gold_pairs`), split by first sentence and balanced with random negatives (:func:`make_splits`), the
words of the training part (:func:`build_vocab`), and word2vec vectors for them (:func:`load_word2vec`). No torch
here: these are lists, dictionaries and a numpy matrix.
"""

from __future__ import annotations

import csv
import logging
import random
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from multimsd import LANGUAGES
from multimsd.alignment.aligners.words import sentence_words
from multimsd.errors import MultimsdError

log = logging.getLogger(__name__)

PAD, UNK = 0, 1  # rows 0 and 1 of the embedding matrix
SPECIALS = ["<pad>", "<unk>"]


# ---------------------------------------------------------------------------------------------- words
def clipped_words(sentence: str, lang: str, max_tokens: int) -> list[str]:
    """The lexical aligner's words of ``sentence`` (lowercased, no punctuation), at most ``max_tokens``."""
    return sentence_words(sentence, lang)[:max_tokens]


# ---------------------------------------------------------------------------------------------- data
@dataclass
class PairRow:
    s1: str
    s2: str
    label: int | None  # None = a paraphrase whose negatives are to be drawn
    lang: str


S1_NAMES = ("s1", "sentence1", "question1", "complex", "text_a", "#1 string")
S2_NAMES = ("s2", "sentence2", "question2", "simple", "text_b", "#2 string")
LABEL_NAMES = ("label", "is_duplicate", "quality")
_TRUE, _FALSE = {"1", "1.0", "true", "yes"}, {"0", "0.0", "false", "no"}


def _label(value, where: str) -> int | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        return int(value)
    text = str(value).strip().lower()
    if text in _TRUE:
        return 1
    if text in _FALSE:
        return 0
    raise MultimsdError(f"{where}: label {value!r} is not 0/1")


def pair_lang(value, default: str, where: str) -> str:
    """``value`` (``default`` when empty) if it is one of the project's languages; else one error naming ``where``."""
    lang = default if value is None or value == "" else str(value)
    if lang not in LANGUAGES:
        raise MultimsdError(f"{where}: language {lang!r} is not one of {', '.join(LANGUAGES)}")
    return lang


def _row(s1, s2, label, lang, default_lang: str, where: str) -> PairRow:
    if not isinstance(s1, str) or not isinstance(s2, str) or not s1.strip() or not s2.strip():
        raise MultimsdError(f"{where}: a pair needs two non-empty sentences")
    return PairRow(s1, s2, _label(label, where), pair_lang(lang, default_lang, where))


def read_pairs(path: str | Path, default_lang: str = "en") -> list[PairRow]:
    """Sentence pairs from a JSONL file (keys s1, s2[, label][, lang]) or a TSV file.

    TSV: columns ``s1 s2 [label [lang]]``, or any order under a header that names them (Quora's
    ``question1 question2 is_duplicate``, ``sentence1 sentence2 label`` ... are recognised).
    """
    from multimsd.io import read_jsonl

    path = Path(path).expanduser()
    if not path.is_file():
        raise MultimsdError(f"paraphrase training file not found: {path}")
    rows = []
    if path.suffix in (".jsonl", ".json"):
        for lineno, rec in read_jsonl(path):
            where = f"{path}:{lineno}"
            if not isinstance(rec, dict):
                raise MultimsdError(f"{where}: expected a JSON object")
            s1 = next((rec[k] for k in S1_NAMES if k in rec), None)
            s2 = next((rec[k] for k in S2_NAMES if k in rec), None)
            label = next((rec[k] for k in LABEL_NAMES if k in rec), None)
            rows.append(_row(s1, s2, label, rec.get("lang"), default_lang, where))
    else:
        try:
            with open(path, encoding="utf-8", newline="") as f:
                table = list(csv.reader(f, delimiter="\t"))
        except UnicodeDecodeError:
            raise MultimsdError(f"{path}: not valid UTF-8") from None
        cols = {"s1": 0, "s2": 1, "label": 2, "lang": 3}
        start = 0
        if table:
            head = [c.strip().lower() for c in table[0]]
            if any(n in head for n in S1_NAMES) and any(n in head for n in S2_NAMES):
                start = 1

                def find(names):
                    return next((head.index(n) for n in names if n in head), None)

                cols = {"s1": find(S1_NAMES), "s2": find(S2_NAMES), "label": find(LABEL_NAMES)}
                cols["lang"] = head.index("lang") if "lang" in head else None
        for lineno, fields in enumerate(table[start:], start=start + 1):
            if not any(x.strip() for x in fields):
                continue
            where = f"{path}:{lineno}"
            if len(fields) < 2:
                raise MultimsdError(
                    f"{where}: expected tab-separated s1, s2[, label] (got {len(fields)} field)"
                )

            def get(key, fields=fields):
                k = cols[key]
                return fields[k] if k is not None and k < len(fields) else None

            rows.append(_row(get("s1"), get("s2"), get("label"), get("lang"), default_lang, where))
    if not rows:
        raise MultimsdError(f"{path}: no sentence pairs")
    return rows


def gold_pairs() -> list[PairRow]:
    """The bundled sample's gold alignments as paraphrase pairs (n:m items joined into one sentence each)."""
    from multimsd.gold import load_gold_docs

    rows = []
    for d in load_gold_docs(None):
        for ci, si in sorted(d.gold):
            rows.append(
                PairRow(" ".join(d.complex[k] for k in ci), " ".join(d.simple[k] for k in si), None, d.lang)
            )
    return rows


def _key(s: str) -> str:
    return " ".join(s.lower().split())


def make_splits(
    rows: list[PairRow], valid_fraction: float, test_fraction: float, swap: bool, seed: int
) -> dict[str, list[tuple[str, str, int, str]]]:
    """Split by first sentence, balance each part with random negatives, add swapped pairs.

    Returns ``{"train"|"validation"|"test": [(s1, s2, label, lang), ...]}``.
    """
    rng = random.Random(seed)
    groups: dict[tuple[str, str], list[PairRow]] = defaultdict(list)
    for r in rows:
        groups[(r.lang, _key(r.s1))].append(r)
    keys = sorted(groups)
    rng.shuffle(keys)
    n_valid = max(1, round(len(keys) * valid_fraction))
    n_test = max(1, round(len(keys) * test_fraction)) if test_fraction > 0 else 0
    if n_valid + n_test >= len(keys):
        raise MultimsdError(
            f"only {len(keys)} distinct first sentence(s): too few to split into train, validation"
            + (" and test" if n_test else "")
        )
    parts = {
        "validation": keys[:n_valid],
        "test": keys[n_valid : n_valid + n_test],
        "train": keys[n_valid + n_test :],
    }
    out = {}
    for name, part_keys in parts.items():
        part = [r for k in part_keys for r in groups[k]]
        labelled = [(r.s1, r.s2, 1 if r.label is None else r.label, r.lang) for r in part]
        labelled += _random_negatives(part, rng)
        if swap:
            labelled += [(s2, s1, y, lang) for s1, s2, y, lang in labelled if _key(s1) != _key(s2)]
        rng.shuffle(labelled)
        out[name] = labelled
    return out


def _random_negatives(part: list[PairRow], rng: random.Random) -> list[tuple[str, str, int, str]]:
    """Paper: random pairs of distinct sentences, not already a pair, until negatives match positives.

    Drawn per language (a cross-language pair would be a trivially easy negative) and inside one split part
    (a negative must not leak sentences from another part).
    """
    out = []
    for lang in sorted({r.lang for r in part}):
        rows = [r for r in part if r.lang == lang]
        pos = sum(1 for r in rows if r.label in (None, 1))
        need = pos - sum(1 for r in rows if r.label == 0)
        sents = sorted({s for r in rows for s in (r.s1, r.s2)})
        taken = {(_key(r.s1), _key(r.s2)) for r in rows} | {(_key(r.s2), _key(r.s1)) for r in rows}
        tries = 0
        while need > 0 and tries < 50 * pos + 100:
            tries += 1
            a, b = rng.sample(sents, 2) if len(sents) >= 2 else (sents[0], sents[0])
            ka, kb = _key(a), _key(b)
            if ka == kb or (ka, kb) in taken:
                continue
            taken |= {(ka, kb), (kb, ka)}
            out.append((a, b, 0, lang))
            need -= 1
        if need > 0:
            log.warning(
                "%s: could only draw %d of the negatives needed to balance the classes", lang, pos - need
            )
    return out


# ---------------------------------------------------------------------------------------------- vocabulary
def build_vocab(splits: dict, min_count: int, max_tokens: int) -> dict[str, int]:
    """Word -> row of the embedding matrix: the specials, then the training words seen ``min_count`` times, most
    frequent first (ties alphabetical, so the same data always gives the same rows)."""
    counts = Counter(
        w for s1, s2, _, lang in splits["train"] for s in (s1, s2) for w in clipped_words(s, lang, max_tokens)
    )
    words = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
    return {w: k for k, w in enumerate(SPECIALS + words)}


# ---------------------------------------------------------------------------------------------- embeddings
def load_word2vec(path: str, binary: bool, vocab: dict[str, int], dim: int) -> tuple[np.ndarray, int]:
    """An embedding matrix for ``vocab`` from a word2vec file: rows of words it lacks are 0 (paper's <unk>).

    Lookup is case-insensitive (our words are lowercased): an exactly lowercase entry wins over "Glioma".
    Returns the matrix and how many vocabulary words were found.
    """
    p = Path(path).expanduser()
    if not p.is_file():
        raise MultimsdError(f"word2vec file not found: {p}")
    matrix = np.zeros((len(vocab), dim), dtype=np.float32)
    exact: set[int] = set()  # rows filled from an all-lowercase entry: final
    seen: set[int] = set()  # rows filled from a capitalised variant: a lowercase entry may replace them

    def put(word: str, vec) -> None:
        k = vocab.get(word.lower())
        if k is None or k < len(SPECIALS) or k in exact or (k in seen and word != word.lower()):
            return
        matrix[k] = vec
        (exact if word == word.lower() else seen).add(k)

    if binary:
        from gensim.models import KeyedVectors

        try:
            kv = KeyedVectors.load_word2vec_format(str(p), binary=True)
        except Exception as e:  # gensim raises ValueError / EOFError / UnicodeError on a bad file
            raise MultimsdError(f"{p}: not a binary word2vec file ({type(e).__name__}: {e})") from None
        if kv.vector_size != dim:
            raise MultimsdError(
                f"{p}: vectors have dimension {kv.vector_size}, but paraphrase.embedding_dim={dim}"
            )
        for word in kv.index_to_key:
            put(word, kv[word])
    else:
        with open(p, encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, start=1):
                parts = line.rstrip("\n").rstrip().split(" ")
                if lineno == 1 and len(parts) == 2 and all(x.isdigit() for x in parts):
                    if int(parts[1]) != dim:  # the "count dim" header of the word2vec text format
                        raise MultimsdError(
                            f"{p}: vectors have dimension {parts[1]}, but paraphrase.embedding_dim={dim}"
                        )
                    continue
                if len(parts) < 2:
                    continue
                if len(parts) - 1 != dim:
                    raise MultimsdError(
                        f"{p}:{lineno}: vector of dimension {len(parts) - 1}, but paraphrase.embedding_dim={dim}"
                    )
                if vocab.get(parts[0].lower(), 0) >= len(SPECIALS):
                    try:
                        put(parts[0], np.asarray(parts[1:], dtype=np.float32))
                    except ValueError:
                        raise MultimsdError(f"{p}:{lineno}: not a word followed by numbers") from None
    return matrix, len(exact | seen)
