"""Sampled softmax: the training loss of the LSTM baseline (Adduru et al. 2018, section 3.2).

A full softmax over a word vocabulary of tens of thousands of types costs ``O(V * H)`` per target token;
Adduru et al. (after the TensorFlow 1.x seq2seq tutorial they built on) train with a *sampled* softmax
instead (Jean et al. 2015, "On Using Very Large Target Vocabulary for Neural Machine Translation") and use
the full softmax only to decode. This module is that loss as pure functions of tensors, written to match
TensorFlow's ``tf.nn.sampled_softmax_loss``:

1. draw ``k`` candidate classes from a proposal ``Q`` over the target vocabulary, *once per batch* (shared by
   every token of the batch): :func:`sample_candidates`. Proposals: :func:`log_uniform_probs` (Zipfian,
   ``Q(c) = log((c + 2) / (c + 1)) / log(V + 1)``, TF's ``log_uniform_candidate_sampler``; it assumes ids
   sorted by decreasing frequency, which :class:`multimsd.training.models.lstm.WordTokenizer` guarantees) or
   :func:`unigram_probs` (the training targets' smoothed, distorted unigram counts);
2. for each label token ``y`` with decoder output ``h``: logits ``z_c = h . W_c + b_c - log E(c)`` for
   ``c`` in ``{y} + candidates``, where ``E(c)`` is the expected number of times ``c`` is drawn (the
   "- log Q" correction that makes the sampled softmax a consistent estimator of the full one);
3. candidates equal to ``y`` ("accidental hits") get logit ``-inf``: the true class is never its own negative;
4. the per-token loss is the cross-entropy of that ``k + 1``-way softmax with the true class as target.

Expected counts (TF's formulas): sampling with replacement draws ``k`` times, ``E(c) = k * Q(c)``; unique
sampling (TF's default, ``unique=True``) keeps drawing with replacement until ``k`` *distinct* classes have
been seen after ``n`` draws, and ``E(c) = 1 - (1 - Q(c)) ** n``.

Weighting and normalisation are not done here: :func:`sampled_token_losses` gives the per-token losses and
:func:`sampled_softmax_loss` hands them to :func:`multimsd.training.loss.weighted_token_loss`, the rule every
loss path shares: ``sum_t w_t * loss_t / num_items`` with ``w_t = theta`` for novel label tokens (absent from
the input; MultiMSD section 4) and 1 otherwise, and ``num_items`` the number of label tokens of the *whole*
optimisation step (all accumulation micro-batches, all processes), so the loop's gradient-accumulation and
multi-process compensation applies unchanged. If every class is a candidate and the correction is switched
off, the loss *is* the full (weighted) cross-entropy (tested).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import torch

from multimsd.errors import MultimsdError
from multimsd.training.loss import weighted_token_loss

__all__ = [
    "Candidates",
    "log_expected_count",
    "log_uniform_probs",
    "sample_candidates",
    "sampled_softmax_loss",
    "sampled_token_losses",
    "step_generator",
    "unigram_probs",
]

UNIGRAM_POWER = 0.75  # word2vec's distortion: flattens the unigram so rare words are drawn now and then


def log_uniform_probs(vocab_size: int) -> torch.Tensor:
    """Zipfian proposal ``Q(c) = log((c + 2) / (c + 1)) / log(V + 1)`` for ids ``0 .. V - 1`` (sums to 1)."""
    c = torch.arange(vocab_size, dtype=torch.float64)
    return (torch.log1p(1.0 / (c + 1.0)) / math.log(vocab_size + 1.0)).float()


def unigram_probs(counts: torch.Tensor | list[int], power: float = UNIGRAM_POWER) -> torch.Tensor:
    """``Q(c) ∝ (count(c) + 1) ** power``: add-one smoothing, so no class (an unseen ``<unk>``) has ``Q = 0``."""
    q = (torch.as_tensor(counts, dtype=torch.float64) + 1.0) ** power
    return (q / q.sum()).float()


def step_generator(seed: int, step: int, micro_batch: int) -> torch.Generator:
    """A CPU generator that is a pure function of (seed, optimizer step, micro-batch index).

    The candidates of a step therefore do not depend on how much of the global RNG something else (data
    loaders, dropout, a resume that skipped batches) has consumed: a resumed run draws the same candidates
    as an uninterrupted one, and every process of a multi-process run draws the same set for the same step,
    like one large batch would in TensorFlow.
    """
    digest = hashlib.blake2b(f"{seed}:{step}:{micro_batch}".encode(), digest_size=8).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest, "little") & (2**63 - 1))


@dataclass
class Candidates:
    """The classes drawn for one batch and what :func:`log_expected_count` needs to correct for them."""

    ids: torch.Tensor  # LongTensor[k], distinct when unique
    num_tries: int  # draws made: k with replacement; >= k for unique sampling
    unique: bool


def sample_candidates(
    q: torch.Tensor, num_sampled: int, generator: torch.Generator | None = None, unique: bool = True
) -> Candidates:
    """Draw ``num_sampled`` classes from the proposal ``q`` (a probability vector over the vocabulary).

    ``unique=True`` follows TF: draw with replacement, keep first occurrences, stop at the draw that
    brings the ``num_sampled``-th distinct class (its index + 1 is ``num_tries``).
    """
    vocab = q.numel()
    if not 0 < num_sampled < vocab:
        raise MultimsdError(
            f"num_sampled={num_sampled} must be between 1 and the target vocabulary size - 1 ({vocab - 1})"
        )
    q = q.detach().double().cpu()
    if not unique:
        ids = torch.multinomial(q, num_sampled, replacement=True, generator=generator)
        return Candidates(ids, num_sampled, False)
    seen: dict[int, None] = {}  # insertion-ordered set
    tries = 0
    while len(seen) < num_sampled:
        for c in torch.multinomial(q, 4 * num_sampled, replacement=True, generator=generator).tolist():
            tries += 1
            seen.setdefault(c)
            if len(seen) == num_sampled:
                break
    return Candidates(torch.tensor(list(seen), dtype=torch.long), tries, True)


def log_expected_count(q_c: torch.Tensor, num_tries: int, unique: bool) -> torch.Tensor:
    """``log E(c)`` given ``Q(c)``: ``log(n * Q)`` with replacement, ``log(1 - (1 - Q) ** n)`` unique."""
    q_c = q_c.double()
    if unique:
        return torch.log(-torch.expm1(num_tries * torch.log1p(-q_c))).float()
    return torch.log(num_tries * q_c).float()


def sampled_token_losses(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    labels: torch.Tensor,
    sampled_ids: torch.Tensor,
    sampled_log_expected: torch.Tensor | None,
    true_log_expected: torch.Tensor | None,
    *,
    ignore_index: int = -100,
    remove_accidental_hits: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The sampled-softmax loss of every label token (steps 2-4 of the module docstring), unweighted.

    Args:
        hidden: ``[B, T, H]`` decoder outputs *before* the output projection (``labels[:, t]`` is the target
            of ``hidden[:, t]``; no shift).
        weight, bias: the output projection, ``[V, H]`` and ``[V]`` (``bias`` may be None).
        labels: ``LongTensor[B, T]``, ``ignore_index`` where there is no label.
        sampled_ids: ``LongTensor[k]``, the candidates (shared by all tokens).
        sampled_log_expected: ``[k]``, ``log E(c)`` of the candidates; None = no correction.
        true_log_expected: ``[B, T]``, ``log E(y)`` of each label (any value at ignored positions);
            None = no correction. Both must be given or both None.
        remove_accidental_hits: give a candidate equal to the label the logit ``-inf``.

    Returns:
        ``(losses, index)``: float32 (float64 for float64 inputs) ``[N]`` losses of the ``N`` label positions in
        row-major order, and those positions' flat indices (``b * T + t``), ``LongTensor[N]``.
    """
    if hidden.dim() != 3 or hidden.shape[:2] != labels.shape:
        raise ValueError(f"hidden {tuple(hidden.shape)} and labels {tuple(labels.shape)} are not aligned")
    if (sampled_log_expected is None) != (true_log_expected is None):
        raise ValueError("give both log expected counts (the - log Q correction) or neither")

    dtype = hidden.dtype if hidden.dtype in (torch.float32, torch.float64) else torch.float32
    labels = labels.to(hidden.device).long().reshape(-1)
    # Found once (one wait for the device: N sizes everything below), then every per-token input is picked by it.
    index = (labels != ignore_index).nonzero().squeeze(1)
    h = hidden.reshape(-1, hidden.shape[-1]).index_select(0, index).to(dtype)  # [N, H]: label positions only
    y = labels.index_select(0, index)  # [N]
    w = weight.to(dtype)
    sampled_ids = sampled_ids.to(hidden.device)

    true_logits = (h * w[y]).sum(-1)  # [N]
    sampled_logits = h @ w[sampled_ids].T  # [N, k]
    if bias is not None:
        true_logits = true_logits + bias.to(dtype)[y]
        sampled_logits = sampled_logits + bias.to(dtype)[sampled_ids]
    if true_log_expected is not None:
        true_log_expected = true_log_expected.to(hidden.device, dtype).reshape(-1)
        true_logits = true_logits - true_log_expected.index_select(0, index)
        sampled_logits = sampled_logits - sampled_log_expected.to(hidden.device, dtype)
    if remove_accidental_hits:
        sampled_logits = sampled_logits.masked_fill(y[:, None] == sampled_ids[None, :], float("-inf"))
    logits = torch.cat([true_logits[:, None], sampled_logits], dim=1)  # the true class is class 0
    return torch.logsumexp(logits, dim=1) - true_logits, index  # = cross-entropy with target 0


