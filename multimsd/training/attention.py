"""Which attention a transformers model runs (``model.attn_implementation``), and when packing may use it.

Packing (``data.packing``, :class:`multimsd.training.data.PackingCollator`) puts a micro-batch's examples in one
row with ``position_ids`` restarting per example and no attention mask. transformers (``masking_utils``:
``_preprocess_mask_arguments`` -> ``find_packed_sequence_indices``, when there is no mask and no KV cache) reads
the example boundaries off those position ids, and what it builds from them depends on the implementation:

* ``sdpa`` / ``eager`` (``sdpa`` is transformers' default): a dense boolean ``[row, row]`` block-diagonal mask
  for every packed row. Quadratic in the row's length, and with an explicit mask torch's SDPA cannot use its
  flash kernel: on an H200 a packed Llama-3.1-8B + LoRA run was 0.80x the padded 🤗 Trainer (issue #30);
* ``flex_attention`` (ships with torch): a ``BlockMask`` made from the same per-example ids
  (``create_block_mask``, compiled), which skips the blocks between examples: no dense mask (verified on CPU
  with transformers 5.24: the packed row's logits are each example's own, tests/training/test_attention.py);
* ``flash_attention_2`` (the flash-attn package): no mask at all; its varlen kernels take the example
  boundaries from the position ids (``_is_packed_sequence`` -> ``cu_seqlens``).

Hence on a GPU packing is refused with one line unless the model runs flex_attention or flash_attention_2
(:func:`check_attention`). On a CPU there is no flash kernel to lose and the rows are short, so packing keeps
working with every implementation (the tests pack through sdpa). torch's FlexAttention has no backward on a
CPU, so training with it there is refused too (the forward works: the tests compare losses through it).

Decoding does not pack; :func:`decoding_attention` runs it with sdpa when the model trains with flex_attention
(each decoding step would build and compile a new block mask; on this CPU inductor fails to compile the
decoding kernel at all).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import logging

from multimsd.errors import MultimsdError

log = logging.getLogger(__name__)

ATTN_IMPLEMENTATIONS = ("sdpa", "eager", "flex_attention", "flash_attention_2")
"""``model.attn_implementation`` values (or null: transformers' default, sdpa where torch has it)."""

PACKING_ATTENTION = ("flex_attention", "flash_attention_2")
"""The implementations that keep packed examples apart without a dense mask over the row."""


def flash_attn_installed() -> bool:
    """Whether the flash-attn package (``flash_attention_2``) can be imported here."""
    return importlib.util.find_spec("flash_attn") is not None


def check_attn_implementation(value: str | None, flash_installed: bool | None = None) -> None:
    """Raise a MultimsdError for a ``model.attn_implementation`` that cannot be loaded here."""
    if value is None:
        return
    if value not in ATTN_IMPLEMENTATIONS:
        raise MultimsdError(
            f"model.attn_implementation={value!r}: choose {', '.join(ATTN_IMPLEMENTATIONS)} or null "
            "(transformers' default, sdpa)"
        )
    if flash_installed is None:
        flash_installed = flash_attn_installed()
    if value == "flash_attention_2" and not flash_installed:
        raise MultimsdError(
            "model.attn_implementation=flash_attention_2 needs the flash-attn package, not installed here: "
            "pip install flash-attn (CUDA), or use model.attn_implementation=flex_attention (ships with torch)"
        )


def model_attn_implementation(model) -> str | None:
    """The attention a loaded model runs (a PEFT-wrapped one: its base model's); None for a non-transformers
    model (the LSTM)."""
    return getattr(getattr(model, "config", None), "_attn_implementation", None)


@functools.cache
def flex_has_backward(device_type: str) -> bool:
    """Whether torch's FlexAttention can be trained through on ``device_type`` (torch 2.13: not on a CPU).

    Asked of torch itself, on three tiny tensors: its device check raises before any computation where the
    backward is missing, and a torch that adds it simply runs the tiny call."""
    if device_type not in ("cpu", "mps"):
        return True
    import torch
    from torch.nn.attention.flex_attention import flex_attention

    q = torch.zeros(1, 1, 16, 16, device=device_type, requires_grad=True)
    try:
        with torch.no_grad():
            flex_attention(q, q.detach(), q.detach())
    except NotImplementedError:
        return False
    return True


def check_attention(cfg, kind, model, device_type: str) -> bool:
    """Whether this training run packs its micro-batches; raise a MultimsdError where the model's attention
    cannot serve it: packing on a GPU through an attention that builds a dense mask over each packed row, or
    flex_attention on a device where torch has no backward for it. ``device_type``: the accelerator's
    (``accelerator.device.type``), a parameter so the GPU rule is tested on a CPU."""
    impl = model_attn_implementation(model)
    if impl == "flex_attention" and not flex_has_backward(device_type):
        raise MultimsdError(
            f"model.attn_implementation=flex_attention cannot train on {device_type}: torch's FlexAttention "
            "has no backward there. Train on a GPU, or use model.attn_implementation=sdpa"
        )
    packing = bool(cfg.data.packing and kind.supports_packing)
    if packing and device_type == "cuda" and impl not in PACKING_ATTENTION:
        fix = "model.attn_implementation=flex_attention" + (
            " (or flash_attention_2)" if flash_attn_installed() else ""
        )
        raise MultimsdError(
            f"data.packing=true on a GPU needs an attention that keeps the packed examples apart without a "
            f"dense mask; the model runs {impl or 'its default attention'}, which builds a [row x row] mask "
            f"over every packed row (quadratic, no flash kernel): set {fix}, or data.packing=false"
        )
    return packing


@contextlib.contextmanager
def decoding_attention(model):
    """Within it, a model that trains with flex_attention decodes with sdpa (the same attention values; no
    block mask built and compiled at every step); anything else runs as it is. Restored on the way out."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    if model_attn_implementation(base) != "flex_attention" or not hasattr(base, "set_attn_implementation"):
        yield model
        return
    base.set_attn_implementation("sdpa")
    try:
        yield model
    finally:
        base.set_attn_implementation("flex_attention")
