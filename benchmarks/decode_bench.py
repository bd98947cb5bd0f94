"""Decoding benchmark, side by side in one run: today's path vs length-sorted token-budget batches + merged LoRA.

The training stage's own decoding (``multimsd.training.predict.generate``, as for the per-epoch validation
metrics and the final predictions) of the bundled sample's validation and test rows, selected the way the
stage selects them, one call per split. Model: SmolLM2-135M-Instruct (``offline:smollm2``) with a LoRA adapter
(r=4, the project's default target modules) whose B matrices are seeded random instead of zero, so that
merging changes the weights; ``eval.max_new_tokens`` 64 as in ``conf/train.yaml``; greedy, fp32, CPU.

* **old**: ``eval.max_batch_tokens=0 eval.merge_lora=false``: input order, ``eval.batch_size`` rows a batch,
  the adapter applied by peft in every adapted layer;
* **new**: the defaults: rows sorted by prompt length into batches of at most ``eval.max_batch_tokens``
  (rows x (longest prompt + max_new_tokens)), the adapter merged into the weights while decoding.

New tokens are the outputs' tokens (re-encoded, EOS not counted), the same number for both paths when their
outputs agree; the benchmark counts the outputs that differ and prints the first.

    python benchmarks/decode_bench.py [--rows N] [--languages en de ...] [--max-new-tokens 64]
        [--max-batch-tokens N] [--lora-std 0.01]
"""

from __future__ import annotations

import argparse
import time

import torch

from multimsd import LANGUAGES
from multimsd.training.config import EvalSettings

SPLITS = ("validation", "test")


def load(languages: list[str], max_new_tokens: int, lora_std: float):
    """The training config, the SmolLM2 + LoRA model (B drawn from N(0, lora_std²), seeded) and its tokenizer."""
    from multimsd.training.loop import to_train_config
    from multimsd.training.modeling import load_model_and_tokenizer

    cfg = to_train_config(
        {
            "model": {"name": "smollm2_lora", "kind": "causal", "pretrained": "offline:smollm2"},
            "data": {"languages": languages, "mode": "multi"},
            "eval": {"max_new_tokens": max_new_tokens, "num_beams": 1},
        }
    )
    cfg.model.lora.enabled = True  # r=4, alpha 8, the default target modules (LoraSettings)
    torch.manual_seed(cfg.seed)
    model, tokenizer = load_model_and_tokenizer(cfg.model)
    gen = torch.Generator().manual_seed(cfg.seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * lora_std)
    return cfg, model, tokenizer


def decode(cfg, model, tokenizer, splits: dict[str, list[dict]], accelerator) -> tuple[list[str], float]:
    """All rows' outputs (split after split, as the training stage decodes them) and the seconds it took."""
    from multimsd.training.predict import generate

    out: list[str] = []
    t0 = time.perf_counter()
    for split in SPLITS:
        if splits[split]:
            out += generate(cfg, model, tokenizer, splits[split], accelerator)
    return out, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=None, help="at most N rows in all (default: every row)")
    ap.add_argument("--languages", nargs="+", default=list(LANGUAGES), choices=LANGUAGES)
    ap.add_argument(
        "--max-new-tokens", type=int, default=64, help="eval.max_new_tokens (conf/train.yaml: 64)"
    )
    ap.add_argument(
        "--max-batch-tokens",
        type=int,
        default=EvalSettings.max_batch_tokens,
        help="eval.max_batch_tokens of the new path (default: the setting's default)",
    )
    ap.add_argument("--lora-std", type=float, default=0.01, help="standard deviation of the LoRA B entries")
    args = ap.parse_args()

    from accelerate import Accelerator

    from multimsd.training.data import load_pairs, select

    cfg, model, tokenizer = load(args.languages, args.max_new_tokens, args.lora_std)
    selected = select(load_pairs(None), cfg.data, cfg.seed)  # the training stage's own rows
    splits, left = {}, args.rows
    for split in SPLITS:
        splits[split] = selected[split][:left] if left is not None else selected[split]
        left = None if left is None else left - len(splits[split])
    rows = [r for split in SPLITS for r in splits[split]]
    accelerator = Accelerator(cpu=True)

    def configured(max_batch_tokens: int, merge_lora: bool):
        cfg.eval.max_batch_tokens, cfg.eval.merge_lora = max_batch_tokens, merge_lora
        return cfg

    # One untimed row first: the first generate() of a process pays one-time setup on either path.
    generate_warm = {"validation": rows[:1], "test": []}
    decode(configured(0, False), model, tokenizer, generate_warm, accelerator)
    old, old_s = decode(configured(0, False), model, tokenizer, splits, accelerator)
    new, new_s = decode(configured(args.max_batch_tokens, True), model, tokenizer, splits, accelerator)

    tokens = sum(len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in old)
    new_tokens = sum(len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in new)
    differ = [k for k, (a, b) in enumerate(zip(old, new)) if a != b]
    print(
        f"\n## Decoding benchmark (SmolLM2-135M-Instruct + LoRA r=4, {len(rows)} rows "
        f"({', '.join(f'{len(splits[s])} {s}' for s in SPLITS)}), {len(args.languages)} language(s), "
        f"greedy, max_new_tokens {args.max_new_tokens}, fp32, {torch.get_num_threads()} CPU threads)"
    )
    print(f"{'path':<58} {'rows':>5} {'new tokens':>10} {'seconds':>8} {'tokens/s':>9}")
    for name, n, s in (
        (f"old: input order, batch_size {cfg.eval.batch_size}, peft adapter", tokens, old_s),
        (f"new: sorted, max_batch_tokens {args.max_batch_tokens}, LoRA merged", new_tokens, new_s),
    ):
        print(f"{name:<58} {len(rows):>5} {n:>10} {s:>8.1f} {n / s:>9.1f}")
    print(f"speed ratio new / old (same outputs: time ratio) : {old_s / new_s:.2f}x (goal >= 2)")
    print(f"outputs that differ                              : {len(differ)} of {len(rows)}")
    if differ:
        k = differ[0]
        print(f"first difference, row {k} ({rows[k]['lang']}):\n  old: {old[k]!r}\n  new: {new[k]!r}")


if __name__ == "__main__":
    main()
