"""Decoding benchmark, side by side in one run: today's path vs the new one (sorted token-budget batches, LoRA
merged, shared prompt heads).

The training stage's own decoding (``multimsd.training.predict.generate``, as for the per-epoch validation
metrics and the final predictions) of the bundled sample's validation and test rows, selected the way the
stage selects them, one call per split. Model: SmolLM2-135M-Instruct (``offline:smollm2``) with a LoRA adapter
(r=4, the project's default target modules) whose B matrices are seeded random instead of zero, so that
merging changes the weights; ``eval.max_new_tokens`` 64 as in ``conf/train.yaml``; greedy, fp32, CPU.

* **old**: ``eval.max_batch_tokens=0 eval.merge_lora=false``: input order, ``eval.batch_size`` rows a batch,
  the adapter applied by peft in every adapted layer, every prompt computed whole;
* **new**: the defaults: rows sorted by prompt length into batches of at most ``eval.max_batch_tokens``
  (rows x (longest prompt + max_new_tokens)), the adapter merged into the weights while decoding, and the
  prompt head each language's rows share (chat template + instruction) computed once;
* **new/static**, **new/continuous** (``--backends generate static continuous``): the same with
  ``eval.backend=static`` (static KV cache; compiled only on CUDA) or ``continuous`` (transformers'
  continuous batching).

New tokens are the outputs' tokens (re-encoded, EOS not counted), the same number for both paths when their
outputs agree; the benchmark counts the outputs that differ and prints the first. Seconds are wall-clock; CPU
seconds (this process) are printed beside them because a shared machine inflates them much less.

    python benchmarks/decode_bench.py [--rows N] [--languages en de ...] [--max-new-tokens 64]
        [--max-batch-tokens auto|N] [--backends generate ...] [--lora-std 0.01] [--repeats 1]
"""

from __future__ import annotations

import argparse
import sys
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


def decode(
    cfg, model, tokenizer, splits: dict[str, list[dict]], accelerator
) -> tuple[list[str], float, float]:
    """All rows' outputs (split after split, as the training stage decodes them), the wall-clock seconds and
    the CPU seconds of this process (which another process on the machine inflates much less)."""
    from multimsd.training.predict import generate

    out: list[str] = []
    t0, c0 = time.perf_counter(), time.process_time()
    for split in SPLITS:
        if splits[split]:
            out += [g.text for g in generate(cfg, model, tokenizer, splits[split], accelerator)]
    return out, time.perf_counter() - t0, time.process_time() - c0


def budget(text: str) -> int | str:
    """``--max-batch-tokens``: ``auto`` or a number of tokens."""
    return text if text == "auto" else int(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=None, help="at most N rows in all (default: every row)")
    ap.add_argument("--languages", nargs="+", default=list(LANGUAGES), choices=LANGUAGES)
    ap.add_argument(
        "--max-new-tokens", type=int, default=64, help="eval.max_new_tokens (conf/train.yaml: 64)"
    )
    ap.add_argument(
        "--max-batch-tokens",
        type=budget,
        default=EvalSettings.max_batch_tokens,
        help="eval.max_batch_tokens of the new path: auto or a number (default: the setting's default)",
    )
    ap.add_argument(
        "--backends",
        nargs="+",
        default=[EvalSettings.backend],
        choices=["generate", "static", "continuous"],
        help="eval.backend of the new path, one new path each (default: the setting's default)",
    )
    ap.add_argument("--lora-std", type=float, default=0.01, help="standard deviation of the LoRA B entries")
    ap.add_argument(
        "--repeats", type=int, default=1, help="runs of each path, alternating; the fastest counts"
    )
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

    paths = {"old": (0, False, "generate")}
    for b in args.backends:
        paths["new" if b == "generate" else f"new/{b}"] = (args.max_batch_tokens, True, b)

    def run(name: str, some: dict[str, list[dict]]) -> tuple[list[str], float, float]:
        cfg.eval.max_batch_tokens, cfg.eval.merge_lora, cfg.eval.backend = paths[name]
        return decode(cfg, model, tokenizer, some, accelerator)

    # One untimed row first: the first generate() of a process pays one-time setup on either path.
    for name in paths:
        run(name, {"validation": rows[:1], "test": []})
    # Alternate the paths (forwards, backwards, ...) and keep each one's fastest run, so that the run order and
    # a busy moment on a shared machine favour none.
    best: dict[str, tuple[list[str], float, float]] = {}
    for r in range(args.repeats):
        for name in list(paths) if r % 2 == 0 else list(paths)[::-1]:
            res = run(name, splits)
            print(f"{name}: {res[1]:.1f} s ({res[2]:.1f} CPU s)", file=sys.stderr, flush=True)
            if name not in best or res[1] < best[name][1]:
                best[name] = res
    old, old_s, old_cpu = best["old"]

    def count(texts: list[str]) -> int:
        return sum(len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts)

    old_tokens = count(old)
    print(
        f"\n## Decoding benchmark (SmolLM2-135M-Instruct + LoRA r=4, {len(rows)} rows "
        f"({', '.join(f'{len(splits[s])} {s}' for s in SPLITS)}), {len(args.languages)} language(s), "
        f"greedy, max_new_tokens {args.max_new_tokens}, fp32, {torch.get_num_threads()} CPU threads, "
        f"best of {args.repeats})"
    )
    print(f"{'path':<62} {'rows':>5} {'new tokens':>10} {'seconds':>8} {'CPU s':>7} {'tokens/s':>9}")
    print(
        f"{f'old: input order, batch_size {cfg.eval.batch_size}, peft adapter':<62} {len(rows):>5} "
        f"{old_tokens:>10} {old_s:>8.1f} {old_cpu:>7.1f} {old_tokens / old_s:>9.1f}"
    )
    for name in paths:
        if name == "old":
            continue
        new, new_s, new_cpu = best[name]
        new_tokens = count(new)
        label = f"{name}: sorted, max_batch_tokens {args.max_batch_tokens}, merged" + (
            ", heads" if name == "new" else ""
        )
        print(
            f"{label:<62} {len(rows):>5} {new_tokens:>10} {new_s:>8.1f} {new_cpu:>7.1f} {new_tokens / new_s:>9.1f}"
        )
        differ = [k for k, (a, b) in enumerate(zip(old, new)) if a != b]
        print(
            f"  speed ratio {name} / old: {new_tokens / new_s / (old_tokens / old_s):.2f}x in tokens/s "
            f"({old_cpu / new_cpu:.2f}x in CPU seconds); outputs that differ: {len(differ)} of {len(rows)}"
        )
        if differ:
            k = differ[0]
            print(
                f"  first difference, row {k} ({rows[k]['lang']}):\n    old: {old[k]!r}\n    new: {new[k]!r}"
            )


if __name__ == "__main__":
    main()
