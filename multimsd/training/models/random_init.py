"""Full-size architectures with random weights, for benchmarks: ``model.pretrained=random:<name>``.

The throughput, memory and checkpoint size of a training run depend on the architecture, not on the values of
the weights. Where the Hub is unreachable (this project's machines, a GPU box without internet) a benchmark can
still measure the paper's models with the exact shapes: ``random:llama31_8b`` is Llama-3.1-8B-Instruct's
configuration with SmolLM2's tokenizer and chat template (49,152 of its 128,256 embedding rows used), and
``random:mbart_large50`` is facebook/mbart-large-50's configuration with the rebuilt mBART-50 tokenizer (the
same 250,054 ids). ``random:smollm2`` (SmolLM2-135M's configuration) is small enough for CPU tests.

The directory holds the configuration and tokenizer and a marker file, no weights (8B of random numbers on disk
would be 16 GB to write and read back): the model kind builds the model from the configuration, directly on the
process's device, seeded by the run's seed (``set_seed`` precedes model loading in the training stage).
"""

from __future__ import annotations

import json
from pathlib import Path

from multimsd.errors import MultimsdError
from multimsd.training.kinds.transformer import RANDOM_INIT_MARKER as MARKER

RANDOM_PREFIX = "random:"

LLAMA31_8B = {
    "vocab_size": 128256,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "max_position_embeddings": 8192,
    "rope_theta": 500000.0,
    "rms_norm_eps": 1e-5,
    "tie_word_embeddings": False,
}
"""Llama-3.1-8B's shapes (meta-llama/Llama-3.1-8B-Instruct config.json; RoPE scaling omitted: the sentences
here are far shorter than its 8k original context)."""

SMOLLM2_135M = {
    "vocab_size": 49152,
    "hidden_size": 576,
    "intermediate_size": 1536,
    "num_hidden_layers": 30,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "max_position_embeddings": 8192,
    "rope_theta": 100000.0,
    "rms_norm_eps": 1e-5,
    "tie_word_embeddings": True,
}

MBART_LARGE50 = {
    "vocab_size": 250054,
    "d_model": 1024,
    "encoder_layers": 12,
    "decoder_layers": 12,
    "encoder_attention_heads": 16,
    "decoder_attention_heads": 16,
    "encoder_ffn_dim": 4096,
    "decoder_ffn_dim": 4096,
    "max_position_embeddings": 1024,
    "scale_embedding": True,
    "activation_function": "gelu",
}

ARCHITECTURES = {
    "llama31_8b": ("llama", LLAMA31_8B),
    "smollm2": ("llama", SMOLLM2_135M),
    "mbart_large50": ("mbart", MBART_LARGE50),
}


def _write(name: str, out: Path) -> None:
    from transformers import AutoTokenizer, GenerationConfig, LlamaConfig, MBartConfig

    from multimsd.training.models.mbart50 import build_mbart50_tokenizer
    from multimsd.training.models.offline import SMOLLM2_SPECIAL_IDS, build_smollm2_tokenizer

    family, shape = ARCHITECTURES[name]
    if family == "llama":
        tokenizer = AutoTokenizer.from_pretrained(str(build_smollm2_tokenizer()))
        ids = SMOLLM2_SPECIAL_IDS
        config = LlamaConfig(
            **shape, pad_token_id=ids["pad"], bos_token_id=ids["bos"], eos_token_id=ids["eos"]
        )
        gen = GenerationConfig(pad_token_id=ids["pad"], bos_token_id=ids["bos"], eos_token_id=ids["eos"])
    else:
        tokenizer = build_mbart50_tokenizer("en", "en", model_max_length=shape["max_position_embeddings"])
        eos = tokenizer.eos_token_id
        # mBART-50 starts decoding from </s> and ends on it; the model and its generation config say the same.
        special = {
            "pad_token_id": tokenizer.pad_token_id,
            "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": eos,
            "decoder_start_token_id": eos,
            "forced_eos_token_id": eos,
        }
        config = MBartConfig(**shape, **special)
        gen = GenerationConfig(**special)
    config.save_pretrained(str(out))
    gen.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    (out / MARKER).write_text(json.dumps({"architecture": name}) + "\n", encoding="utf-8")


def random_model_dir(name_or_id: str, cache_dir: str | Path | None = None) -> Path:
    """The directory (configuration + tokenizer + marker) of ``random:<name>``, written on first use."""
    from multimsd.fsutil import atomic_directory
    from multimsd.paths import cache_dir as default_cache

    name = name_or_id[len(RANDOM_PREFIX) :].strip()
    if name not in ARCHITECTURES:
        known = ", ".join(RANDOM_PREFIX + n for n in ARCHITECTURES)
        raise MultimsdError(f"unknown random-weight architecture {name_or_id!r} (known: {known})")
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache() / "models"
    target = root / f"random-{name}"
    if not (target / MARKER).exists():
        with atomic_directory(target) as tmp:
            _write(name, tmp)
    return target
