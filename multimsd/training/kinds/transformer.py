"""What the pretrained 🤗 transformers kinds (causal, seq2seq) share: loading with optional LoRA, reloading.

Loading also picks the model's attention (``model.attn_implementation``, :mod:`multimsd.training.attention`)
and applies liger-kernel's fused kernels where asked and possible (``model.fused_kernels``,
:mod:`multimsd.training.kernels`), before LoRA wraps the model.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from multimsd.errors import MultimsdError
from multimsd.training.attention import check_attn_implementation
from multimsd.training.config import ModelSettings
from multimsd.training.kernels import apply_fused_kernels, fused_kernels_mode
from multimsd.training.kinds.base import ModelKind, torch_dtype
from multimsd.training.quantization import (
    check_quantization,
    load_kwargs,
    prepare_for_training,
    quantize_in_place,
    uses_gradient_checkpointing,
)

log = logging.getLogger(__name__)

LLAMA_LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


@dataclass
class LoraSettings:
    """A LoRA adapter (peft) instead of full fine-tuning (MultiMSD: r 4, alpha 8, dropout 0.05, all linear
    projections of Llama)."""

    enabled: bool = False
    r: int = 4
    alpha: int = 8
    dropout: float = 0.05
    target_modules: list[str] = field(default_factory=lambda: list(LLAMA_LORA_TARGETS))


@dataclass
class TransformerModelSettings(ModelSettings):
    """``model=causal`` / ``model=seq2seq`` (and the presets built on them: smollm2_lora, mbart50, ...): a
    pretrained 🤗 transformers model, fully fine-tuned or with a LoRA adapter."""

    lora: LoraSettings = field(default_factory=LoraSettings)
    # QLoRA: the frozen base of a LoRA model in 4-bit NF4 (double quantization, computing in model.dtype) or
    # 8-bit LLM.int8(), by bitsandbytes (pip install 'multimsd[qlora]'); LoRA only
    # (multimsd.training.quantization).
    quantization: str = "none"  # none | 4bit | 8bit
    # Recompute activations in the backward pass (less memory, ~30 % slower). null: on with a quantized base
    # (QLoRA's recipe), off otherwise.
    gradient_checkpointing: bool | None = None
    # The attention the model runs: sdpa | eager | flex_attention | flash_attention_2 (the flash-attn package)
    # | null (transformers' default, sdpa). data.packing on a GPU needs flex_attention or flash_attention_2:
    # sdpa and eager build a dense mask over each packed row (multimsd.training.attention).
    attn_implementation: str | None = None
    # liger-kernel's fused RMSNorm, SwiGLU and RoPE (the gpu extra; never its loss): auto = where a CUDA device,
    # the package and a supported model type (Llama, Mistral, Qwen2, ...) are there, one log line saying what
    # or why not | true = an error where they cannot apply | false (multimsd.training.kernels).
    fused_kernels: str = "auto"


RANDOM_INIT_MARKER = "random_init.json"
"""Marks a ``random:<architecture>`` directory (configuration + tokenizer, no weights; benchmarks)."""


def is_random_init(path: str | Path) -> bool:
    """Whether ``path`` is a directory written by multimsd.training.models.random_init (build from config, no weights)."""
    return (Path(path) / RANDOM_INIT_MARKER).is_file()


def build_random(
    auto_class, path: str | Path, dtype, dropout: float | None = None, attn_implementation: str | None = None
):
    """A model of ``auto_class`` from the configuration at ``path``, random weights, on this process's device,
    running ``attn_implementation`` (None: transformers' default)."""
    import torch
    from accelerate import PartialState
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(str(path))
    if dropout is not None:
        config.dropout = dropout
    # Built where it will run: initialising 8B parameters on the CPU takes minutes, on a GPU a second.
    with torch.device(PartialState().device):
        return auto_class.from_config(config, dtype=dtype, attn_implementation=attn_implementation)


class TransformerKind(ModelKind):
    """A pretrained transformers model, fully fine-tuned or wrapped with a LoRA adapter (peft)."""

    options = TransformerModelSettings
    supports_sampling = True

    def auto_class(self):
        """The ``transformers.AutoModelFor…`` class of this kind."""
        raise NotImplementedError

    def lora_task_type(self):
        """The ``peft.TaskType`` of this kind's LoRA adapter."""
        raise NotImplementedError

    def check(self, cfg) -> None:
        super().check(cfg)
        ms = self.settings(cfg.model)
        check_attn_implementation(ms.attn_implementation)
        fused_kernels_mode(ms.fused_kernels)
        check_quantization(ms)

    def check_tokenizer(self, ms, tokenizer) -> None:
        """Raise a MultimsdError when the loaded tokenizer cannot serve this kind."""

    def output_head(self, model):
        from multimsd.training.output_head import find_output_head

        return find_output_head(model)

    def load(self, ms, path: str, train_rows: list[dict] | None = None, paraphrase: bool = False):
        from transformers import AutoTokenizer

        from multimsd.io import hub_reachable, model_unavailable

        ms = self.settings(ms)
        check_attn_implementation(ms.attn_implementation)  # before minutes of loading
        fused_kernels_mode(ms.fused_kernels)
        check_quantization(ms)
        # A Hub id that is not cached cannot be had offline: one line now, not minutes of download retries.
        if problem := model_unavailable(path, "model=smollm2_lora (built locally, offline)"):
            raise MultimsdError(f"cannot load model {ms.pretrained!r}: {problem}")
        kwargs = {"dtype": torch_dtype(ms.dtype), "attn_implementation": ms.attn_implementation}
        if ms.dropout is not None:
            kwargs["dropout"] = ms.dropout
        # A cached Hub id on a machine without the Hub: read from the cache without asking the Hub first.
        offline = not Path(path).expanduser().exists() and not hub_reachable()
        local = {"local_files_only": True} if offline else {}
        try:
            tokenizer = AutoTokenizer.from_pretrained(path, **local)
            if is_random_init(path):  # random:<architecture>: built from its configuration (benchmarks)
                model = build_random(
                    self.auto_class(), path, kwargs["dtype"], ms.dropout, ms.attn_implementation
                )
                if ms.quantization != "none":
                    model = quantize_in_place(model, ms)
            else:
                model = self.auto_class().from_pretrained(path, **kwargs, **load_kwargs(ms), **local)
        except OSError:
            hint = (
                "the Hugging Face Hub is unreachable" if not hub_reachable() else "no such model on the Hub"
            )
            raise MultimsdError(
                f"cannot load model {ms.pretrained!r}: not a local directory and {hint}. Download it where the "
                f"Hub is reachable (hf download {ms.pretrained}) or use model=smollm2_lora offline"
            ) from None
        if tokenizer.pad_token is None:
            # Llama 3 ships without a pad token; padded positions are masked (attention) and ignored (labels).
            tokenizer.pad_token = tokenizer.eos_token
        self.check_tokenizer(ms, tokenizer)
        # Before LoRA: liger patches the base model's own modules, which LoRA then wraps as they are.
        apply_fused_kernels(model, ms.fused_kernels)
        if ms.quantization != "none":
            model = prepare_for_training(model, ms)  # checkpointing included (on by default)
        elif uses_gradient_checkpointing(ms):
            model.gradient_checkpointing_enable()
        if ms.lora.enabled:
            from peft import LoraConfig, get_peft_model

            lcfg = LoraConfig(
                r=ms.lora.r,
                lora_alpha=ms.lora.alpha,
                lora_dropout=ms.lora.dropout,
                target_modules=list(ms.lora.target_modules),
                task_type=self.lora_task_type(),
            )
            model = get_peft_model(model, lcfg)
            trainable, total = model.get_nb_trainable_parameters()
            log.info(
                "LoRA: %s trainable of %s parameters (%.3f%%)",
                f"{trainable:,}",
                f"{total:,}",
                100 * trainable / total,
            )
        return model, tokenizer

    def load_best(self, cfg, path: Path, model):
        if self.settings(cfg.model).lora.enabled:  # the adapter alone was saved
            from peft import set_peft_model_state_dict
            from peft.utils import load_peft_weights

            set_peft_model_state_dict(model, load_peft_weights(str(path)))
        else:
            model.load_state_dict(self.auto_class().from_pretrained(str(path)).state_dict())
        return model
