"""Final hidden states out of a 🤗 transformers LM *through its own forward*, for the chunked loss.

The chunked loss (:mod:`multimsd.training.chunked_loss`) needs the hidden states that the ``lm_head`` reads, and
the ``lm_head``'s weight, instead of the logits. The hidden states must still come out of the top-level call of
the (possibly DDP-wrapped, PEFT-wrapped) model: DDP's gradient synchronisation is armed by that call, and PEFT
routes its adapters through it. Calling the inner decoder directly would bypass both.

How: :meth:`OutputHead.returning_hidden` replaces, for the duration of one forward, the ``forward`` of the
``lm_head`` *instance* by the identity (an instance attribute shadows the class's method, and
``nn.Module.__call__`` looks ``self.forward`` up on the instance; deleting the attribute restores the class's).
The model's forward is otherwise untouched, so ``outputs.logits`` holds the hidden states. Additive logit
biases applied after the head (mBART's ``final_logits_bias`` buffer) are swapped for a scalar zero meanwhile
and handed to the loss instead. Nothing is copied: the weight the loss uses *is* the ``lm_head``'s parameter
(tied to the input embeddings in SmolLM2 and mBART, trainable in full fine-tuning), so its gradient
accumulates in the same ``.grad`` as the embedding's, and DDP's reducer (which hooks each parameter's gradient
accumulation, ``find_unused_parameters=False``, Accelerate's default) syncs it as before.

When this cannot reproduce the logits, :func:`find_output_head` returns None and the caller keeps the logits
path: no ``get_output_embeddings()``; a head that is not a plain ``nn.Linear`` (a LoRA- or
``modules_to_save``-wrapped head, a quantised one); a config that soft-caps the logits (Gemma). A constant
factor after the head (Cohere's ``logit_scale``, Granite's ``logits_scaling``) is harmless: it multiplies the
hidden states instead, and the projection is linear. :func:`matches_logits` then checks one real input
numerically, which also catches a model family that transforms its logits in a way not foreseen here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from torch import nn

# Config attributes of transformers models that change the logits non-linearly after the head (None = off);
# small logits pass through tanh soft-capping almost unchanged, so a numerical check could miss it.
LOGIT_POSTPROCESSING = ("final_logit_softcapping",)
# Buffers some encoder-decoders add to the head's output (``lm_logits = lm_head(h) + final_logits_bias``).
LOGIT_BIAS_BUFFERS = ("final_logits_bias",)


def base_model(model: nn.Module) -> nn.Module:
    """The transformers model under a PEFT wrapper (the model itself otherwise)."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


@dataclass
class OutputHead:
    """The output projection of a transformers LM: ``logits = hidden @ weight.T + bias``."""

    model: nn.Module  # the transformers model that owns ``head`` (and the logit bias buffers)
    head: nn.Linear

    @property
    def weight(self) -> torch.Tensor:
        return self.head.weight

    @property
    def bias(self) -> torch.Tensor | None:
        """The head's own bias plus the buffers added after it, as one ``[V]`` tensor (None when there is none)."""
        parts = [self.head.bias] if self.head.bias is not None else []
        parts += [
            getattr(self.model, n).reshape(-1) for n in LOGIT_BIAS_BUFFERS if _has_buffer(self.model, n)
        ]
        return sum(parts[1:], parts[0]) if parts else None

    @contextlib.contextmanager
    def returning_hidden(self) -> Iterator[None]:
        """Within the block the model's forward returns the final hidden states as ``outputs.logits``."""
        saved = {n: getattr(self.model, n) for n in LOGIT_BIAS_BUFFERS if _has_buffer(self.model, n)}
        self.head.forward = _identity
        for name, buf in saved.items():
            # ``hidden + 0`` is exact; a 0-dim tensor does not change the hidden states' dtype or shape.
            setattr(self.model, name, torch.zeros((), dtype=buf.dtype, device=buf.device))
        try:
            yield
        finally:
            del self.head.forward
            for name, buf in saved.items():
                setattr(self.model, name, buf)


def _identity(hidden: torch.Tensor) -> torch.Tensor:
    return hidden


def _has_buffer(module: nn.Module, name: str) -> bool:
    return isinstance(getattr(module, "_buffers", {}).get(name), torch.Tensor)


def find_output_head(model: nn.Module) -> OutputHead | None:
    """The output projection of ``model`` (a transformers LM, PEFT-wrapped or not; not DDP-wrapped), or None
    when :meth:`OutputHead.returning_hidden` could not reproduce its logits (see the module docstring)."""
    base = base_model(model)
    get = getattr(base, "get_output_embeddings", None)
    head = get() if callable(get) else None
    # Exactly nn.Linear: LoRA / modules_to_save wrappers and quantised linears (bitsandbytes subclasses it) hold
    # their weight differently, so F.linear(hidden, head.weight) would not be their output.
    if type(head) is not nn.Linear:
        return None
    config = getattr(base, "config", None)
    for name in LOGIT_POSTPROCESSING:
        value = getattr(config, name, None)
        if value is not None:
            return None
    return OutputHead(base, head)


@torch.no_grad()
def matches_logits(
    model: nn.Module,
    head: OutputHead,
    logits_kw: dict,
    hidden_kw: dict,
    autocast: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
) -> bool:
    """Whether ``model(**hidden_kw)`` under :meth:`OutputHead.returning_hidden`, projected, gives the logits of
    ``model(**logits_kw)`` (one forward each, in eval mode so dropout draws nothing; train mode restored).

    ``autocast`` is the context the training step projects the hidden states in (``accelerator.autocast``): under
    mixed precision the model's own ``lm_head`` runs in autocast's dtype, and so does the chunked loss's
    projection, so the check projects there too and allows a few units in the last place of *that* dtype. (A
    float32 projection compared with bf16 logits at a float32 tolerance always failed, which sent every mixed
    precision run to the full-logits path.)

    A model that fails under the replaced head, or post-processes its logits, answers False."""
    was_training = model.training
    model.eval()
    try:
        expected = model(**logits_kw).logits.float()
        with head.returning_hidden():
            hidden = model(**hidden_kw).logits
        bias = head.bias
        with autocast():
            projected = torch.nn.functional.linear(
                hidden.to(head.weight.dtype),
                head.weight,
                None if bias is None else bias.to(head.weight.dtype),
            )
        got = projected.float()
    except Exception:  # noqa: BLE001 - any failure means: keep the logits path
        return False
    finally:
        model.train(was_training)
    if got.shape != expected.shape:
        return False
    # A few units in the last place of the dtype the product ran in (bf16 weights, or autocast's bf16 / fp16):
    # the bias is added after rounding in one path and inside the product in the other.
    dtype = projected.dtype if projected.dtype.is_floating_point else head.weight.dtype
    tol = 8 * torch.finfo(dtype).eps * max(float(expected.abs().max()), 1.0)
    return bool((got - expected).abs().max() <= tol)