def sampled_softmax_loss(
    *args,
    novel_mask: torch.Tensor | None = None,
    theta: float = 1.0,
    num_items: int | torch.Tensor | None = None,
    **kwargs,
) -> torch.Tensor:
    """Weighted sampled-softmax loss over the label tokens of a batch (see the module docstring).

    :func:`sampled_token_losses` (``args`` and ``kwargs`` are its arguments), then
    :func:`multimsd.training.loss.weighted_token_loss` on its per-token losses:

    Args:
        novel_mask: ``BoolTensor[B, T]``: labels weighted by ``theta`` (None only with ``theta == 1``).
        theta: novel-token weight, finite and > 0.
        num_items: the denominator (label tokens of the whole optimisation step); None = this batch's count
            (at least 1).

    Returns:
        A float32 scalar (float64 for float64 inputs).
    """
    losses, index = sampled_token_losses(*args, **kwargs)
    if novel_mask is not None:
        novel_mask = novel_mask.to(index.device).bool().reshape(-1).index_select(0, index)
    return weighted_token_loss(losses, novel_mask, theta=theta, num_items=num_items)


class SampledSoftmax:
    """The training loop's handle on the loss above: an output layer, a proposal, and a seeded sampler.

    Calling it with one micro-batch draws that micro-batch's candidates with :func:`step_generator` and
    returns :func:`sampled_softmax_loss`. ``projection`` is the model's output layer (``weight [V, H]``,
    ``bias [V]``), used in place: the gradient reaches it as it would through the model.
    """

    def __init__(
        self,
        projection: torch.nn.Linear,
        q: torch.Tensor,
        num_sampled: int,
        seed: int,
        unique: bool = True,
    ):
        if q.numel() != projection.weight.shape[0]:
            raise ValueError(
                f"proposal over {q.numel()} classes, output layer has {projection.weight.shape[0]}"
            )
        if not 0 < num_sampled < q.numel():
            raise MultimsdError(
                f"num_sampled={num_sampled} must be between 1 and the target vocabulary size - 1 ({q.numel() - 1})"
            )
        self.projection, self.q, self.num_sampled, self.seed, self.unique = (
            projection,
            q,
            num_sampled,
            seed,
            unique,
        )
        self._q_device = q.to(projection.weight.device)

    @classmethod
    def from_sampler_name(
        cls, name: str, projection: torch.nn.Linear, target_counts: list[int], num_sampled: int, seed: int
    ) -> SampledSoftmax:
        """``name``: ``log_uniform`` (Zipfian over frequency-sorted ids) or ``unigram`` (training counts)."""
        if name == "log_uniform":
            q = log_uniform_probs(len(target_counts))
        elif name == "unigram":
            q = unigram_probs(target_counts)
        else:
            raise MultimsdError(f"sampler={name!r}: choose log_uniform or unigram")
        return cls(projection, q, num_sampled, seed)

    def __call__(
        self,
        hidden: torch.Tensor,
        labels: torch.Tensor,
        *,
        step: int,
        micro_batch: int = 0,
        novel_mask: torch.Tensor | None = None,
        theta: float = 1.0,
        num_items: int | torch.Tensor | None = None,
    ) -> torch.Tensor:
        cand = sample_candidates(
            self.q, self.num_sampled, step_generator(self.seed, step, micro_batch), self.unique
        )
        labels = labels.to(hidden.device)
        q_true = self._q_device[labels.clamp(min=0)]
        return sampled_softmax_loss(
            hidden,
            self.projection.weight,
            self.projection.bias,
            labels,
            cand.ids,
            log_expected_count(self.q[cand.ids], cand.num_tries, cand.unique),
            log_expected_count(q_true, cand.num_tries, cand.unique),
            novel_mask=novel_mask,
            theta=theta,
            num_items=num_items,
        )
