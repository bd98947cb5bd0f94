"""One micro-batch through the model to its loss (training) or to its per-example cross-entropy (validation).

Two paths give the same numbers (to float rounding; tested on tiny Llama + LoRA and tiny mBART):

* **chunked** (``loss.chunked=auto``, the default: where it applies; ``true``: required): the model's ``lm_head`` returns its input
  for the duration of the forward (:mod:`multimsd.training.output_head`), so the model call yields the final
  hidden states, and the novel-token weighted cross-entropy is computed from them at labelled positions only,
  a chunk of tokens at a time (:mod:`multimsd.training.chunked_loss`): no ``[tokens, vocabulary]`` logits for
  the whole step. It applies to kinds whose model has a plain ``lm_head`` and whose loss is the base weighted
  cross-entropy (``causal``, ``seq2seq``), and only when the ``lm_head`` weight is whole on every process (not
  under FSDP or DeepSpeed ZeRO-3, which gather it inside the forward only);
* **logits**: the model computes its logits (a causal LM from the batch's earliest labelled position on,
  ``logits_to_keep``) and the kind's ``loss_function`` reads them: every other case (the LSTM's sampled
  softmax, ``loss.chunked=false``).

Packed batches (``data.packing``, :class:`multimsd.training.data.PackingCollator`) carry ``position_ids`` and no
attention mask; :func:`model_inputs` passes them so that transformers keeps attention within each example.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import torch

from multimsd.errors import MultimsdError
from multimsd.training.chunked_loss import chunked_weighted_cross_entropy, labelled_token_losses
from multimsd.training.config import LossSettings
from multimsd.training.loss import count_label_tokens
from multimsd.training.output_head import OutputHead, matches_logits

# The kinds (multimsd.training.kinds) build their loss from this module (ModelKind.build_loss), so it names their
# types in words only: `kind` is a ModelKind, `logits_loss` its LossFunction.

log = logging.getLogger(__name__)


def model_inputs(batch: dict) -> dict:
    """The model's token inputs: a packed row's ``position_ids`` (no mask), else the padding mask."""
    if "position_ids" in batch:
        # attention_mask=None is what makes transformers look for example boundaries in position_ids
        # (masking_utils.find_packed_sequence_indices; flash-attention's varlen path on GPU); it looks only when
        # there is no KV cache, and a causal LM builds one by default (config.use_cache), even in training.
        return {"input_ids": batch["input_ids"], "position_ids": batch["position_ids"], "use_cache": False}
    return {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}


def input_tokens(batch: dict) -> torch.Tensor | int:
    """Non-pad input tokens of a batch (a packed row has no padding, hence no mask): a tensor on the batch's
    device, read by the caller once per step together with the loss, so counting costs no synchronisation."""
    return batch["attention_mask"].sum() if "attention_mask" in batch else batch["input_ids"].numel()


def label_count(kind, batch: dict) -> int:
    """The label tokens the loss averages over, known on the host: the length of the collator's target index
    (:func:`multimsd.training.data.target_index`; no device round trip), else the kind's count (which reads the
    labels on the device)."""
    index = batch.get("target_index")
    return index.numel() if index is not None else count_label_tokens(batch["labels"])


def chunked_head(
    settings: LossSettings,
    kind,
    model,
    accelerator,
    probe: dict | None = None,
    own_loss: bool = False,
) -> OutputHead | None:
    """The output head for the chunked loss, or None (logits path; the reason is logged when chunked was asked).

    ``model`` is the unwrapped model; ``own_loss``: the kind computes a loss of its own from the logits (not the
    base weighted cross-entropy, which the chunked path computes instead); ``probe``, a small batch on the model's
    device, is run once both ways (:func:`multimsd.training.output_head.matches_logits`) so a model family whose
    logits are more than ``hidden @ W.T + b`` keeps the logits path instead of training on a different loss.
    """
    from accelerate.utils import DistributedType

    mode = settings.chunked_mode()
    if mode == "false":
        return None
    why = None
    head = kind.output_head(model)
    if own_loss:
        why = f"model.kind={kind.name} computes its own loss from the logits"
    elif head is None:
        why = "the model has no plain nn.Linear output head that makes its logits"
    elif accelerator.distributed_type == DistributedType.FSDP or (
        accelerator.distributed_type == DistributedType.DEEPSPEED
        and accelerator.state.deepspeed_plugin.zero_stage == 3
    ):
        why = "FSDP / ZeRO-3 shard the output head's weight outside the forward"
    elif probe is not None and not matches_logits(
        model,
        head,
        {**model_inputs(probe), **kind.logits_forward_kw(model, probe, False)[0]},
        {**model_inputs(probe), **kind.hidden_forward_kw(model, probe)},
        autocast=accelerator.autocast,
    ):
        why = "its hidden states projected by the output head do not give the model's logits"
    if why is not None and mode == "true":
        raise MultimsdError(f"loss.chunked=true: {why} (loss.chunked=auto computes the full logits there)")
    if why is not None:
        # Loud only where the chunked path was to be expected (a model with a usable head); the LSTM never has one.
        (log.warning if head is not None else log.info)(
            "loss.chunked=auto: not applied (%s); full logits", why
        )
        return None
    return head


@dataclass
class Forward:
    """What a micro-batch's forward hands its objective: the model's output (the logits path) or the final
    hidden states (the chunked path), and the first sequence position it covers (a causal LM's logits path
    skips the prompt's logits)."""

    output: Any
    start: int = 0


class MicroBatchLoss:
    """A micro-batch's forward (:meth:`forward`) and its objective (:meth:`objective`, a function of that
    output and the batch): its weighted token losses *summed* (the training step divides the sum by its label
    tokens, ``items``, over all its micro-batches and processes), by the chunked path when it applies (see the
    module docstring), else by the logits path; ``losses(model, batch, ...)`` is both.
    ``model`` is the prepared (possibly DDP-wrapped) model: every forward goes through its top-level call.

    Built once per run by the kind (:meth:`multimsd.training.kinds.base.ModelKind.build_loss`, which reads the
    loss settings): ``logits_loss`` is the kind's loss over the logits (the novel-token weighted cross-entropy of
    :mod:`multimsd.training.loss`, or the LSTM's sampled softmax)."""

    def __init__(
        self,
        settings: LossSettings,
        kind,
        model,
        accelerator,
        logits_loss,
        *,
        own_loss: bool = False,
        probe: dict | None = None,
    ):
        unwrapped = accelerator.unwrap_model(model)
        self.settings, self.kind, self.unwrapped = settings, kind, unwrapped
        self.head = chunked_head(settings, kind, unwrapped, accelerator, probe, own_loss)
        # The logits path of a causal LM skips the prompt's logits; the chunked path computes none it does not need.
        self.trim = self.head is None and kind.can_trim(unwrapped)
        self.loss_fn = logits_loss
        self.autocast = accelerator.autocast

    @property
    def chunked(self) -> bool:
        return self.head is not None

    def hidden_states(self, model, batch: dict) -> torch.Tensor:
        """The final hidden states, out of the top-level (DDP / PEFT) model call, with the head as identity."""
        # use_cache=False: no KV cache to fill in training (mBART turns it off itself only when given labels)
        kw = {"use_cache": False, **model_inputs(batch), **self.kind.hidden_forward_kw(self.unwrapped, batch)}
        with self.head.returning_hidden():
            out = model(**kw)
        return out.logits

    def forward(self, model, batch: dict) -> Forward:
        """The micro-batch through the model: the hidden states (chunked) or the model's output (logits)."""
        if self.head is None:
            kw, start = self.kind.logits_forward_kw(self.unwrapped, batch, self.trim)
            return Forward(model(**model_inputs(batch), **kw), start)
        return Forward(self.hidden_states(model, batch))

    def objective(self, out: Forward, batch: dict, *, step: int, micro_batch: int) -> torch.Tensor:
        """The micro-batch's summed loss from its forward's output and the batch (``step`` and ``micro_batch``
        seed the LSTM's sampled softmax, so a resumed run draws the same candidates)."""
        if self.head is None:
            return self.loss_fn(out.output, batch, out.start, step=step, micro_batch=micro_batch)
        # Under mixed precision the head's product runs in autocast's dtype, as the lm_head would have.
        with self.autocast():
            return chunked_weighted_cross_entropy(
                out.output,
                self.head.weight,
                batch["labels"],
                batch["novel"],
                theta=self.settings.theta,
                num_items=1,  # the sum
                bias=self.head.bias,
                chunk_size=self.settings.chunk_size,
                label_smoothing=self.settings.label_smoothing,
                target_index=batch.get("target_index"),
            )

    def __call__(self, model, batch: dict, *, step: int, micro_batch: int) -> torch.Tensor:
        return self.objective(self.forward(model, batch), batch, step=step, micro_batch=micro_batch)

    def items(self, batch: dict) -> int:
        """What the step's loss is averaged over, counted on the host: the label tokens of ``batch``."""
        return label_count(self.kind, batch)

    def step_metrics(self) -> dict:
        """What a step logs besides its loss: nothing more for the token loss."""
        return {}

    def validation_terms(self, model, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
        """The validation loss's sums and counts per example: the plain cross-entropy and its label tokens."""
        return self.example_cross_entropy(model, batch)

    def example_cross_entropy(self, model, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
        """Validation: per example, the summed plain cross-entropy (no θ, no smoothing) and its label count."""
        if self.head is None:
            kw, start = self.kind.logits_forward_kw(self.unwrapped, batch, self.trim)
            out = model(**model_inputs(batch), **kw)
            logits, labels = out.logits, batch["labels"][:, start:]
            ce = torch.nn.functional.cross_entropy(
                logits.float().reshape(-1, logits.shape[-1]),
                labels.reshape(-1),
                ignore_index=-100,
                reduction="none",
            ).view(labels.shape)
            return ce.sum(1), (labels != -100).sum(1).float()
        hidden = self.hidden_states(model, batch)
        index = batch.get("target_index")
        with self.autocast():
            losses, where = labelled_token_losses(
                hidden,
                self.head.weight,
                batch["labels"],
                bias=self.head.bias,
                chunk_size=self.settings.chunk_size,
                target_index=index,
            )
        # labelled positions come in row-major order: their row index says which example each loss belongs to
        rows = where.nonzero(as_tuple=True)[0] if index is None else index.to(where.device) // where.shape[1]
        sums = torch.zeros(where.shape[0], device=losses.device).index_add_(0, rows, losses)
        return sums, where.sum(1).float()
