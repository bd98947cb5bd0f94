"""Direct preference optimisation (DPO; Rafailov et al. 2023) as pure functions of tensors (issue #48 item 3).

For a source ``x`` with a *chosen* output ``y_w`` (the best safe one of a system's samples) and a *rejected*
one ``y_l`` (an unsafe or copied one), DPO trains the policy ``π`` against a frozen reference ``π_ref`` (the
system it starts from) with

    z    = (log π(y_w|x) − log π_ref(y_w|x)) − (log π(y_l|x) − log π_ref(y_l|x))
    loss = −log σ(β z)                                  (mean over the pairs)

β sets how far the policy may move from the reference (its KL). With label smoothing ε (conservative DPO, for
noisy preferences) the loss is ``(1 − ε)·(−log σ(βz)) + ε·(−log σ(−βz))``. The implicit rewards
``β (log π − log π_ref)`` of the chosen and the rejected outputs are returned to be logged: their margin grows
as the policy learns the preference.

A sequence's log-probability is the sum over its target tokens of the log-softmax at the label
(:func:`sequence_logps`) over logits and labels aligned position by position: for mBART the decoder's, as they
are (the model shifts the labels into the decoder inputs itself); for a causal model as the collator gives them,
shifted (:func:`multimsd.training.data.shift_targets`), the prompt's positions at the ignore index. No model, no Accelerate, no tokenizer here: TRL's
``DPOTrainer`` does this for causal models, but fed an encoder-decoder it puts prompt and completion into the
encoder (a wrong loss, silently), so mBART gets these.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from multimsd.errors import MultimsdError

__all__ = ["check_dpo_settings", "dpo_loss", "sequence_logps"]


def sequence_logps(logits: torch.Tensor, labels: torch.Tensor, ignore_index: int = -100) -> torch.Tensor:
    """``[batch]``: per row the sum of ``log softmax(logits)`` at the labels, over the positions whose label is
    not ``ignore_index`` (``logits [batch, length, vocab]`` and ``labels [batch, length]`` aligned: the logits
    at position t predict label t). Computed in float32 whatever the logits' dtype."""
    if logits.shape[:-1] != labels.shape:
        raise MultimsdError(f"logits {tuple(logits.shape)} and labels {tuple(labels.shape)} are not aligned")
    mask = labels != ignore_index
    safe = torch.where(mask, labels, torch.zeros_like(labels))
    logp = torch.log_softmax(logits.float(), dim=-1).gather(-1, safe.unsqueeze(-1)).squeeze(-1)
    return (logp * mask).sum(-1)


def check_dpo_settings(beta: float, label_smoothing: float) -> None:
    """One error line for a β or a label smoothing the loss cannot use."""
    if beta <= 0:
        raise MultimsdError(f"dpo beta={beta}: must be > 0 (how far the policy may move from its start)")
    if not 0.0 <= label_smoothing < 0.5:
        raise MultimsdError(f"dpo label_smoothing={label_smoothing}: must lie in [0, 0.5)")


def dpo_loss(
    policy_chosen: torch.Tensor,
    policy_rejected: torch.Tensor,
    reference_chosen: torch.Tensor,
    reference_rejected: torch.Tensor,
    beta: float = 0.1,
    label_smoothing: float = 0.0,
    reduction: str = "mean",
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(the mean DPO loss, the chosen outputs' implicit rewards, the rejected ones') from sequence
    log-probabilities ``[pairs]`` of the policy and of the frozen reference (module docstring).
    ``reduction="none"``: the loss per pair (a training step that accumulates sums them itself)."""
    check_dpo_settings(beta, label_smoothing)
    chosen = policy_chosen - reference_chosen
    rejected = policy_rejected - reference_rejected
    z = beta * (chosen - rejected)
    loss = -(1.0 - label_smoothing) * F.logsigmoid(z) - label_smoothing * F.logsigmoid(-z)
    if reduction not in ("mean", "none"):
        raise ValueError(f"reduction={reduction!r}: mean or none")
    loss = loss.mean() if reduction == "mean" else loss
    return loss, beta * chosen.detach(), beta * rejected.detach()
