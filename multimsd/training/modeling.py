"""Loading the model and tokenizer of the training stage (optionally wrapped with LoRA)."""

from __future__ import annotations

import logging

import torch

from multimsd.errors import MultimsdError
from multimsd.training.config import ModelSettings

log = logging.getLogger(__name__)

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


TINY_PREFIX = "tiny:"


def resolve_pretrained(name: str) -> str:
    """Hub ids and paths pass through; ``offline:smollm2`` / ``tiny:llama`` / ``tiny:mbart`` are built locally.

    The tiny models are random (seeded) and exist for tests and debug runs; they are built once into the
    multimsd cache.
    """
    from multimsd.models import offline

    if name.startswith(TINY_PREFIX):
        kind = name[len(TINY_PREFIX) :]
        builders = {"llama": offline.tiny_llama, "mbart": offline.tiny_mbart}
        if kind not in builders:
            raise MultimsdError(
                f"unknown tiny model {name!r} (have {', '.join(TINY_PREFIX + k for k in builders)})"
            )
        from multimsd.fsutil import atomic_directory
        from multimsd.paths import cache_dir

        target = cache_dir() / "models" / f"tiny-{kind}"
        if not (target / "config.json").exists():
            with atomic_directory(target) as tmp:
                builders[kind](tmp)
        return str(target)
    return offline.resolve_model_path(name)


def load_model_and_tokenizer(ms: ModelSettings):
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    if ms.dtype not in DTYPES:
        raise MultimsdError(f"model.dtype={ms.dtype!r}: choose {', '.join(DTYPES)}")
    path = resolve_pretrained(ms.pretrained)
    auto = AutoModelForCausalLM if ms.kind == "causal" else AutoModelForSeq2SeqLM
    kwargs = {"dtype": DTYPES[ms.dtype]}
    if ms.dropout is not None:
        kwargs["dropout"] = ms.dropout
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = auto.from_pretrained(path, **kwargs)
    except OSError:
        from multimsd.embed import hub_reachable

        hint = "the Hugging Face Hub is unreachable" if not hub_reachable() else "no such model on the Hub"
        raise MultimsdError(
            f"cannot load model {ms.pretrained!r}: not a local directory and {hint}. Download it where the Hub is "
            f"reachable (huggingface-cli download {ms.pretrained}) or use model=smollm2_lora offline"
        ) from None
    if tokenizer.pad_token is None:
        # Llama 3 ships without a pad token; padded positions are masked (attention) and ignored (labels).
        tokenizer.pad_token = tokenizer.eos_token
    if ms.kind == "causal" and getattr(tokenizer, "chat_template", None) is None:
        raise MultimsdError(
            f"model {ms.pretrained!r} has no chat template; the causal models here are chat models"
        )
    if ms.gradient_checkpointing:
        model.gradient_checkpointing_enable()
    if ms.lora.enabled:
        from peft import LoraConfig, TaskType, get_peft_model

        lcfg = LoraConfig(
            r=ms.lora.r,
            lora_alpha=ms.lora.alpha,
            lora_dropout=ms.lora.dropout,
            target_modules=list(ms.lora.target_modules),
            task_type=TaskType.CAUSAL_LM if ms.kind == "causal" else TaskType.SEQ_2_SEQ_LM,
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
