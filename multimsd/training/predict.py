"""Decoding (batched, split over processes) and the validation metrics of the training stage.

How a model generates is its kind's business (``generate`` in :mod:`multimsd.training.kinds`, batched by
:mod:`multimsd.training.decode`); here the rows are split over the processes and gathered back in order, and a
LoRA adapter is merged into the weights while they are decoded (``eval.merge_lora``): restored bit for bit
afterwards while the model trains on, left merged for the final predictions (``final=True``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import torch

from multimsd.console import progress_bar
from multimsd.training.attention import decoding_attention
from multimsd.training.decode import Generated, as_generated, check_backend, decoding_progress, merged_lora
from multimsd.training.kinds import get_kind
from multimsd.training.prompts import sample_shots


def shots_by_lang(cfg, shot_pool) -> dict[str, list[tuple[str, str]]]:
    """The k-shot examples of each language: ``cfg.icl.shots`` seeded random pairs of the pool's rows of that
    language (empty for a 0-shot system or no pool)."""
    if not shot_pool or cfg.icl.shots <= 0:
        return {}
    by_lang = defaultdict(list)
    for r in shot_pool:
        by_lang[r["lang"]].append((r["complex"], r["simple"]))
    # The same k seeded examples for every sentence of a language (paper: 5 random validation pairs).
    return {lang: sample_shots(pool, cfg.icl.shots, cfg.icl.seed) for lang, pool in by_lang.items()}


def generate(
    cfg,
    model,
    tokenizer,
    rows: list[dict],
    accelerator,
    shot_pool=None,
    final: bool = False,
    shots=None,
    desc: str | None = None,
) -> list[Generated]:
    """Outputs for ``rows`` in order (each its text and whether it was cut at the length cap); each process
    decodes its share and the main process gathers them.
    ``final``: the model trains no more (the final predictions), so a LoRA adapter is merged without a copy of
    the base weights and stays merged. A k-shot system's examples: ``shots`` (per language, as
    :func:`shots_by_lang` gives them), else drawn from ``shot_pool``. ``desc``: the decoding shows its
    progress under that name (a bar on a terminal, else a line every 20 s and one at the end: sentences, rate,
    time left), on the main process, counting its share of the rows."""
    from accelerate.utils import gather_object

    kind = get_kind(cfg.model.kind)
    # A kind decodes with the backends it names (eval.backend); a plugin kind that names none, with generate.
    check_backend(cfg.eval.backend, getattr(kind, "decode_backends", ("generate",)), cfg.model.kind)
    examples = shots if shots is not None else shots_by_lang(cfg, shot_pool)
    model = accelerator.unwrap_model(model)
    was_training = model.training
    model.eval()
    indexed = list(enumerate(rows))
    with accelerator.split_between_processes(indexed) as part:
        local_rows = [r for _, r in part]
        with (
            torch.no_grad(),
            merged_lora(model, cfg.eval.merge_lora, restore=not final),
            decoding_attention(model),
        ):
            bar = progress_bar(
                total=len(local_rows),
                desc=desc or "decoding",
                unit="sentence",
                disable=desc is None or not accelerator.is_local_main_process,
            )
            with decoding_progress(bar):
                preds = kind.generate(cfg, model, tokenizer, local_rows, examples)
            bar.close()
        local = [(k, as_generated(p)) for (k, _), p in zip(part, preds)]
    gathered = dict(gather_object(local)) if accelerator.num_processes > 1 else dict(local)
    if was_training:
        model.train()
    return [gathered[k] for k in range(len(rows))]


GENERATION_INFO = "generation.json"
"""Next to a split's ``<lang>.txt`` predictions: which outputs were cut at ``eval.max_new_tokens``."""


def write_generation_info(
    directory: Path, rows: list[dict], preds: list[Generated], max_new_tokens: int
) -> None:
    """``generation.json`` beside the predictions: ``{"max_new_tokens": N, "cut": {lang: [bool | null, ...]}}``,
    one flag per line of ``<lang>.txt`` (True: generation stopped at the cap, not at an end token; null:
    unknown, e.g. a plugin kind that returns plain strings). The evaluation reads it (share of cut outputs)."""
    from multimsd.fsutil import write_text_atomic

    cut: dict[str, list[bool | None]] = {}
    for r, p in zip(rows, preds):
        cut.setdefault(r["lang"], []).append(p.cut)
    info = {"max_new_tokens": max_new_tokens, "cut": dict(sorted(cut.items()))}
    write_text_atomic(Path(directory) / GENERATION_INFO, json.dumps(info) + "\n")


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
