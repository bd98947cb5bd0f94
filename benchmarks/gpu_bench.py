"""GPU benchmark of the training stage at paper scale, in one command: training, checkpoints, decoding.

    python benchmarks/gpu_bench.py                  # on a CUDA GPU: the paper's two architectures
    python benchmarks/gpu_bench.py --quick          # on CPU: the same code on tiny models (CI runs this)

No Hub needed: on a GPU the models are ``random:llama31_8b`` (Llama-3.1-8B-Instruct's exact architecture,
random bf16 weights, SmolLM2's tokenizer; LoRA r=4 on all projections, batch 8 × accumulation 4) and
``random:mbart_large50`` (mBART-large-50's architecture and tokenizer; full fine-tuning, bf16 mixed precision,
batch 32). On CPU: ``tiny:llama`` + LoRA and ``tiny:mbart``. Data: the bundled sample's pairs, all languages.

What it measures, side by side in one run:

1. **Training**: our loop (``multimsd.training.loop.run``) and 🤗 ``Trainer`` on identical batches (ours with
   ``data.shuffle=false``, the Trainer with a sequential sampler over the same examples), after ``--warmup``
   steps; non-pad tokens/s of both, the ratio, MFU (GPU; 6·N FLOPs per token for full fine-tuning, 4·N for
   LoRA, whose frozen base needs no weight gradients) and the peak GPU memory. The first-step losses must agree.
2. **Checkpoints**: size and save time of one checkpoint (model + optimizer + scheduler + RNG) as the loop
   writes it (LoRA: the adapter alone) and of the whole state (what ``save_state`` writes without the hook).
3. **Decoding** (the LoRA model, greedy): our path (length-sorted token-budget batches, LoRA merged), today's
   former path (``eval.max_batch_tokens=0 eval.merge_lora=false``, fixed batches of ``eval.batch_size``), and
   plain ``model.generate`` at its best batch size; new tokens/s each (the same greedy tokens for all, counted
   once from the plain path), and how many outputs agree with the plain path.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

import torch

from multimsd.training.loop import run, to_train_config

GPU = {
    "llama": {
        "model": {
            "name": "llama31_8b_lora",
            "kind": "causal",
            "pretrained": "random:llama31_8b",
            "dtype": "bfloat16",
            "lora": {"enabled": True},
        },
        "batch": 8,
        "accum": 4,
        "mixed": "no",  # bf16 weights, the adapter in fp32 (peft's default)
        "lora": True,
    },
    "mbart": {
        "model": {"name": "mbart_large50", "kind": "seq2seq", "pretrained": "random:mbart_large50"},
        "batch": 32,
        "accum": 1,
        "mixed": "bf16",
        "lora": False,
    },
}
CPU = {
    "llama": {
        **GPU["llama"],
        "model": {**GPU["llama"]["model"], "pretrained": "tiny:llama", "dtype": "float32"},
    },
    "mbart": {**GPU["mbart"], "model": {**GPU["mbart"]["model"], "pretrained": "tiny:mbart"}, "mixed": "no"},
}
for setup in CPU.values():
    setup.update(batch=4, accum=1)


def _reset_accelerate() -> None:
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(True)
    GradientState._reset_state()


def _peak_reset() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()


def _peak_gib() -> float:
    if torch.cuda.is_available():
        return torch.cuda.max_memory_allocated() / 2**30
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # CPU: the process's peak RSS


def train_cfg(setup: dict, examples: int, out: Path) -> dict:
    return {
        "model": setup["model"],
        "data": {
            "mode": "multi",
            "max_train_examples": examples,
            "max_eval_examples": 1,  # the final predictions are not what is measured here
            "shuffle": False,
        },
        "optim": {"batch_size": setup["batch"], "grad_accum": setup["accum"], "epochs": 1, "lr": 5e-5},
        "eval": {"generate": False, "before_training": False, "max_new_tokens": 4},
        "output": {"dir": str(out)},
        "resume": False,
    }


# ------------------------------------------------------------------------------------------------- training
def ours(setup: dict, examples: int, warmup: int, out: Path) -> dict:
    _reset_accelerate()
    os.environ["ACCELERATE_MIXED_PRECISION"] = setup["mixed"]
    _peak_reset()
    res = run(train_cfg(setup, examples, out))
    steps = [h for h in res["history"] if "step" in h]
    timed = steps[warmup:]
    return {
        "first_loss": steps[0]["loss"],
        "step_tokens": [h["tokens"] for h in steps],
        "tokens_per_s": sum(h["tokens"] for h in timed) / sum(h["seconds"] for h in timed),
        "peak_gib": _peak_gib(),
    }


def hf_trainer(setup: dict, examples: int, warmup: int, step_tokens: list[int], work: Path) -> dict:
    import datasets
    from accelerate.utils import set_seed
    from transformers import Trainer, TrainerCallback, TrainingArguments

    from multimsd.training.data import Collator, load_pairs, select, tokenize_rows
    from multimsd.training.modeling import load_model_and_tokenizer

    _reset_accelerate()
    cfg = to_train_config(train_cfg(setup, examples, work))
    set_seed(cfg.seed)  # as our loop does before building the model: the same (random / LoRA) weights
    net, tok = load_model_and_tokenizer(cfg.model)
    rows = select(load_pairs(None), cfg.data, cfg.seed)["train"]
    encoded = tokenize_rows(tok, rows, cfg.model.kind, cfg.data.max_length)
    ds = datasets.Dataset.from_list([{"input_ids": e["input_ids"], "labels": e["labels"]} for e in encoded])
    collate = Collator(tok.pad_token_id)

    def collator(features):
        b = collate([{**f, "novel": [0] * len(f["labels"])} for f in features])
        b.pop("novel")
        return b

    times: list[float] = []

    class StepTimer(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            self.t0 = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            times.append(time.perf_counter() - self.t0)

    class InOrderTrainer(Trainer):
        def _get_train_sampler(self, *args, **kwargs):  # our loop's order with data.shuffle=false
            return torch.utils.data.SequentialSampler(self.train_dataset)

    args = TrainingArguments(
        output_dir=str(work / "trainer"),
        per_device_train_batch_size=setup["batch"],
        gradient_accumulation_steps=setup["accum"],
        num_train_epochs=1,
        learning_rate=5e-5,
        lr_scheduler_type="linear",
        max_grad_norm=1.0,
        optim="adamw_torch",
        save_strategy="no",
        report_to=[],
        logging_strategy="steps",
        logging_steps=1,
        use_cpu=not torch.cuda.is_available(),
        bf16=setup["mixed"] == "bf16",
        dataloader_num_workers=0,
        seed=cfg.seed,
        remove_unused_columns=False,
    )
    _peak_reset()
    trainer = InOrderTrainer(
        model=net, args=args, train_dataset=ds, data_collator=collator, callbacks=[StepTimer()]
    )
    trainer.train()
    first = next(h["loss"] for h in trainer.state.log_history if "loss" in h)
    n = min(len(times), len(step_tokens))
    return {
        "first_loss": first,
        "tokens_per_s": sum(step_tokens[warmup:n]) / sum(times[warmup:n]),
        "peak_gib": _peak_gib(),
    }


def flops_per_token(setup: dict) -> float:
    """6·N (forward + both backward matmuls) for full fine-tuning, 4·N for LoRA (no weight gradients of the base);
    N = the parameters that do matrix products (the input embedding table is a lookup)."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM

    from multimsd.training.models.random_init import random_model_dir

    path = random_model_dir(setup["model"]["pretrained"])
    auto = AutoModelForCausalLM if setup["model"]["kind"] == "causal" else AutoModelForSeq2SeqLM
    with torch.device("meta"):  # shapes only: no memory, no initialisation
        model = auto.from_config(AutoConfig.from_pretrained(str(path)))
    emb = model.get_input_embeddings().weight
    tied = model.get_output_embeddings().weight is emb
    n = sum(p.numel() for p in model.parameters()) - (0 if tied else emb.numel())
    return (4 if setup["lora"] else 6) * n


