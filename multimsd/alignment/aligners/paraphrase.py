"""Siamese BiLSTM paraphrase identifier: Adduru et al. (2018), section 2.3 — the lexical aligner's 12th score.

The string similarities of :mod:`multimsd.alignment.aligners.lexical` miss paraphrases written with other words
("glioma" / "brain tumour"), so the paper adds the probability of a neural paraphrase classifier::

    s1 -> words -> embeddings -> 3 x BiLSTM --u--.                   (the two arms share every weight)
                                                 +-> [u; v] -> dense ReLU -> dense sigmoid -> P(paraphrase)
    s2 -> words -> embeddings -> 3 x BiLSTM --v--'

``u`` and ``v`` are the final forward and backward hidden states of the last BiLSTM layer. Paper settings (the
config defaults): 300 units in every BiLSTM (per direction here) and dense layer, at most 30 words per
sentence, word2vec inputs (``embeddings_path``; without it the embeddings are learnt), Adam with Nesterov
momentum (``torch.optim.NAdam``), binary cross-entropy, batch 512, early stopping on the validation loss with
patience 3 (the best epoch's weights are kept).

Data (``train_path``): TSV or JSONL pairs ``(s1, s2[, label][, lang])``. As the paper did with Paralex (only
paraphrases) merged into Quora, rows without a label are paraphrases, and random pairs of distinct sentences
(same language, not already a pair) are added as non-paraphrases until the classes balance. Pairs are split
into train / validation / test grouped by their first sentence, so no source sentence is in two parts, and
(paper) each pair is also added swapped. ``train_path: null`` trains on the bundled sample's gold alignments.
Words are the lexical aligner's: lowercased, punctuation dropped, language-aware tokens.

Differences from the paper, on purpose: sequences are packed rather than padded with <unk> to 30, so a short
sentence's encoding does not depend on padding; and training data is whatever you give it (the paper used
Quora + Paralex, 70 million balanced pairs, which are not bundled).

The saved model is a directory: ``paraphrase_config.json`` (sizes, training settings), ``vocab.json`` (the
word list, index = row of the embedding matrix), ``model.safetensors`` (the weights; no pickle) and
``metrics.json``.

Why this module is long: it is one model's whole life — network, training-data reading and splitting,
training loop with early stopping, saving and loading — and each part exists only for the others.
"""

from __future__ import annotations

import copy
import csv
import json
import logging
import random
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence
from tqdm.auto import tqdm

from multimsd import LANGUAGES
from multimsd.alignment.aligners.words import sentence_words
from multimsd.errors import MultimsdError
from multimsd.fsutil import atomic_directory, check_replaceable

if TYPE_CHECKING:
    from multimsd.alignment.aligners.paraphrase_config import ParaphraseConfig

log = logging.getLogger(__name__)

FORMAT = "multimsd-siamese-bilstm"
CONFIG_FILE = "paraphrase_config.json"  # also the marker that a directory is one of our models
VOCAB_FILE = "vocab.json"
WEIGHTS_FILE = "model.safetensors"
METRICS_FILE = "metrics.json"
PAD, UNK = 0, 1  # rows 0 and 1 of the embedding matrix
SPECIALS = ["<pad>", "<unk>"]
MODEL_KEYS = ("vocab_size", "embedding_dim", "hidden_size", "num_layers", "dense_size")


