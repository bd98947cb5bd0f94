"""``model.kind=seq2seq``: mBART-50, fully fine-tuned (or with LoRA), one language code per example.

mBART-50 reads ``[code] X </s>`` and writes ``[code] Y </s>``; the language code of the example is set on both
sides, and generation is forced to start with it (else mBART-50 may answer in another language).
"""

from __future__ import annotations

from collections import defaultdict

from multimsd.training.decode import (
    Generated,
    decode_batches,
    eos_token_ids,
    forces_end,
    keep_to_caps,
    row_caps,
)
from multimsd.training.kinds.base import Tokenized, novel_flags, register_kind, sampling, tokenizer_set
from multimsd.training.kinds.transformer import TransformerKind
from multimsd.training.number_guard import guard_kwargs

MBART50_LANG_CODES: dict[str, str] = {
    "de": "de_DE",
    "en": "en_XX",
    "es": "es_XX",
    "fr": "fr_XX",
    "it": "it_IT",
    "ja": "ja_XX",
    "pt": "pt_XX",
    "ru": "ru_RU",
    "zh": "zh_CN",
}
"""mBART-50 language code of each project language."""


@register_kind("seq2seq")
class Seq2SeqKind(TransformerKind):
    default_pretrained = "facebook/mbart-large-50"  # model=seq2seq on its own: MultiMSD's mBART-50

    def auto_class(self):
        from transformers import AutoModelForSeq2SeqLM

        return AutoModelForSeq2SeqLM

    def lora_task_type(self):
        from peft import TaskType

        return TaskType.SEQ_2_SEQ_LM

    def peft_auto_class(self):
        from peft import AutoPeftModelForSeq2SeqLM

        return AutoPeftModelForSeq2SeqLM

    def logits_forward_kw(self, model, batch: dict, trim: bool) -> tuple[dict, int]:
        # Given labels, mBART computes its own cross-entropy over all [tokens, 250k] logits, which the weighted
        # loss would then compute again: the decoder inputs it would build from them instead (and no KV cache,
        # which it turns off itself only when given labels), so a step makes one vocabulary-wide pass, not two.
        return {"use_cache": False, **self.hidden_forward_kw(model, batch)}, 0

    def encode(self, tokenizer, row: dict, max_length: int) -> Tokenized:
        """``[lang] X </s>`` -> ``[lang] Y </s>`` with the example's own language code on both sides."""
        code = MBART50_LANG_CODES[row["lang"]]
        with tokenizer_set(tokenizer, src_lang=code, tgt_lang=code):
            enc = tokenizer(row["complex"], text_target=row["simple"], max_length=max_length, truncation=True)
        special = set(tokenizer.all_special_ids) | {tokenizer.convert_tokens_to_ids(code)}
        labels = list(enc["labels"])
        return Tokenized(list(enc["input_ids"]), labels, novel_flags(labels, set(enc["input_ids"]), special))

    def generation_settings(self, cfg) -> dict:
        # max_length, as the paper's decoding: it counts the decoder's start token (</s> for mBART)
        return {"num_beams": cfg.eval.num_beams, "max_length": cfg.eval.max_new_tokens, **sampling(cfg)}

    def generate(self, cfg, model, tokenizer, rows: list[dict], shots: dict) -> list[Generated]:
        out: dict[int, str] = {}
        by_lang = defaultdict(list)
        eos = eos_token_ids(model, tokenizer)
        for k, r in enumerate(rows):
            by_lang[r["lang"]].append(k)
        # One language a batch: generation is forced to start with that language's code.
        for lang, idx in by_lang.items():
            code = MBART50_LANG_CODES[lang]
            with tokenizer_set(tokenizer, src_lang=code):  # the caller's tokenizer as it was, after
                code_id = tokenizer.convert_tokens_to_ids(code)
                sources = [rows[k]["complex"] for k in idx]
                encoded = tokenizer(sources, truncation=True, max_length=cfg.data.max_length)["input_ids"]
                # new tokens: max_length less the start token; the source counted without its 2 special tokens
                caps_of = row_caps(
                    [len(ids) - 2 for ids in encoded], cfg.eval, cap=cfg.eval.max_new_tokens - 1
                )

                def decode(
                    part: list[int], sources=sources, code_id=code_id, caps_of=caps_of
                ) -> list[Generated]:
                    enc = tokenizer(
                        [sources[j] for j in part],
                        return_tensors="pt",
                        padding=True,
                        truncation=True,
                        max_length=cfg.data.max_length,
                    )
                    enc = {n: t.to(model.device) for n, t in enc.items()}
                    # mBART-50 must be forced to start with the target language code, or it may answer in another.
                    guard = guard_kwargs(cfg, tokenizer, [sources[j] for j in part])  # eval.number_guard
                    # max_length counts the decoder's start token (position 0, which is </s> for mBART); each
                    # row's cap on new tokens is bounded by its source's length (eval.length_ratio)
                    caps = [caps_of[j] for j in part]
                    settings = {**self.generation_settings(cfg), "max_length": max(caps) + 1}
                    gen = model.generate(**enc, **settings, **guard, forced_bos_token_id=code_id)
                    kept, cut = keep_to_caps(gen[:, 1:], eos, caps, forces_end(model))
                    texts = tokenizer.batch_decode(kept, skip_special_tokens=True)
                    return [Generated(" ".join(t.split()), c) for t, c in zip(texts, cut)]

                # eval.max_batch_tokens=auto: sized from the device's free memory, a cache per beam (num_beams)
                texts = decode_batches([len(ids) for ids in encoded], cfg.eval, decode, model=model)
                out.update(zip(idx, texts))
        return [out[k] for k in range(len(rows))]
