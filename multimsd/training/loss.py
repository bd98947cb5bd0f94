"""Weighted cross-entropy for MultiMSD training (paper, section 4).

For each reference token ``w`` the paper multiplies the cross-entropy by ``theta`` when ``w`` does not occur
in the input ``X``::

    L'(w) = theta * L(w)   if w not in X
    L'(w) = L(w)           otherwise

``theta`` in {2, 4, 8} in the paper; ``theta == 1`` is plain cross-entropy. "Occurs in X" is decided per
example at the token-id level by :func:`novel_token_mask`; :func:`word_level_novel_mask` gives a
word-level alternative (a sub-word is novel when its whole word is absent from the input) that the caller
passes to :func:`weighted_cross_entropy` as ``novel_mask``.

Everything here is a pure function of tensors: no model, no Accelerate, no tokenizer.

One loss rule
-------------
:func:`weighted_token_loss` is the rule: the θ check, the weighting of novel tokens and the normalisation by
``num_items``, applied to per-token losses. Every training loss hands it its per-token losses and does no θ or
normalisation arithmetic of its own: :func:`weighted_cross_entropy` (from the logits),
:func:`multimsd.training.chunked_loss.chunked_weighted_cross_entropy` (from the hidden states, a chunk of tokens
at a time) and :func:`multimsd.training.sampled_softmax.sampled_softmax_loss` (the LSTM's sampled softmax). So
the three cannot drift apart, and a change to the rule is made once.

Reduction
---------
:func:`weighted_token_loss` *sums* the weighted per-token losses and divides by ``num_items``. The weights do
**not** enter the denominator: the loss is ``sum_t w_t * CE_t / N``, so ``theta`` scales the gradient of novel
tokens by exactly ``theta`` relative to copied ones, and with ``theta == 1`` it is the ordinary token-mean
cross-entropy. With ``N`` the label tokens of a whole optimisation step, the micro-batch losses of the step add up
to one big batch's: how the training step uses that over micro-batches and processes is said in one place, the
comment block of :func:`multimsd.training.loop.train_step`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import torch
import torch.nn.functional as F

from multimsd.errors import MultimsdError

__all__ = [
    "check_theta",
    "count_label_tokens",
    "novel_token_mask",
    "weighted_cross_entropy",
    "weighted_token_loss",
    "word_level_novel_mask",
]

# Stands in for input positions that must not count as "occurring" (padding, special tokens, masked out).
# No vocabulary has 2**63 - 1 entries, so no real label can equal it.
_NEVER = torch.iinfo(torch.int64).max


def _check_2d(name: str, t: torch.Tensor) -> None:
    if t.dim() != 2:
        raise ValueError(f"{name} must have shape [B, L], got {tuple(t.shape)}")


def novel_token_mask(
    labels: torch.Tensor,
    input_ids: torch.Tensor,
    *,
    ignore_index: int = -100,
    input_pad_id: int | None = None,
    special_ids: Sequence[int] = (),
    input_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Which label tokens do not occur in their example's input.

    Args:
        labels: ``LongTensor[B, T]``; positions equal to ``ignore_index`` are not labels.
        input_ids: ``LongTensor[B, S]``, the source ``X`` of each example (row ``b`` of ``labels`` is compared
            with row ``b`` of ``input_ids`` only).
        ignore_index: label value meaning "no label here".
        input_pad_id: input positions holding this id do not count as occurring (padding).
        special_ids: ids that are never novel as labels (EOS, BOS, language codes, ...) and do not count as
            occurring in the input.
        input_mask: optional ``[B, S]`` mask (bool or 0/1, e.g. the attention mask); input positions where
            it is false do not count as occurring. Use it when the pad id is also a real token (Llama:
            pad == eos), or for decoder-only models where ``input_ids`` holds prompt + target and only the
            prompt is ``X`` (``input_mask = attention_mask.bool() & (labels == -100)``).

    Returns:
        ``BoolTensor[B, T]``: True where ``labels[b, t]`` is a real label, not in ``special_ids``, and absent
        from the counted positions of ``input_ids[b]``. Repeated label tokens are judged independently
        (each occurrence of a novel token is novel).

    Implementation: each input row is sorted (uncounted positions replaced by a sentinel larger than any
    id) and every label is looked up with a batched ``torch.searchsorted``. Cost is
    ``O(B * (S log S + T log S))`` time and ``O(B * (S + T))`` memory, independent of the vocabulary size,
    so a 250k vocabulary (mBART, Llama 3) needs no ``[B, V]`` presence table.
    """
    _check_2d("labels", labels)
    _check_2d("input_ids", input_ids)
    if labels.shape[0] != input_ids.shape[0]:
        raise ValueError(f"batch sizes differ: labels {labels.shape[0]}, input_ids {input_ids.shape[0]}")
    if input_mask is not None and input_mask.shape != input_ids.shape:
        raise ValueError(
            f"input_mask shape {tuple(input_mask.shape)} != input_ids shape {tuple(input_ids.shape)}"
        )

    labels = labels.long()
    input_ids = input_ids.to(device=labels.device, dtype=torch.long)

    is_label = labels != ignore_index
    counted = torch.ones_like(input_ids, dtype=torch.bool)
    if input_mask is not None:
        counted &= input_mask.to(device=labels.device).bool()
    if input_pad_id is not None:
        counted &= input_ids != input_pad_id
    if len(special_ids) > 0:
        specials = torch.as_tensor(list(special_ids), dtype=torch.long, device=labels.device)
        is_label &= ~torch.isin(labels, specials)
        counted &= ~torch.isin(input_ids, specials)

    if input_ids.shape[1] == 0:  # empty input: every real label is novel
        return is_label

    sorted_inp = torch.where(counted, input_ids, torch.full_like(input_ids, _NEVER)).sort(dim=1).values
    # Ignored positions may hold negative ids (-100): give them a harmless in-range query value.
    query = torch.where(is_label, labels, torch.zeros_like(labels)).contiguous()
    pos = torch.searchsorted(sorted_inp, query).clamp_(max=sorted_inp.shape[1] - 1)
    present = sorted_inp.gather(1, pos) == query
    return is_label & ~present