# ---------------------------------------------------------------------------------------------- the network
class SiameseBiLSTM(nn.Module):
    """Two weight-shared arms of stacked BiLSTMs; the concatenated encodings -> dense ReLU -> one logit."""

    def __init__(
        self, vocab_size: int, embedding_dim: int, hidden_size: int, num_layers: int, dense_size: int
    ):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=PAD)
        self.lstm = nn.LSTM(
            embedding_dim, hidden_size, num_layers=num_layers, bidirectional=True, batch_first=True
        )
        self.dense = nn.Linear(4 * hidden_size, dense_size)  # [u; v], each 2 * hidden (two directions)
        self.out = nn.Linear(dense_size, 1)

    def encode(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """One arm: (B, T) word ids and their lengths -> (B, 2 * hidden)."""
        packed = pack_padded_sequence(
            self.embedding(ids), lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        _, (h, _) = self.lstm(packed)  # h: (layers * 2, B, hidden), back in the input order
        return torch.cat([h[-2], h[-1]], dim=-1)  # the last layer's forward and backward states

    def head(self, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return self.out(torch.relu(self.dense(torch.cat([u, v], dim=-1)))).squeeze(-1)

    def forward(self, ids1, len1, ids2, len2) -> torch.Tensor:
        """Logits of P(paraphrase) (the sigmoid is in the loss, for numerical stability)."""
        return self.head(self.encode(ids1, len1), self.encode(ids2, len2))


@dataclass
class ParaphraseModel:
    """A trained identifier with what it needs to read sentences: the vocabulary and the length limit."""

    net: SiameseBiLSTM
    vocab: dict[str, int]
    max_tokens: int
    device: str
    meta: dict

    def ids(self, sentences: list[str], lang: str) -> tuple[torch.Tensor, torch.Tensor]:
        return _tensorize([_words(s, lang, self.max_tokens) for s in sentences], self.vocab)


# ---------------------------------------------------------------------------------------------- words
def _words(sentence: str, lang: str, max_tokens: int) -> list[str]:
    return sentence_words(sentence, lang)[:max_tokens]


def _tensorize(token_lists: list[list[str]], vocab: dict[str, int]) -> tuple[torch.Tensor, torch.Tensor]:
    """Padded (B, T) id matrix and lengths; an empty sentence is one <unk> (a packed sequence needs >= 1)."""
    seqs = [[vocab.get(w, UNK) for w in toks] or [UNK] for toks in token_lists]
    width = max((len(s) for s in seqs), default=1)
    ids = torch.full((len(seqs), width), PAD, dtype=torch.long)
    for r, s in enumerate(seqs):
        ids[r, : len(s)] = torch.tensor(s, dtype=torch.long)
    return ids, torch.tensor([len(s) for s in seqs], dtype=torch.long)


def _encode(model: ParaphraseModel, sentences: list[str], lang: str, batch_size: int) -> torch.Tensor:
    chunks = []
    with torch.no_grad():
        for k in range(0, len(sentences), batch_size):
            ids, lengths = model.ids(sentences[k : k + batch_size], lang)
            chunks.append(model.net.encode(ids.to(model.device), lengths))
    return torch.cat(chunks) if chunks else torch.zeros((0, 2 * model.net.lstm.hidden_size))


def paraphrase_probability(
    model: ParaphraseModel, s1: list[str], s2: list[str], lang: str = "en", batch_size: int = 512
) -> np.ndarray:
    """P(paraphrase) of each pair (s1[k], s2[k]), batched: a float64 array of len(s1)."""
    if len(s1) != len(s2):
        raise ValueError(f"s1 and s2 differ in length ({len(s1)} vs {len(s2)})")
    if not s1:
        return np.zeros(0)
    model.net.eval()
    u, v = _encode(model, list(s1), lang, batch_size), _encode(model, list(s2), lang, batch_size)
    with torch.no_grad():
        return torch.sigmoid(model.net.head(u, v)).double().cpu().numpy()


def paraphrase_matrix(
    model: ParaphraseModel, a: list[str], b: list[str], lang: str = "en", batch_size: int = 512
) -> np.ndarray:
    """P(paraphrase) of every (a[i], b[j]): an (m, n) float64 array.

    Each sentence is encoded once (m + n arm passes, not 2 m n), and the first dense layer is split in its
    u and v halves, W [u; v] = W_u u + W_v v, so the m x n pairs cost one broadcast add and a ReLU.
    """
    m, n = len(a), len(b)
    if m == 0 or n == 0:
        return np.zeros((m, n))
    model.net.eval()
    u, v = _encode(model, list(a), lang, batch_size), _encode(model, list(b), lang, batch_size)
    w, bias = model.net.dense.weight, model.net.dense.bias
    half = u.shape[1]
    with torch.no_grad():
        hu = u @ w[:, :half].T + bias  # (m, dense)
        hv = v @ w[:, half:].T  # (n, dense)
        rows = max(1, (1 << 22) // max(1, n * hu.shape[1]))  # bound the (rows, n, dense) block to ~16 MB
        out = []
        for k in range(0, m, rows):
            h = torch.relu(hu[k : k + rows, None, :] + hv[None, :, :])
            out.append(torch.sigmoid(model.net.out(h).squeeze(-1)))
        return torch.cat(out).double().cpu().numpy()


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


def _lang(value, default: str, where: str) -> str:
    lang = default if value is None or value == "" else str(value)
    if lang not in LANGUAGES:
        raise MultimsdError(f"{where}: language {lang!r} is not one of {', '.join(LANGUAGES)}")
    return lang


def _row(s1, s2, label, lang, default_lang: str, where: str) -> PairRow:
    if not isinstance(s1, str) or not isinstance(s2, str) or not s1.strip() or not s2.strip():
        raise MultimsdError(f"{where}: a pair needs two non-empty sentences")
    return PairRow(s1, s2, _label(label, where), _lang(lang, default_lang, where))


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


# ---------------------------------------------------------------------------------------------- training
def build_vocab(splits: dict, min_count: int, max_tokens: int) -> dict[str, int]:
    counts = Counter(
        w for s1, s2, _, lang in splits["train"] for s in (s1, s2) for w in _words(s, lang, max_tokens)
    )
    words = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
    return {w: k for k, w in enumerate(SPECIALS + words)}


def _batches(rows, vocab, max_tokens):
    """Whole split as tensors: ids and lengths of both sides, and float labels."""
    ids1, len1 = _tensorize([_words(r[0], r[3], max_tokens) for r in rows], vocab)
    ids2, len2 = _tensorize([_words(r[1], r[3], max_tokens) for r in rows], vocab)
    return ids1, len1, ids2, len2, torch.tensor([float(r[2]) for r in rows])


def _evaluate(net, data, batch_size: int, device: str) -> dict:
    ids1, len1, ids2, len2, y = data
    if len(y) == 0:
        return {"pairs": 0}
    net.eval()
    logits = []
    with torch.no_grad():
        for k in range(0, len(y), batch_size):
            sl = slice(k, k + batch_size)
            logits.append(net(ids1[sl].to(device), len1[sl], ids2[sl].to(device), len2[sl]).cpu())
    logit = torch.cat(logits)
    pred, gold = (logit > 0).long(), y.long()
    tp = int(((pred == 1) & (gold == 1)).sum())
    fp = int(((pred == 1) & (gold == 0)).sum())
    fn = int(((pred == 0) & (gold == 1)).sum())
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return {
        "pairs": len(y),
        "loss": float(F.binary_cross_entropy_with_logits(logit, y)),
        "accuracy": float((pred == gold).float().mean()),
        "precision": precision,
        "recall": recall,
        "f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
    }


def _device(name: str) -> str:
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise MultimsdError("paraphrase.device=cuda but no CUDA device is available")
    if name not in ("cpu", "cuda"):
        raise MultimsdError(f"paraphrase.device={name!r}: choose cpu, cuda or auto")
    return name


def check_paraphrase_config(p: ParaphraseConfig) -> None:
    for key in (
        "embedding_dim",
        "hidden_size",
        "num_layers",
        "dense_size",
        "max_tokens",
        "epochs",
        "batch_size",
    ):
        if getattr(p, key) < 1:
            raise MultimsdError(f"paraphrase.{key}={getattr(p, key)}: must be >= 1")
    if p.min_count < 1 or p.patience < 1:
        raise MultimsdError("paraphrase.min_count and paraphrase.patience must be >= 1")
    if p.lr <= 0:
        raise MultimsdError(f"paraphrase.lr={p.lr}: must be > 0")
    if (
        not 0 < p.valid_fraction < 1
        or not 0 <= p.test_fraction < 1
        or p.valid_fraction + p.test_fraction >= 1
    ):
        raise MultimsdError(
            "paraphrase.valid_fraction must be in (0, 1), test_fraction in [0, 1), and their sum < 1"
        )
    _lang(p.default_lang, "en", "paraphrase.default_lang")


def train_paraphrase(p: ParaphraseConfig, rows: list[PairRow]) -> tuple[ParaphraseModel, dict]:
    """Train the identifier on ``rows``; returns the model (best validation epoch) and its metrics."""
    device = _device(p.device)
    splits = make_splits(rows, p.valid_fraction, p.test_fraction, p.swap, p.seed)
    vocab = build_vocab(splits, p.min_count, p.max_tokens)
    pretrained, found = None, 0
    if p.embeddings_path:  # read before the long part, so a bad file fails at once
        pretrained, found = load_word2vec(p.embeddings_path, p.embeddings_binary, vocab, p.embedding_dim)
        log.info("word2vec: %d of %d words found", found, len(vocab) - len(SPECIALS))
    data = {name: _batches(rows_, vocab, p.max_tokens) for name, rows_ in splits.items()}
    log.info(
        "paraphrase pairs: %s; vocabulary %d words",
        ", ".join(f"{k} {len(v)}" for k, v in splits.items()),
        len(vocab),
    )

    torch.manual_seed(p.seed)
    net = SiameseBiLSTM(len(vocab), p.embedding_dim, p.hidden_size, p.num_layers, p.dense_size).to(device)
    if pretrained is not None:
        with torch.no_grad():
            net.embedding.weight.copy_(torch.from_numpy(pretrained))
        net.embedding.weight.requires_grad_(not p.freeze_embeddings)
    optim = torch.optim.NAdam([w for w in net.parameters() if w.requires_grad], lr=p.lr)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    gen = torch.Generator().manual_seed(p.seed)

    ids1, len1, ids2, len2, y = data["train"]
    best, best_state, best_epoch, bad, history = float("inf"), None, 0, 0, []
    bar = tqdm(range(1, p.epochs + 1), desc="paraphrase epochs", unit="epoch")
    for epoch in bar:
        net.train()
        order = torch.randperm(len(y), generator=gen)
        total = 0.0
        starts = range(0, len(y), p.batch_size)
        # A bar per epoch only when epochs are long (the paper's took 22 minutes each).
        for k in tqdm(starts, desc=f"epoch {epoch}", unit="batch", leave=False, disable=len(starts) < 100):
            idx = order[k : k + p.batch_size]
            logit = net(ids1[idx].to(device), len1[idx], ids2[idx].to(device), len2[idx])
            loss = loss_fn(logit, y[idx].to(device))
            optim.zero_grad()
            loss.backward()
            optim.step()
            total += loss.item() * len(idx)
        valid = _evaluate(net, data["validation"], p.batch_size, device)
        history.append({"epoch": epoch, "train_loss": total / len(y), "valid_loss": valid["loss"]})
        bar.set_postfix(loss=f"{total / len(y):.4f}", valid_loss=f"{valid['loss']:.4f}")
        log.info(
            "epoch %d: train loss %.4f, valid loss %.4f, valid acc %.3f",
            epoch,
            total / len(y),
            valid["loss"],
            valid["accuracy"],
        )
        if valid["loss"] < best:  # early stopping on the validation loss, keeping the best weights
            best, best_state, best_epoch, bad = valid["loss"], copy.deepcopy(net.state_dict()), epoch, 0
        else:
            bad += 1
            if bad >= p.patience:
                break
    net.load_state_dict(best_state)
    net.eval()
    metrics = {
        "train_pairs": len(y),
        "vocab_size": len(vocab),
        "word2vec_found": found,
        "epochs_run": len(history),
        "best_epoch": best_epoch,
        "train": _evaluate(net, data["train"], p.batch_size, device),
        "validation": _evaluate(net, data["validation"], p.batch_size, device),
        "test": _evaluate(net, data["test"], p.batch_size, device),
        "history": history,
    }
    meta = {
        "format": FORMAT,
        **{
            k: v
            for k, v in zip(
                MODEL_KEYS, (len(vocab), p.embedding_dim, p.hidden_size, p.num_layers, p.dense_size)
            )
        },
        "max_tokens": p.max_tokens,
        "languages": sorted({r.lang for r in rows}),
        "training": asdict(p),
    }
    return ParaphraseModel(net, vocab, p.max_tokens, device, meta), metrics


def save_paraphrase_model(model: ParaphraseModel, out: Path, metrics: dict | None = None) -> None:
    """Write the model directory atomically (never over a directory that is not one of ours)."""
    from safetensors.torch import save_file

    check_replaceable(out, CONFIG_FILE, "a multimsd paraphrase model")
    words = sorted(model.vocab, key=model.vocab.__getitem__)
    with atomic_directory(out) as tmp:
        state = {k: v.detach().cpu().contiguous() for k, v in model.net.state_dict().items()}
        save_file(state, str(tmp / WEIGHTS_FILE))
        (tmp / VOCAB_FILE).write_text(json.dumps(words, ensure_ascii=False) + "\n", encoding="utf-8")
        (tmp / CONFIG_FILE).write_text(
            json.dumps(model.meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        if metrics is not None:
            (tmp / METRICS_FILE).write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")


def load_paraphrase_model(path: str | Path, device: str = "cpu") -> ParaphraseModel:
    """Reload a model saved by ``align.py mode=train_paraphrase`` (weights via safetensors: no pickle)."""
    from safetensors.torch import load_file

    d = Path(path).expanduser()
    if not (d / CONFIG_FILE).is_file():
        raise MultimsdError(
            f"{d}: not a paraphrase model directory (no {CONFIG_FILE}); train one with "
            "`multimsd align mode=train_paraphrase`"
        )
    try:
        meta = json.loads((d / CONFIG_FILE).read_text(encoding="utf-8"))
        words = json.loads((d / VOCAB_FILE).read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT or len(words) != meta["vocab_size"]:
            raise ValueError("format or vocabulary size mismatch")
        net = SiameseBiLSTM(*(int(meta[k]) for k in MODEL_KEYS))
        net.load_state_dict(load_file(str(d / WEIGHTS_FILE)))
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        raise MultimsdError(f"{d}: cannot load the paraphrase model ({type(e).__name__}: {e})") from None
    device = _device(device)
    net.to(device).eval()
    return ParaphraseModel(net, {w: k for k, w in enumerate(words)}, int(meta["max_tokens"]), device, meta)


def run_train_paraphrase(p: ParaphraseConfig) -> dict:
    """``align.py mode=train_paraphrase``: train, report validation/test accuracy and F1, save the model
    (``p``: the lexical aligner's ``aligner.lexical.paraphrase`` options)."""
    check_paraphrase_config(p)
    out = Path(p.output_dir)
    check_replaceable(out, CONFIG_FILE, "a multimsd paraphrase model")  # before hours of training
    rows = read_pairs(p.train_path, p.default_lang) if p.train_path else gold_pairs()
    log.info("%d sentence pairs from %s", len(rows), p.train_path or "the bundled sample's gold alignments")
    model, metrics = train_paraphrase(p, rows)
    save_paraphrase_model(model, out, metrics)
    lines = [f"paraphrase identifier: {metrics['epochs_run']} epoch(s), best {metrics['best_epoch']}"]
    for part in ("validation", "test"):
        m = metrics[part]
        if m["pairs"]:
            lines.append(f"  {part:<10} accuracy {m['accuracy']:.3f}  F1 {m['f1']:.3f}  ({m['pairs']} pairs)")
    print("\n".join(lines))
    print(f"\nparaphrase model saved to {out.resolve()}  (use: aligner.lexical.paraphrase.model_path={out})")
    metrics["output_dir"] = str(out.resolve())
    return metrics
