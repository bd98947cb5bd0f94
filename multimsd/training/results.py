"""What the training stage measures and writes: the validation loss and metrics of an epoch, the best model saved
and loaded back, the predictions of the final model and ``all_results.json`` (:mod:`multimsd.training.loop`
calls these at its seams)."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from multimsd.errors import MultimsdError
from multimsd.fsutil import write_text_atomic
from multimsd.training.checkpoint import manifest_problem, write_manifest
from multimsd.training.config import CONFIG_FILE, SHOTS_FILE, TrainConfig
from multimsd.training.data import write_jsonl
from multimsd.training.forward import MicroBatchLoss
from multimsd.training.kinds import ModelKind
from multimsd.training.predict import generate, score_predictions, shots_by_lang, write_generation_info


@torch.no_grad()
def validation_loss(model, dataloader, accelerator, losses: MicroBatchLoss) -> float:
    """The validation loss over the whole validation split (all processes): the token-averaged plain
    cross-entropy, or the objective's own (mode=dpo: the mean DPO loss of the validation pairs)."""
    model.eval()
    total, count = torch.zeros((), device=accelerator.device), torch.zeros((), device=accelerator.device)
    for batch in dataloader:
        per_ex_sum, per_ex_n = losses.validation_terms(model, batch)
        # gather_for_metrics drops the samples Accelerate duplicated to even out the last batch
        per_ex_sum, per_ex_n = accelerator.gather_for_metrics((per_ex_sum, per_ex_n))
        total += per_ex_sum.sum()
        count += per_ex_n.sum()
    model.train()
    return float(total / count.clamp(min=1))


def evaluate_epoch(
    cfg: TrainConfig, model, tokenizer, val_dl, val_rows, accelerator, losses: MicroBatchLoss
) -> dict:
    metrics: dict = {}
    if val_dl is not None:
        metrics["val_loss"] = validation_loss(model, val_dl, accelerator, losses)
    rows = cap_per_language(val_rows, cfg.eval.generate_max_rows)
    if cfg.eval.generate and rows:
        preds = generate(
            cfg, accelerator.unwrap_model(model), tokenizer, rows, accelerator, desc="generating validation"
        )
        if accelerator.is_main_process:
            metrics.update(score_predictions(rows, [p.text for p in preds]))
    return metrics


def save_model(accelerator, kind: ModelKind, model, tokenizer, path: Path) -> None:
    """The model (or the LoRA adapter alone) and tokenizer, replacing an earlier copy atomically."""
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        from multimsd.fsutil import atomic_directory

        with atomic_directory(path) as tmp:
            kind.save_pretrained(accelerator.unwrap_model(model), tokenizer, tmp, accelerator.save)
            write_manifest(tmp)  # last, as for checkpoints: load_best checks it
    accelerator.wait_for_everyone()


def load_best(cfg: TrainConfig, kind: ModelKind, path: Path, accelerator, model):
    """The best epoch's weights, loaded back into the trained model object."""
    unwrapped = accelerator.unwrap_model(model)
    if not path.exists():
        return unwrapped
    # Predictions from a damaged best model would be silently wrong numbers: refuse, naming the file.
    if problem := manifest_problem(path):
        raise MultimsdError(f"the best model cannot be used: {problem}; train again into a new output.dir")
    return kind.load_best(cfg, path, unwrapped)


def write_predictions(
    cfg, model, tokenizer, splits: dict, accelerator, out: Path, results: dict, shot_pool=None
) -> None:
    """Per split: ``predictions/<split>/<lang>.txt`` (one line a row, evaluate.py's format), the references
    (``references.jsonl``), and SARI / BLEU per language into ``all_results.json``."""
    shots = shots_by_lang(cfg, shot_pool)  # a k-shot system's examples: the same for every split and row
    for split, split_rows in splits.items():
        if not split_rows:
            continue
        # the last decoding of the run: nothing trains after it, so the adapter is merged without a copy
        preds = generate(
            cfg,
            model,
            tokenizer,
            split_rows,
            accelerator,
            final=True,
            shots=shots,
            desc=f"generating {split}",
        )
        if not accelerator.is_main_process:
            continue
        d = out / "predictions" / split
        d.mkdir(parents=True, exist_ok=True)
        for lang in sorted({r["lang"] for r in split_rows}):
            lines = [p.text.replace("\n", " ") for r, p in zip(split_rows, preds) if r["lang"] == lang]
            write_text_atomic(d / f"{lang}.txt", "\n".join(lines) + "\n")
        write_generation_info(d, split_rows, preds, cfg.eval.max_new_tokens)  # which outputs were cut
        write_jsonl(
            d / "references.jsonl", [{k: r[k] for k in ("complex", "simple", "lang")} for r in split_rows]
        )
        results[split] = score_predictions(split_rows, [p.text for p in preds])
        accelerator.print(f"{split}: {fmt_metrics(results[split])}")
    if accelerator.is_main_process:
        out.mkdir(parents=True, exist_ok=True)
        save_config(cfg, out)
        if shots:  # what prompts the system again (multimsd simplify, the studio): its examples as drawn
            write_text_atomic(out / SHOTS_FILE, json.dumps(shots, indent=1, ensure_ascii=False) + "\n")
        write_text_atomic(out / "all_results.json", json.dumps(results, indent=2, ensure_ascii=False) + "\n")


def save_config(cfg, out: Path) -> None:
    """The whole resolved config the outputs of ``out`` were made with (``config.yaml``), decoding settings
    included: what loads the trained system again (``multimsd simplify``, ``multimsd export``) without the
    run that planned it (:func:`multimsd.training.system.saved_config` reads it). ``train_config.json`` holds
    only what a resume must agree on."""
    from omegaconf import OmegaConf

    write_text_atomic(out / CONFIG_FILE, OmegaConf.to_yaml(OmegaConf.structured(cfg)))


def cap_per_language(rows: list[dict], n: int | None) -> list[dict]:
    """The first ``n`` rows of each language (all rows when ``n`` is falsy), order kept."""
    if not n:
        return rows
    seen: dict[str, int] = {}
    out = []
    for r in rows:
        if seen.get(r["lang"], 0) < n:
            seen[r["lang"]] = seen.get(r["lang"], 0) + 1
            out.append(r)
    return out


def fmt_metrics(metrics: dict) -> str:
    return ", ".join(
        f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}"
        for k, v in metrics.items()
        if not isinstance(v, dict)
    )