def word_level_novel_mask(
    label_word_ids: torch.Tensor,
    label_words: Sequence[Sequence[str]],
    input_words: Sequence[Sequence[str] | set[str] | frozenset[str]],
    *,
    normalize: bool = False,
) -> torch.Tensor:
    """Word-level novelty: a label sub-word is novel when the word it belongs to is absent from the input.

    Tokenizer-independent: the caller says which word each label token belongs to, so the words can come
    from any word segmenter (Stanza, as the paper used for its corpus statistics; whitespace; a
    HF fast tokenizer's ``word_ids()``, which for XLM-R/mBART/Llama splits on whitespace only and therefore
    treats a whole Japanese or Chinese sentence as one word).

    Args:
        label_word_ids: ``LongTensor[B, T]``: for each label position, the index into ``label_words[b]`` of
            its word, or ``-1`` for positions that belong to no word (ignored positions, EOS, language
            codes, padding). Those positions are never novel.
        label_words: per example, the words of the reference.
        input_words: per example, the words of the input ``X`` (any iterable of strings).
        normalize: compare words case-insensitively (``str.casefold``).

    Returns:
        ``BoolTensor[B, T]``, to pass as ``novel_mask`` to :func:`weighted_cross_entropy`.
    """
    _check_2d("label_word_ids", label_word_ids)
    B = label_word_ids.shape[0]
    if len(label_words) != B or len(input_words) != B:
        raise ValueError(
            f"batch sizes differ: label_word_ids {B}, label_words {len(label_words)}, "
            f"input_words {len(input_words)}"
        )

    def norm(w: str) -> str:
        return w.casefold() if normalize else w

    width = max((len(ws) for ws in label_words), default=0)
    word_novel = torch.zeros(B, max(width, 1), dtype=torch.bool)
    for b, (lw, iw) in enumerate(zip(label_words, input_words)):
        present = {norm(w) for w in iw}
        for i, w in enumerate(lw):
            word_novel[b, i] = norm(w) not in present

    ids = label_word_ids.long().cpu()
    if ids.numel() and int(ids.max()) >= width:
        raise ValueError(f"label_word_ids refers to word {int(ids.max())}, but examples have at most {width}")
    has_word = ids >= 0
    mask = word_novel.gather(1, ids.clamp(min=0)) & has_word
    return mask.to(label_word_ids.device)


