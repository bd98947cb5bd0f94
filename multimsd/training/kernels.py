"""Fused GPU kernels for RMSNorm, SwiGLU and RoPE from liger-kernel (``model.fused_kernels``; the ``gpu`` extra).

A Llama layer's RMSNorms, its SwiGLU MLP activation (``silu(gate) * up``) and the rotary embedding are each a
handful of element-wise torch ops, every one a kernel launch and a round trip through GPU memory; liger-kernel's
Triton kernels do each in one pass (and keep less for the backward). They are applied to the loaded model,
before LoRA wraps it, with liger's own per-model-type function (``apply_liger_kernel_to_llama(model=...)``...):
its RMSNorm and SwiGLU patch the model's modules, its RoPE replaces the model type's ``apply_rotary_pos_emb``
for every model of that type in the process.

Never liger's cross-entropy or fused-linear-cross-entropy: multimsd computes its novel-token weighted loss
itself, from the hidden states (:mod:`multimsd.training.chunked_loss`), and liger's versions would replace the
model's forward with one that computes a plain loss. Both are passed as False, and a liger function that cannot
be told so is not called.

``model.fused_kernels``: ``auto`` (default) applies them where they can apply (a CUDA device, liger-kernel
importable, a supported model type) and logs one line saying what was applied or why not; ``true`` makes a
case where they cannot apply one error line; ``false`` never applies them.
"""

from __future__ import annotations

import importlib.util
import inspect
import logging

from multimsd.errors import MultimsdError

log = logging.getLogger(__name__)

FUSED_KERNELS_MODES = ("auto", "true", "false")

LIGER_MODEL_TYPES = frozenset(
    {
        "llama",
        "mistral",
        "ministral",
        "mixtral",
        "qwen2",
        "qwen3",
        "qwen3_moe",
        "phi3",
        "olmo2",
        "olmo3",
        "granite",
        "glm4",
        "smollm3",
    }
)
"""Text-only decoders with RMSNorm, a SwiGLU MLP and RoPE whose liger function takes ``rope``, ``rms_norm``,
``swiglu`` (liger-kernel 0.5-0.8). Gemma's GeGLU, multimodal wrappers and encoder-decoders (mBART) are not
among them: the kernels are left out there."""

WANTED = {"rope": True, "rms_norm": True, "swiglu": True}
REFUSED = {"cross_entropy": False, "fused_linear_cross_entropy": False}


def fused_kernels_mode(value) -> str:
    """``model.fused_kernels`` as ``auto`` / ``true`` / ``false`` (a YAML or command-line ``true`` arrives as
    a boolean or as its string ``"True"``)."""
    mode = str(value).strip().lower()
    if mode not in FUSED_KERNELS_MODES:
        raise MultimsdError(f"model.fused_kernels={value!r}: choose auto, true or false")
    return mode


def liger_installed() -> bool:
    """Whether the liger-kernel package is installed here (``pip install "multimsd[gpu]"``)."""
    return importlib.util.find_spec("liger_kernel") is not None


def why_not_fused(model_type: str | None, *, cuda: bool, liger: bool) -> str | None:
    """Why liger's kernels cannot apply to a model of ``model_type``, or None when they can."""
    if not cuda:
        return "no CUDA device: liger-kernel's kernels are Triton GPU kernels"
    if not liger:
        return 'liger-kernel is not installed (pip install "multimsd[gpu]")'
    if model_type not in LIGER_MODEL_TYPES:
        return (
            f"model type {model_type!r} has no liger RMSNorm + SwiGLU + RoPE (Llama, Mistral, Qwen2, ... do)"
        )
    return None


def liger_kwargs(parameters) -> dict | None:
    """The keyword arguments for a liger ``apply_liger_kernel_to_*`` function of these parameter names: its
    RMSNorm, SwiGLU and RoPE on, its cross-entropy and fused-linear-cross-entropy off; None where the function
    cannot be told all of that (it might then replace the model's forward or loss)."""
    names = set(parameters)
    if not {*WANTED, *REFUSED, "model"} <= names:
        return None
    return {**WANTED, **REFUSED}


def apply_fused_kernels(model, setting, cuda: bool | None = None) -> list[str]:
    """Apply liger-kernel's RMSNorm, SwiGLU and RoPE to ``model`` (a transformers model, not yet LoRA-wrapped)
    as ``model.fused_kernels`` asks; return what was applied (empty: nothing). ``cuda``: whether a CUDA device
    is there (None: ask torch), a parameter so the rule is tested on a CPU."""
    mode = fused_kernels_mode(setting)
    if mode == "false":
        return []
    if cuda is None:
        import torch

        cuda = torch.cuda.is_available()
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    why = why_not_fused(model_type, cuda=cuda, liger=liger_installed())
    apply = None
    if why is None:
        try:
            from liger_kernel.transformers.monkey_patch import MODEL_TYPE_TO_APPLY_LIGER_FN
        except ImportError as e:  # e.g. a liger-kernel built for another transformers major version
            why = f"liger-kernel cannot be imported ({e})"
        else:
            apply = MODEL_TYPE_TO_APPLY_LIGER_FN.get(model_type)
            kwargs = liger_kwargs(inspect.signature(apply).parameters) if apply else None
            if kwargs is None:
                why = (
                    f"this liger-kernel has no function for model type {model_type!r} that keeps its loss out"
                )
    if why is not None:
        if mode == "true":
            raise MultimsdError(f"model.fused_kernels=true: cannot apply ({why}); use auto or false")
        log.info("model.fused_kernels=auto: not applied (%s)", why)
        return []
    apply(model=model, **kwargs)
    applied = [name for name in ("rms_norm", "swiglu", "rope") if kwargs[name]]
    log.info("model.fused_kernels=%s: liger-kernel %s applied to %s", mode, " + ".join(applied), model_type)
    return applied
