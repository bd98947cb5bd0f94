"""Decoding (batched, split over processes) and the validation metrics of the training stage."""

from __future__ import annotations

from collections import defaultdict

import torch

from multimsd.training.prompts import chat_messages, sample_shots


def _shots_by_lang(cfg, shot_pool) -> dict[str, list[tuple[str, str]]]:
    if not shot_pool or cfg.icl.shots <= 0:
        return {}
    by_lang = defaultdict(list)
    for r in shot_pool:
        by_lang[r["lang"]].append((r["complex"], r["simple"]))
    # The same k seeded examples for every sentence of a language (paper: 5 random validation pairs).
    return {lang: sample_shots(pool, cfg.icl.shots, cfg.icl.seed) for lang, pool in by_lang.items()}


@torch.no_grad()
def _generate_causal(cfg, model, tokenizer, rows: list[dict], shots: dict) -> list[str]:
    prompts = [
        tokenizer.apply_chat_template(
            chat_messages(r["complex"], r["lang"], shots=shots.get(r["lang"], ())),
            tokenize=False,
            add_generation_prompt=True,
        )
        for r in rows
    ]
    side = tokenizer.padding_side
    tokenizer.padding_side = (
        "left"  # decoder-only: pad on the left so every prompt ends where generation starts
    )
    out = []
    try:
        for k in range(0, len(prompts), cfg.eval.batch_size):
            enc = tokenizer(
                prompts[k : k + cfg.eval.batch_size],
                return_tensors="pt",
                padding=True,
                add_special_tokens=False,
            )
            enc = {n: t.to(model.device) for n, t in enc.items()}
            gen = model.generate(
                **enc,
                max_new_tokens=cfg.eval.max_new_tokens,
                do_sample=False,
                num_beams=cfg.eval.num_beams,
                pad_token_id=tokenizer.pad_token_id,
            )
            texts = tokenizer.batch_decode(gen[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
            out.extend(" ".join(t.split()) for t in texts)
    finally:
        tokenizer.padding_side = side
    return out


@torch.no_grad()
def _generate_seq2seq(cfg, model, tokenizer, rows: list[dict]) -> list[str]:
    from multimsd.training.models.offline import MBART50_LANG_CODES

    out: dict[int, str] = {}
    by_lang = defaultdict(list)
    for k, r in enumerate(rows):
        by_lang[r["lang"]].append(k)
    for lang, idx in by_lang.items():
        code = MBART50_LANG_CODES[lang]
        tokenizer.src_lang = code
        code_id = tokenizer.convert_tokens_to_ids(code)
        for s in range(0, len(idx), cfg.eval.batch_size):
            chunk = idx[s : s + cfg.eval.batch_size]
            enc = tokenizer(
                [rows[k]["complex"] for k in chunk],
                return_tensors="pt",
                padding=True,
                truncation=True,
                max_length=cfg.data.max_length,
            )
            enc = {n: t.to(model.device) for n, t in enc.items()}
            # mBART-50 must be forced to start with the target language code, or it may answer in another.
            gen = model.generate(
                **enc,
                num_beams=cfg.eval.num_beams,
                max_length=cfg.eval.max_new_tokens,
                forced_bos_token_id=code_id,
            )
            for k, t in zip(chunk, tokenizer.batch_decode(gen, skip_special_tokens=True)):
                out[k] = " ".join(t.split())
    return [out[k] for k in range(len(rows))]


@torch.no_grad()
def _generate_lstm(cfg, model, tokenizer, rows: list[dict]) -> list[str]:
    """The word-level LSTM: greedy (``eval.num_beams=1``) or beam search, at most ``eval.max_new_tokens`` words."""
    pad = tokenizer.pad_token_id
    device = next(model.parameters()).device
    out = []
    for s in range(0, len(rows), cfg.eval.batch_size):
        chunk = rows[s : s + cfg.eval.batch_size]
        ids = [
            tokenizer.encode_source(r["complex"], r["lang"], cfg.data.max_length) or [tokenizer.unk_token_id]
            for r in chunk
        ]
        n = max(len(i) for i in ids)
        input_ids = torch.tensor([i + [pad] * (n - len(i)) for i in ids], device=device)
        gen = model.generate(
            input_ids,
            attention_mask=input_ids != pad,
            max_new_tokens=cfg.eval.max_new_tokens,
            num_beams=cfg.eval.num_beams,
        )
        out.extend(tokenizer.batch_decode(gen, [r["lang"] for r in chunk]))
    return out


def generate(cfg, model, tokenizer, rows: list[dict], accelerator, shot_pool=None) -> list[str]:
    """Outputs for ``rows`` in order; each process decodes its share and the main process gathers them."""
    from accelerate.utils import gather_object

    model = accelerator.unwrap_model(model)
    was_training = model.training
    model.eval()
    indexed = list(enumerate(rows))
    with accelerator.split_between_processes(indexed) as part:
        local_rows = [r for _, r in part]
        if cfg.model.kind == "causal":
            preds = _generate_causal(cfg, model, tokenizer, local_rows, _shots_by_lang(cfg, shot_pool))
        elif cfg.model.kind == "lstm":
            preds = _generate_lstm(cfg, model, tokenizer, local_rows)
        else:
            preds = _generate_seq2seq(cfg, model, tokenizer, local_rows)
        local = [(k, p) for (k, _), p in zip(part, preds)]
    gathered = dict(gather_object(local)) if accelerator.num_processes > 1 else dict(local)
    if was_training:
        model.train()
    return [gathered[k] for k in range(len(rows))]


def score_predictions(rows: list[dict], preds: list[str]) -> dict:
    """SARI and BLEU per language (language-aware tokenisation) and their mean over languages."""
    # The evaluation stage's scorer with evaluate.py's default settings (MetricsConfig: lowercased, EASSE
    # smoothing), so the mean_sari_bleu selected on here is the number evaluate.py reports.
    from multimsd.config import MetricsConfig
    from multimsd.metrics import score_language

    settings = MetricsConfig()
    per_lang = {}
    for lang in sorted({r["lang"] for r in rows}):
        idx = [k for k, r in enumerate(rows) if r["lang"] == lang]
        orig = [rows[k]["complex"] for k in idx]
        refs = [[rows[k]["simple"] for k in idx]]
        sys = [preds[k] for k in idx]
        scores = score_language(orig, sys, refs, lang=lang, settings=settings, include=("sari", "bleu"))
        sari, bleu = scores["sari"], scores["bleu"]
        per_lang[lang] = {"sari": sari, "bleu": bleu, "mean_sari_bleu": (sari + bleu) / 2, "n": len(idx)}
    n = max(len(per_lang), 1)
    sari = sum(v["sari"] for v in per_lang.values()) / n
    bleu = sum(v["bleu"] for v in per_lang.values()) / n
    return {"sari": sari, "bleu": bleu, "mean_sari_bleu": (sari + bleu) / 2, "per_language": per_lang}