def count_label_tokens(labels: torch.Tensor, ignore_index: int = -100) -> int:
    """Number of positions of ``labels`` that are not ``ignore_index`` (a Python int; syncs on GPU)."""
    return int((labels != ignore_index).sum().item())


def check_theta(theta, name: str = "theta") -> None:
    """The one check of θ, the novel-token weight: a real number, finite and > 0 (``MultimsdError`` otherwise).

    :func:`weighted_token_loss` calls it, so every loss path refuses a bad θ the same way; the training stage's
    settings check calls it with ``name="loss.theta"`` before anything is loaded."""
    if isinstance(theta, bool) or not isinstance(theta, numbers.Real):
        raise MultimsdError(f"{name}={theta!r}: must be a number (1 = plain cross-entropy; paper: 2, 4, 8)")
    if not (math.isfinite(theta) and theta > 0):
        raise MultimsdError(
            f"{name}={theta}: must be finite and > 0 (1 = plain cross-entropy; paper: 2, 4, 8)"
        )


def weighted_token_loss(
    token_losses: torch.Tensor,
    novel: torch.Tensor | None,
    *,
    theta: float,
    num_items: int | torch.Tensor | None = None,
    labelled: torch.Tensor | None = None,
) -> torch.Tensor:
    """MultiMSD's loss from per-token losses: ``sum_t w_t * loss_t / num_items``, ``w_t = theta`` where ``novel``.

    The only place where θ weights a token and the sum is normalised (see "One loss rule" above).

    Args:
        token_losses: the per-token losses (cross-entropy, smoothed or sampled), any shape, float.
        novel: ``BoolTensor`` of the same shape: the tokens absent from the input, weighted by ``theta``. May be
            None when ``theta == 1`` only (a forgotten mask must not silently train with θ = 1).
        theta: the weight of novel tokens, checked by :func:`check_theta`; 1 = unweighted.
        num_items: the denominator: the number of label tokens of the whole optimisation step (all accumulation
            micro-batches, all processes; see the module docstring), an int or a 0-dim tensor (read on the device,
            no synchronisation). None: this call's label count, at least 1, so no labels give 0 rather than NaN.
        labelled: ``BoolTensor`` of the same shape: the positions that are labels. The others (``ignore_index``)
            add nothing, whatever their loss, and are not counted. None: every position is a label.

    Returns:
        A scalar of ``token_losses``' dtype; differentiable w.r.t. ``token_losses``.
    """
    check_theta(theta)
    if novel is None and theta != 1:
        raise ValueError("novel is needed when theta != 1")
    for name, mask in (("novel", novel), ("labelled", labelled)):
        if mask is not None and mask.shape != token_losses.shape:
            raise ValueError(
                f"{name} shape {tuple(mask.shape)} != token_losses shape {tuple(token_losses.shape)}"
            )
    if isinstance(num_items, int) and num_items <= 0:
        raise ValueError(f"num_items must be > 0, got {num_items}")

    weighted = token_losses
    if novel is not None:
        # where(), not a weight tensor: a copied token's loss is passed on unchanged (bit for bit when theta == 1)
        weighted = torch.where(novel.to(token_losses.device).bool(), token_losses * theta, token_losses)
    if labelled is not None:
        labelled = labelled.to(token_losses.device).bool()
        weighted = torch.where(
            labelled, weighted, torch.zeros((), dtype=weighted.dtype, device=weighted.device)
        )
    total = weighted.sum()
    if num_items is not None:
        denom = num_items.to(total.device) if torch.is_tensor(num_items) else num_items
    elif labelled is not None:
        denom = labelled.sum().clamp(min=1)  # a tensor: counting on the device needs no synchronisation
    else:
        denom = max(token_losses.numel(), 1)
    return total / denom