# ------------------------------------------------------------------------------------------------ checkpoint
def checkpoint_sizes(setup: dict, work: Path) -> dict:
    from accelerate import Accelerator

    from multimsd.training.checkpoint import TrainState, register_trainable_only_hooks, save_checkpoint
    from multimsd.training.modeling import load_model_and_tokenizer

    def size(p: Path) -> int:
        return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())

    out = {}
    for name, hooked in (("trainable", True), ("whole", False)):
        _reset_accelerate()
        acc = Accelerator()
        cfg = to_train_config(train_cfg(setup, 1, work))
        model, _ = load_model_and_tokenizer(cfg.model)
        params = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=1e-4)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
        model, opt, sched = acc.prepare(model, opt, sched)
        sum((p.float() * 0).sum() for p in params).backward()  # one step, so the optimizer has its moments
        opt.step()
        state = TrainState()
        acc.register_for_checkpointing(state)
        if hooked:
            register_trainable_only_hooks(acc)
        t0 = time.perf_counter()
        save_checkpoint(acc, work / name, state)
        seconds = time.perf_counter() - t0
        ckpt = next((work / name / "checkpoints").glob("step_*"))
        base = sum(p.numel() * p.element_size() for p in acc.unwrap_model(model).parameters())
        out[name] = {"bytes": size(ckpt), "seconds": seconds, "model_bytes": base}
        shutil.rmtree(work / name)  # 16 GB for the whole 8B state: do not keep it
        del model, opt, acc
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    return out


