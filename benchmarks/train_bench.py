"""Training-loop benchmark, measured side by side in one run: our loop vs 🤗 Trainer, weighted vs plain loss.

Identical model, data (the same examples, one epoch), batch size, optimizer, precision (fp32, CPU).
Throughput = non-pad input tokens + label tokens per second of training (model load, tokenisation and
evaluation excluded on both sides).

    python benchmarks/train_bench.py [--model smollm2_lora|tiny_llama|tiny_mbart] [--examples 32] [--batch-size 4]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
from pathlib import Path

import torch

from multimsd.training.loop import run, to_train_config

MODELS = {
    "smollm2_lora": {"kind": "causal", "pretrained": "offline:smollm2", "lora": {"enabled": True}},
    "tiny_llama": {"kind": "causal", "pretrained": "tiny:llama", "lora": {"enabled": True}},
    "tiny_mbart": {"kind": "seq2seq", "pretrained": "tiny:mbart", "lora": {"enabled": False}},
}


def ours(model: str, examples: int, batch: int, theta: float, work: Path) -> dict:
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    cfg = {
        "model": {"name": model, **MODELS[model]},
        "data": {"languages": ["en"], "mode": "mono", "max_train_examples": examples},
        "optim": {"batch_size": batch, "epochs": 1, "lr": 1e-4},
        "loss": {"theta": theta},
        "eval": {"generate": False, "before_training": False},
        "output_dir": str(work / f"ours_theta{theta}"),
        "resume": False,
    }
    return run(cfg)


def hf_trainer(model: str, examples: int, batch: int, work: Path) -> dict:
    import datasets
    from transformers import Trainer, TrainingArguments

    from multimsd.training.data import Collator, load_pairs, select, tokenize_rows
    from multimsd.training.modeling import load_model_and_tokenizer

    cfg = to_train_config(
        {
            "model": {"name": model, **MODELS[model]},
            "data": {"languages": ["en"], "mode": "mono", "max_train_examples": examples},
        }
    )
    net, tok = load_model_and_tokenizer(cfg.model)
    rows = select(load_pairs(None), cfg.data, cfg.seed)["train"]
    encoded = tokenize_rows(tok, rows, cfg.model.kind, cfg.data.max_length)
    tokens = sum(len(e["input_ids"]) + sum(1 for t in e["labels"] if t != -100) for e in encoded)
    ds = datasets.Dataset.from_list(
        [{"input_ids": e["input_ids"], "labels": e["labels"], "novel": e["novel"]} for e in encoded]
    )
    collate = Collator(tok.pad_token_id)

    def collator(features):
        b = collate(features)
        b.pop("novel")
        return b

    args = TrainingArguments(
        output_dir=str(work / "trainer"),
        per_device_train_batch_size=batch,
        num_train_epochs=1,
        learning_rate=1e-4,
        lr_scheduler_type="linear",
        weight_decay=0.0,
        max_grad_norm=1.0,
        optim="adamw_torch",
        save_strategy="no",
        report_to=[],
        logging_strategy="no",
        use_cpu=True,
        dataloader_num_workers=0,
        seed=42,
        remove_unused_columns=False,
    )
    out = Trainer(model=net, args=args, train_dataset=ds, data_collator=collator).train()
    return {"train_tokens": tokens, "train_seconds": out.metrics["train_runtime"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2_lora", choices=sorted(MODELS))
    ap.add_argument("--examples", type=int, default=32)
    ap.add_argument("--batch-size", type=int, default=4)
    args = ap.parse_args()
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        plain = ours(args.model, args.examples, args.batch_size, 1.0, work)
        weighted = ours(args.model, args.examples, args.batch_size, 4.0, work)
        trainer = hf_trainer(args.model, args.examples, args.batch_size, work)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    tps = {
        k: r["train_tokens"] / r["train_seconds"]
        for k, r in (("plain", plain), ("weighted", weighted), ("trainer", trainer))
    }
    print(
        f"\n## Training benchmark ({args.model}, {args.examples} examples, batch {args.batch_size}, fp32 CPU)"
    )
    print(f"our loop, θ = 1 (plain CE)   : {tps['plain']:9.1f} tokens/s ({plain['train_seconds']:.1f} s)")
    print(
        f"our loop, θ = 4 (weighted)   : {tps['weighted']:9.1f} tokens/s ({weighted['train_seconds']:.1f} s)   overhead {100 * (tps['plain'] / tps['weighted'] - 1):+.1f} % (goal <= 3 %)"
    )
    print(
        f"🤗 Trainer (plain CE)         : {tps['trainer']:9.1f} tokens/s ({trainer['train_seconds']:.1f} s)"
    )
    print(f"ours / Trainer               : {tps['plain'] / tps['trainer']:9.2f}x (goal >= 1.0)")
    print(f"peak RSS                     : {rss:9.0f} MiB")


if __name__ == "__main__":
    main()