def _check_logits_arguments(logits, labels, input_ids, novel_mask) -> None:
    if (input_ids is None) == (novel_mask is None):
        raise ValueError("give exactly one of input_ids and novel_mask")
    if logits.dim() != 3:
        raise ValueError(f"logits must have shape [B, T, V], got {tuple(logits.shape)}")
    _check_2d("labels", labels)
    if logits.shape[:2] != labels.shape:
        raise ValueError(f"logits {tuple(logits.shape)} and labels {tuple(labels.shape)} are not aligned")
    if novel_mask is not None and novel_mask.shape != labels.shape:
        raise ValueError(f"novel_mask shape {tuple(novel_mask.shape)} != labels shape {tuple(labels.shape)}")


def weighted_cross_entropy(
    logits: torch.Tensor,
    labels: torch.Tensor,
    input_ids: torch.Tensor | None = None,
    *,
    theta: float,
    ignore_index: int = -100,
    input_pad_id: int | None = None,
    special_ids: Sequence[int] = (),
    input_mask: torch.Tensor | None = None,
    novel_mask: torch.Tensor | None = None,
    num_items: int | torch.Tensor | None = None,
    label_smoothing: float = 0.0,
) -> torch.Tensor:
    """Cross-entropy with novel label tokens weighted by ``theta`` (MultiMSD, section 4), from the logits.

    The per-token cross-entropy of every position, then :func:`weighted_token_loss`: ``loss = sum_t w_t * CE_t /
    num_items`` with ``w_t = theta`` where the label token is novel (absent from the input) and 1 elsewhere;
    ignored positions contribute 0.

    Args:
        logits: ``[B, T, V]``, any float dtype; the cross-entropy is computed in at least float32 (the
            returned loss is float32 for bf16/fp16/float32 logits, float64 for float64 logits).
        labels: ``LongTensor[B, T]``, ``ignore_index`` where there is no label; ``labels[:, t]`` is the target of
            ``logits[:, t]``. A decoder-only LM's labels are its input shifted by one (its output at ``t``
            predicts the token at ``t + 1``, as ``transformers``' ``ForCausalLMLoss`` shifts them): in training
            the collator shifts them, once (:func:`multimsd.training.data.shift_targets`).
        input_ids: ``LongTensor[B, S]``, the source ``X``; novelty is decided by :func:`novel_token_mask`
            with ``ignore_index``, ``input_pad_id``, ``special_ids`` and ``input_mask``.
        theta: weight of novel tokens, finite and > 0 (``MultimsdError`` otherwise); 1 = plain CE.
        novel_mask: a precomputed ``BoolTensor[B, T]`` aligned with ``labels`` (e.g. from
            :func:`word_level_novel_mask`), instead of ``input_ids``. Give exactly one of the two.
        num_items: denominator: the number of non-ignored label tokens in the whole
            global batch (all accumulation micro-batches, all processes). ``None``: this batch's count,
            clamped to at least 1 so an all-ignored batch gives 0 rather than NaN (``F.cross_entropy`` gives
            NaN there).
        label_smoothing: as in ``F.cross_entropy``; the smoothed per-token loss is what gets weighted.

    Returns:
        A scalar (see ``logits`` for its dtype). With ``theta == 1`` and ``num_items=None`` it equals
        ``F.cross_entropy(logits.float().view(-1, V), labels.view(-1), ignore_index=ignore_index)`` up to the
        order of the float summation.
    """
    _check_logits_arguments(logits, labels, input_ids, novel_mask)
    labels = labels.to(logits.device).long()
    if novel_mask is None:
        novel_mask = novel_token_mask(
            labels,
            input_ids,
            ignore_index=ignore_index,
            input_pad_id=input_pad_id,
            special_ids=special_ids,
            input_mask=input_mask,
        )

    V = logits.shape[-1]
    # Upcast half precision (bf16/fp16) to float32, as transformers' own losses do; keep float64.
    compute_dtype = logits.dtype if logits.dtype in (torch.float32, torch.float64) else torch.float32
    flat_labels = labels.reshape(-1)
    per_token = F.cross_entropy(
        logits.to(compute_dtype).reshape(-1, V),
        flat_labels,
        ignore_index=ignore_index,
        reduction="none",
        label_smoothing=label_smoothing,
    )
    return weighted_token_loss(
        per_token,
        novel_mask.reshape(-1),
        theta=theta,
        num_items=num_items,
        labelled=flat_labels != ignore_index,
    )
