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

Data (``train_path``; read, split and balanced by :mod:`multimsd.alignment.aligners.paraphrase_data`): TSV or
JSONL pairs ``(s1, s2[, label][, lang])``. As the paper did with Paralex (only paraphrases) merged into Quora,
rows without a label are paraphrases, and random pairs of distinct sentences (same language, not already a pair)
are added as non-paraphrases until the classes balance. Pairs are split into train / validation / test grouped by
their first sentence, so no source sentence is in two parts, and (paper) each pair is also added swapped.
``train_path: null`` trains on the bundled sample's gold alignments. Words are the lexical aligner's:
lowercased, punctuation dropped, language-aware tokens.

Training: NAdam on binary cross-entropy over seeded shuffles of the training pairs; the end of each epoch is
judged by :func:`multimsd.early_stopping.early_stopping`, the rule the generator's training loop uses too.

Differences from the paper, on purpose: sequences are packed rather than padded with <unk> to 30, so a short
sentence's encoding does not depend on padding; and training data is whatever you give it (the paper used
Quora + Paralex, 70 million balanced pairs, which are not bundled).

The saved model is a directory: ``paraphrase_config.json`` (sizes, training settings), ``vocab.json`` (the
word list, index = row of the embedding matrix), ``model.safetensors`` (the weights; no pickle) and
``metrics.json``.
"""

from __future__ import annotations

import copy
import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from multimsd.alignment.aligners.paraphrase_data import (
    PAD,
    SPECIALS,
    UNK,
    PairRow,
    build_vocab,
    clipped_words,
    gold_pairs,
    load_word2vec,
    make_splits,
    pair_lang,
    read_pairs,
)
from multimsd.alignment.goldscore import PRF
from multimsd.console import progress_bar
from multimsd.early_stopping import early_stopping
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
        return _tensorize([clipped_words(s, lang, self.max_tokens) for s in sentences], self.vocab)


# ---------------------------------------------------------------------------------------------- words
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


# ---------------------------------------------------------------------------------------------- training
def _batches(rows, vocab, max_tokens):
    """Whole split as tensors: ids and lengths of both sides, and float labels."""
    ids1, len1 = _tensorize([clipped_words(r[0], r[3], max_tokens) for r in rows], vocab)
    ids2, len2 = _tensorize([clipped_words(r[1], r[3], max_tokens) for r in rows], vocab)
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
    # the paraphrase class, scored as the aligners' gold scoring scores aligned pairs
    prf = PRF(int(((pred == 1) & (gold == 1)).sum()), int((pred == 1).sum()), int((gold == 1).sum()))
    return {
        "pairs": len(y),
        "loss": float(F.binary_cross_entropy_with_logits(logit, y)),
        "accuracy": float((pred == gold).float().mean()),
        "precision": prf.precision,
        "recall": prf.recall,
        "f1": prf.f1,
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
    pair_lang(p.default_lang, "en", "paraphrase.default_lang")


def train_paraphrase(p: ParaphraseConfig, rows: list[PairRow]) -> tuple[ParaphraseModel, dict]:
    """Train the identifier on ``rows``; returns the model (best validation epoch) and its metrics."""
    device = _device(p.device)
    vocab, data, pretrained, found = _training_data(p, rows)
    torch.manual_seed(p.seed)
    net = SiameseBiLSTM(len(vocab), p.embedding_dim, p.hidden_size, p.num_layers, p.dense_size).to(device)
    if pretrained is not None:
        with torch.no_grad():
            net.embedding.weight.copy_(torch.from_numpy(pretrained))
        net.embedding.weight.requires_grad_(not p.freeze_embeddings)
    best_epoch, history = _fit(net, data, p, device)
    net.eval()
    metrics = {
        "train_pairs": len(data["train"][4]),  # its labels
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


def _training_data(
    p: ParaphraseConfig, rows: list[PairRow]
) -> tuple[dict[str, int], dict, np.ndarray | None, int]:
    """(vocabulary, the batches of every split, the word2vec rows or None, how many words word2vec had)."""
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
    return vocab, data, pretrained, found


def _fit(net: SiameseBiLSTM, data: dict, p: ParaphraseConfig, device: str) -> tuple[int, list[dict]]:
    """Epochs until early stopping; leaves the best validation epoch's weights in ``net``. Returns (that
    epoch, the loss history)."""
    optim = torch.optim.NAdam([w for w in net.parameters() if w.requires_grad], lr=p.lr)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    gen = torch.Generator().manual_seed(p.seed)
    best, best_state, best_epoch, bad, history = None, None, 0, 0, []
    bar = progress_bar(range(1, p.epochs + 1), desc="paraphrase epochs", unit="epoch")
    for epoch in bar:
        train_loss = _train_epoch(net, optim, loss_fn, data["train"], gen, epoch, p.batch_size, device)
        valid = _evaluate(net, data["validation"], p.batch_size, device)
        history.append({"epoch": epoch, "train_loss": train_loss, "valid_loss": valid["loss"]})
        bar.set_postfix(loss=f"{train_loss:.4f}", valid_loss=f"{valid['loss']:.4f}")
        log.info(
            "epoch %d: train loss %.4f, valid loss %.4f, valid acc %.3f",
            epoch,
            train_loss,
            valid["loss"],
            valid["accuracy"],
        )
        verdict = early_stopping(valid["loss"], best, bad, patience=p.patience)
        best, bad = verdict.best, verdict.bad_epochs
        if verdict.better:  # keep the best epoch's weights
            best_state, best_epoch = copy.deepcopy(net.state_dict()), epoch
        elif verdict.stop:
            break
    net.load_state_dict(best_state)
    return best_epoch, history


def _train_epoch(
    net: SiameseBiLSTM,
    optim: torch.optim.Optimizer,
    loss_fn: nn.Module,
    train: tuple,
    gen: torch.Generator,
    epoch: int,
    batch_size: int,
    device: str,
) -> float:
    """One pass over the training pairs in a seeded shuffle; returns the mean training loss."""
    ids1, len1, ids2, len2, y = train
    net.train()
    order = torch.randperm(len(y), generator=gen)
    total = 0.0
    starts = range(0, len(y), batch_size)
    # A bar per epoch only when epochs are long (the paper's took 22 minutes each).
    for k in progress_bar(
        starts, desc=f"epoch {epoch}", unit="batch", leave=False, disable=len(starts) < 100
    ):
        idx = order[k : k + batch_size]
        logit = net(ids1[idx].to(device), len1[idx], ids2[idx].to(device), len2[idx])
        loss = loss_fn(logit, y[idx].to(device))
        optim.zero_grad()
        loss.backward()
        optim.step()
        total += loss.item() * len(idx)
    return total / len(y)


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