# -------------------------------------------------------------------------------------------------- decoding
def decoding(setup: dict, rows_n: int, old_rows_n: int, max_new: int, batch_sizes: list[int]) -> dict:
    from accelerate import Accelerator
    from accelerate.utils import set_seed

    from multimsd.training.data import load_pairs, select
    from multimsd.training.modeling import load_model_and_tokenizer
    from multimsd.training.predict import generate
    from multimsd.training.prompts import chat_messages

    _reset_accelerate()
    acc = Accelerator()
    cfg = to_train_config(train_cfg(setup, 1, Path(tempfile.mkdtemp())))
    cfg.eval.max_new_tokens = max_new
    set_seed(cfg.seed)
    model, tok = load_model_and_tokenizer(cfg.model)
    # A trained adapter is not the identity: make B non-zero, so merging it changes the weights.
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.02)
    model = model.to(acc.device).eval()
    split = select(load_pairs(None), cfg.data, cfg.seed)
    rows = (split["validation"] + split["test"])[:rows_n]

    def timed(fn):
        _peak_reset()
        t0 = time.perf_counter()
        result = fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        return result, time.perf_counter() - t0, _peak_gib()

    new, new_s, new_peak = timed(lambda: generate(cfg, model, tok, rows, acc))
    old_cfg = to_train_config(train_cfg(setup, 1, Path(cfg.output.dir)))
    old_cfg.eval.max_new_tokens = max_new
    old_cfg.eval.max_batch_tokens, old_cfg.eval.merge_lora = 0, False
    old_rows = rows[:old_rows_n]
    old, old_s, _ = timed(lambda: generate(old_cfg, model, tok, old_rows, acc))

    # plain HF generate on the same prompts (adapter merged into a copy-free model: the fastest plain setup)
    prompts = [
        tok.apply_chat_template(
            chat_messages(r["complex"], r["lang"]), tokenize=False, add_generation_prompt=True
        )
        for r in rows
    ]
    tok.padding_side = "left"
    counts: list[int] = []
    best = None
    merged = model.merge_and_unload() if hasattr(model, "merge_and_unload") else model
    for b in batch_sizes:
        texts, lengths = [], []

        def plain(b=b, texts=texts, lengths=lengths):
            for k in range(0, len(prompts), b):
                enc = tok(prompts[k : k + b], return_tensors="pt", padding=True, add_special_tokens=False).to(
                    acc.device
                )
                with torch.inference_mode():
                    gen = merged.generate(
                        **enc, max_new_tokens=max_new, do_sample=False, pad_token_id=tok.pad_token_id
                    )[:, enc["input_ids"].shape[1] :]
                for g in gen.tolist():  # new tokens up to and including the first EOS
                    n = next((i + 1 for i, t in enumerate(g) if t == tok.eos_token_id), len(g))
                    lengths.append(n)
                texts.extend(" ".join(t.split()) for t in tok.batch_decode(gen, skip_special_tokens=True))

        _, s, peak = timed(plain)
        counts = counts or lengths
        if best is None or s < best["seconds"]:
            best = {"batch": b, "seconds": s, "texts": texts, "peak_gib": peak}
    total = sum(counts)
    old_total = sum(counts[:old_rows_n])
    return {
        "rows": len(rows),
        "new_tokens": total,
        "ours": total / new_s,
        "ours_peak_gib": new_peak,
        "old": old_total / old_s,
        "old_rows": len(old_rows),
        "plain": total / best["seconds"],
        "plain_batch": best["batch"],
        "plain_peak_gib": best["peak_gib"],
        "agree": sum(a == b for a, b in zip(new, best["texts"])),
        "old_agree": sum(a == b for a, b in zip(old, new)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="CPU-sized: tiny models, few examples and rows")
    ap.add_argument(
        "--examples", type=int, default=None, help="training examples (default: GPU 684, quick 16)"
    )
    ap.add_argument("--warmup", type=int, default=None, help="training steps left out of the timing")
    ap.add_argument(
        "--decode-rows", type=int, default=None, help="validation+test rows decoded (GPU: all 333)"
    )
    ap.add_argument("--old-decode-rows", type=int, default=None, help="rows for the former (slow) path")
    ap.add_argument("--max-new-tokens", type=int, default=None, help="GPU: 256 (paper); quick: 16")
    ap.add_argument("--peak-tflops", type=float, default=989.0, help="the GPU's dense bf16 peak (H100: 989)")
    ap.add_argument("--only", choices=["train", "checkpoint", "decode"], action="append")
    ap.add_argument("--models", choices=["llama", "mbart"], action="append", help="default: both")
    args = ap.parse_args()
    gpu = torch.cuda.is_available() and not args.quick
    setups = GPU if gpu else CPU
    examples = args.examples or (684 if gpu else 16)
    warmup = args.warmup if args.warmup is not None else (3 if gpu else 1)
    rows_n = args.decode_rows or (333 if gpu else 12)
    old_rows_n = args.old_decode_rows or (64 if gpu else rows_n)
    max_new = args.max_new_tokens or (256 if gpu else 16)
    only = set(args.only or ["train", "checkpoint", "decode"])
    device = torch.cuda.get_device_name() if gpu else "CPU (tiny models; the GPU table needs a CUDA device)"
    lines = [
        f"## gpu_bench on {device}",
        "",
        "| measurement | multimsd | reference | ratio |",
        "|---|---:|---:|---:|",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name, setup in setups.items():
            if args.models and name not in args.models:
                continue
            label = f"{setup['model']['pretrained']}{' + LoRA' if setup['lora'] else ''}"
            if "train" in only:
                mine = ours(setup, examples, warmup, work / f"ours_{name}")
                ref = hf_trainer(setup, examples, warmup, mine["step_tokens"], work / f"hf_{name}")
                if abs(mine["first_loss"] - ref["first_loss"]) > 1e-2 * max(1.0, abs(ref["first_loss"])):
                    raise SystemExit(
                        f"{label}: first-step losses differ ({mine['first_loss']:.4f} vs {ref['first_loss']:.4f}): "
                        "the two loops did not see the same batches"
                    )
                mfu = ""
                if gpu:
                    f = flops_per_token(setup)
                    mfu = f" (MFU {100 * f * mine['tokens_per_s'] / (args.peak_tflops * 1e12):.1f} %)"
                lines.append(
                    f"| {label} training tokens/s, batch {setup['batch']} × {setup['accum']}{mfu} | "
                    f"{mine['tokens_per_s']:,.0f} | 🤗 Trainer {ref['tokens_per_s']:,.0f} | "
                    f"{mine['tokens_per_s'] / ref['tokens_per_s']:.2f}× |"
                )
                what = "peak GPU memory of training" if gpu else "peak RSS of the process so far"
                lines.append(f"| {label} {what} (GiB) | {mine['peak_gib']:.1f} | {ref['peak_gib']:.1f} | |")
            if "checkpoint" in only:
                ck = checkpoint_sizes(setup, work)
                t, w = ck["trainable"], ck["whole"]
                lines.append(
                    f"| {label} one checkpoint (MB; save s) | {t['bytes'] / 1e6:,.1f}; {t['seconds']:.1f} s | "
                    f"whole state {w['bytes'] / 1e6:,.1f}; {w['seconds']:.1f} s | "
                    f"{100 * t['bytes'] / t['model_bytes']:.2f} % of the model's weights |"
                )
            if "decode" in only and setup["lora"]:
                d = decoding(setup, rows_n, old_rows_n, max_new, [8, 32, 64, 128, 256] if gpu else [8, 32])
                lines.append(
                    f"| {label} decoding new tokens/s ({d['rows']} rows, {d['new_tokens']:,} tokens, greedy) | "
                    f"{d['ours']:,.0f} | former path {d['old']:,.0f} ({d['old_rows']} rows) | "
                    f"{d['ours'] / d['old']:.2f}× |"
                )
                lines.append(
                    f"| {label} plain `generate` at its best batch ({d['plain_batch']}) | {d['ours']:,.0f} | "
                    f"{d['plain']:,.0f} | {d['ours'] / d['plain']:.2f}× |"
                )
                lines.append(
                    f"| {label} outputs equal to plain `generate` / former path equal to ours | "
                    f"{d['agree']}/{d['rows']} | {d['old_agree']}/{d['old_rows']} | |"
                )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
