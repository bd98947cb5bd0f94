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
    from multimsd.training.models import offline

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


def check_lstm_settings(cfg) -> None:
    """Settings of ``model.kind=lstm`` that are wrong before any data is read (a TrainConfig)."""
    from multimsd.training.models.lstm import ATTENTIONS

    s = cfg.model.lstm
    if cfg.model.lora.enabled:
        raise MultimsdError(
            "model.lora.enabled=true: LoRA adapts pretrained transformers, not model.kind=lstm"
        )
    if s.attention not in ATTENTIONS:
        raise MultimsdError(f"model.lstm.attention={s.attention!r}: choose {' or '.join(ATTENTIONS)}")
    if s.sampler not in ("log_uniform", "unigram"):
        raise MultimsdError(f"model.lstm.sampler={s.sampler!r}: choose log_uniform or unigram")
    if s.num_sampled < 0:
        raise MultimsdError(f"model.lstm.num_sampled={s.num_sampled}: must be >= 0 (0 = full softmax)")
    if s.num_sampled and cfg.loss.label_smoothing:
        raise MultimsdError("loss.label_smoothing needs the full softmax: set model.lstm.num_sampled=0")
    sizes = (
        "embedding_size",
        "hidden_size",
        "encoder_layers",
        "decoder_layers",
        "max_vocab_size",
        "min_count",
    )
    bad = [f"model.lstm.{k}={getattr(s, k)}" for k in sizes if getattr(s, k) < 1]
    if bad:
        raise MultimsdError(f"must be >= 1: {', '.join(bad)}")


def load_lstm(ms: ModelSettings, train_rows: list[dict] | None, paraphrase: bool = False):
    """The word-level LSTM encoder-decoder (Adduru et al. 2018) and its word tokenizer.

    ``model.pretrained=scratch``: vocabularies built from ``train_rows`` (the training split after language
    selection; deterministic, so a resumed run rebuilds the same ids) and random weights drawn from the
    already seeded global RNG. Otherwise a directory saved by an LSTM run (its ``best/``): architecture and
    vocabularies come from there and the size settings in ``model.lstm`` are not used.
    """
    from pathlib import Path

    from multimsd.training.models.lstm import LstmSeq2Seq, LstmSeq2SeqConfig, WordTokenizer

    s = ms.lstm
    if ms.pretrained == "scratch":
        if not train_rows:
            raise MultimsdError(
                "model.kind=lstm builds its vocabularies from the training split, which is empty"
            )
        shared = paraphrase if s.shared_vocab is None else s.shared_vocab
        tokenizer = WordTokenizer.build(
            train_rows,
            lowercase=s.lowercase,
            max_vocab_size=s.max_vocab_size,
            min_count=s.min_count,
            shared=shared,
        )
        config = LstmSeq2SeqConfig(
            src_vocab_size=tokenizer.source_vocab_size,
            tgt_vocab_size=tokenizer.target_vocab_size,
            embedding_size=s.embedding_size,
            hidden_size=s.hidden_size,
            encoder_layers=s.encoder_layers,
            decoder_layers=s.decoder_layers,
            attention=s.attention,
            input_feeding=s.input_feeding,
            dropout=ms.dropout or 0.0,
        )
        model = LstmSeq2Seq(config)
    else:
        path = Path(ms.pretrained).expanduser()
        if not path.is_dir():
            raise MultimsdError(
                f"model.pretrained={ms.pretrained!r}: model.kind=lstm takes 'scratch' or the directory of a saved "
                f"LSTM model (an LSTM run's best/)"
            )
        model, tokenizer = LstmSeq2Seq.from_pretrained(path), WordTokenizer.from_pretrained(path)
    if s.num_sampled and s.num_sampled >= tokenizer.target_vocab_size:
        raise MultimsdError(
            f"model.lstm.num_sampled={s.num_sampled} must be smaller than the target vocabulary "
            f"({tokenizer.target_vocab_size} words with the specials); lower it, or 0 for the full softmax"
        )
    n = sum(p.numel() for p in model.parameters())
    log.info(
        "LSTM seq2seq: %s parameters, vocabularies %d (source) / %d (target)%s",
        f"{n:,}",
        tokenizer.source_vocab_size,
        tokenizer.target_vocab_size,
        " shared" if tokenizer.shared else "",
    )
    return model.to(DTYPES[ms.dtype]), tokenizer


def load_model_and_tokenizer(
    ms: ModelSettings, train_rows: list[dict] | None = None, paraphrase: bool = False
):
    """The model and tokenizer of ``ms``; ``train_rows`` / ``paraphrase`` are used by ``kind=lstm`` only."""
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    if ms.dtype not in DTYPES:
        raise MultimsdError(f"model.dtype={ms.dtype!r}: choose {', '.join(DTYPES)}")
    if ms.kind == "lstm":
        return load_lstm(ms, train_rows, paraphrase)
    path = resolve_pretrained(ms.pretrained)
    auto = AutoModelForCausalLM if ms.kind == "causal" else AutoModelForSeq2SeqLM
    kwargs = {"dtype": DTYPES[ms.dtype]}
    if ms.dropout is not None:
        kwargs["dropout"] = ms.dropout
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = auto.from_pretrained(path, **kwargs)
    except OSError:
        from multimsd.io import hub_reachable

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
