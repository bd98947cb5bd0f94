"""Training-loop benchmark, measured side by side in one run: our loop vs 🤗 Trainer, weighted vs plain loss.

Identical model, data, batches, optimizer and precision (fp32, CPU): both loops see the same examples in the
same (seeded, pre-shuffled) order — ours with ``data.shuffle=false``, the Trainer with a sequential sampler —
so every step pads the same tensors. The benchmark checks that before it prints any ratio: the same tokens in
every step and the same first-step loss (LoRA starts as the identity, so step 1 is the base model on the same
batch). Throughput = non-pad input tokens + label tokens per second, measured the way ``gpu_bench.py`` measures
on a GPU (its worker processes do the runs): each run a fresh process, the three runs (ours θ = 1, ours θ = 4,
Trainer) rotated, the best of ``--repeats`` kept, and the same clock on every side, from the step's batches in
hand to the optimizer step done, the first ``--warmup`` steps left out. (Until issue #30 this benchmark ran all
three in one process and timed the Trainer by its ``train_runtime``, which includes fetching the batches, setting
up and logging, and ours without them.)

    python benchmarks/train_bench.py [--model smollm2_lora|tiny_llama|tiny_mbart] [--examples 32] [--batch-size 4]
                                     [--chunked true|false] [--packing] [--repeats 3] [--warmup 1]
    python benchmarks/train_bench.py --paths [--model ...]
    python benchmarks/train_bench.py --padding [--batch-size 8]
    python benchmarks/train_bench.py --logits-memory [--batch-size 8 --seq-len 256]
    python benchmarks/train_bench.py --llama8b-gpu [--seq-len 256 --batch-size 8 --steps 20 --peak-tflops 989]
                                     [--chunked false]

``--chunked`` / ``--packing`` set ``loss.chunked`` / ``data.packing`` for our loop's runs. ``--paths`` compares our
loop with itself instead: padded or packed batches x full logits or the chunked loss (θ = 4, LoRA dropout 0 so
that all four must give the same step losses, which it checks), and prints the padding share of the batches.
``--padding``: the padding share of the sample's batches per model, in order and grouped by length.
``--logits-memory``: the activations kept for backward and the time of one step, logits vs chunked loss, with
Llama-3.1's 128k vocabulary on a 2-layer toy Llama (CPU).

``--llama8b-gpu`` (needs CUDA): LoRA throughput and MFU of a model with Llama-3.1-8B's architecture built from
its config with random weights (no download), bf16, the paper's LoRA (r=4, α=8, all linear projections).
MFU = achieved FLOP/s / peak, with 4·N FLOPs per token for LoRA training (forward 2N + activation gradients
2N; the frozen base needs no weight gradients) plus attention (4·layers·seq·d_model per token, fwd + bwd).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import gpu_bench  # benchmarks/ beside this file: its worker processes and its clock (issue #30)
import torch

from multimsd.training.loop import run, to_train_config
from multimsd.training.models.random_init import LLAMA31_8B  # the one copy of the shapes

MODELS = {
    "smollm2_lora": {"kind": "causal", "pretrained": "offline:smollm2", "lora": {"enabled": True}},
    "tiny_llama": {"kind": "causal", "pretrained": "tiny:llama", "lora": {"enabled": True}},
    "tiny_mbart": {"kind": "seq2seq", "pretrained": "tiny:mbart", "lora": {"enabled": False}},
}


def ours(model_name: str, examples: int, batch: int, theta: float, work: Path, **sections) -> dict:
    """One epoch of our loop; ``sections`` update the config's sections (``loss={"chunked": False}``)."""
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    cfg = {
        "model": {"name": model_name, **MODELS[model_name]},
        "data": {"languages": ["en"], "mode": "mono", "max_train_examples": examples, "shuffle": False},
        "optim": {"batch_size": batch, "epochs": 1, "lr": 1e-4},
        "loss": {"theta": theta},
        "eval": {"generate": False, "before_training": False, "max_new_tokens": 1},
        "output": {"dir": str(work / f"ours_theta{theta}")},
        "resume": False,
    }
    for section, values in sections.items():
        cfg[section] = {**cfg[section], **values}
    res = run(cfg)
    res["first_loss"] = next(h["loss"] for h in res["history"] if "loss" in h and "step" in h)
    return res


def trainer_comparison(
    model: str, examples: int, batch: int, repeats: int, warmup: int, extra: list[str]
) -> dict:
    """Our loop at θ = 1 and θ = 4 and 🤗 Trainer, each run a fresh process through gpu_bench's workers: the same
    clock on both sides (from the step's batches in hand to the optimizer step done; ``warmup`` steps left out),
    the same batches (checked: the same tokens in every step, the same first-step loss), the three rotated
    (ABC, BCA, CAB, ...) so that no loop always runs first. ``extra``: our loop's overrides (--chunked, --packing).
    Returns each side's best run (highest tokens/s)."""
    setup = {
        "model": {"name": model, **MODELS[model]},
        "batch": batch,
        "accum": 1,
        "mixed": "no",  # fp32, as on a CPU
        "lora": MODELS[model]["lora"]["enabled"],
    }
    common = ["data.mode=mono", "optim.lr=1e-4"]
    sides = {
        "plain": ("train-ours", [*common, *extra, "loss.theta=1"]),
        "weighted": ("train-ours", [*common, *extra, "loss.theta=4"]),
        "trainer": ("train-trainer", common),
    }
    spec = {
        "languages": ["en"],
        "examples": examples,
        "warmup": warmup,
        "setup": setup,
        "batch": batch,
        "accum": 1,
    }
    runs: dict[str, list[dict]] = {name: [] for name in sides}
    log: list = []
    with tempfile.TemporaryDirectory() as tmp:
        names = list(sides)
        for r in range(repeats):
            for name in names[r % 3 :] + names[: r % 3]:
                what, overrides = sides[name]
                res = gpu_bench.spawn(what, {**spec, "label": name, "overrides": overrides}, Path(tmp), log)
                if "error" in res:
                    raise SystemExit(f"{name}: {res['error']}")
                runs[name].append(res)
    best = {name: gpu_bench.best(rs) for name, rs in runs.items()}
    plain, trainer = best["plain"], best["trainer"]
    if plain["step_tokens"] != trainer["step_tokens"] or not gpu_bench.losses_agree(
        plain["first_loss"], trainer["first_loss"]
    ):
        raise SystemExit(
            f"the two loops did not see the same batches: first-step loss {plain['first_loss']:.4f} vs "
            f"{trainer['first_loss']:.4f}, tokens a step {plain['step_tokens']} vs {trainer['step_tokens']}"
        )
    return best


PATHS = {  # --paths: our loop's batch layout x loss path
    "padded, full logits": {"loss": {"chunked": False}, "data": {"packing": False}},
    "padded, chunked CE": {"loss": {"chunked": True}, "data": {"packing": False}},
    "packed, full logits": {"loss": {"chunked": False}, "data": {"packing": True}},
    "packed, chunked CE": {"loss": {"chunked": True}, "data": {"packing": True}},
}


def padding_share(model: str, examples: int | None, batch: int, grouped: bool = False) -> float:
    """The share of the padded batches' positions that are padding: our loop's batches in order (data.shuffle=false),
    or grouped by length (data.group_by_length, epoch 0). Inputs, plus the labels for an encoder-decoder (its
    decoder side is padded too); all training pairs of the sample with ``examples=None``."""
    from transformers import AutoTokenizer

    from multimsd.training.data import LengthGroupedSampler, load_pairs, select, tokenize_rows
    from multimsd.training.models.offline import resolve_model_path

    cfg = to_train_config(
        {
            "model": {"name": model, **MODELS[model]},
            "data": {"languages": ["en"], "mode": "mono", "max_train_examples": examples},
        }
    )
    tok = AutoTokenizer.from_pretrained(resolve_model_path(cfg.model.pretrained))
    rows = select(load_pairs(None), cfg.data, cfg.seed)["train"]
    encoded = tokenize_rows(tok, rows, cfg.model.kind, cfg.data.max_length)
    sides = ["input_ids"] + (["labels"] if MODELS[model]["kind"] == "seq2seq" else [])
    order = list(range(len(encoded)))
    if grouped:
        lengths = [max(len(e["input_ids"]), len(e["labels"])) for e in encoded]
        order = list(LengthGroupedSampler(lengths, batch, cfg.seed, shuffle=False))
    padded = real = 0
    for side in sides:
        lengths = [len(encoded[i][side]) for i in order]
        chunks = [lengths[i : i + batch] for i in range(0, len(lengths), batch)]
        padded += sum(len(c) * max(c) for c in chunks)
        real += sum(lengths)
    return 1 - real / padded


def print_padding(model: str, examples: int | None, batch: int) -> None:
    n = "all" if examples is None else examples
    for grouped in (False, True):
        share = 100 * padding_share(model, examples, batch, grouped)
        how = "grouped by length" if grouped else "in order"
        print(f"padding share ({model}, {n} English training pairs, batch {batch}, {how}): {share:.1f} %")


def compare_paths(model: str, examples: int, batch: int, repeats: int) -> None:
    """Our loop four ways (PATHS), alternating and best of ``repeats``; all must give the same step losses."""
    lora = {
        **MODELS[model]["lora"],
        "dropout": 0.0,
    }  # LoRA dropout would draw masks of other shapes when packed
    best: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(repeats):
            names = list(PATHS)
            for name in names[r % len(names) :] + names[: r % len(names)]:
                work = Path(tmp) / f"r{r}" / name.replace(" ", "").replace(",", "_")
                res = ours(model, examples, batch, 4.0, work, model={"lora": lora}, **PATHS[name])
                if name not in best or res["train_seconds"] < best[name]["train_seconds"]:
                    best[name] = res
    ref_name = next(iter(PATHS))
    ref = [h["loss"] for h in best[ref_name]["history"] if "step" in h]
    for name, res in best.items():
        losses = [h["loss"] for h in res["history"] if "step" in h]
        if len(losses) != len(ref) or any(abs(a - b) > 1e-4 * abs(b) for a, b in zip(losses, ref)):
            raise SystemExit(f"{name}: step losses {losses} differ from {ref_name}'s {ref}")
    tps = {name: r["train_tokens"] / r["train_seconds"] for name, r in best.items()}
    print(f"\n## Loss paths and batch layouts ({model}, {examples} examples, batch {batch}, θ = 4, fp32 CPU)")
    print_padding(model, examples, batch)
    for name, r in best.items():
        flags = f"chunked_loss={r['chunked_loss']}, packing={r['packing']}"
        print(
            f"{name:22s}: {tps[name]:9.1f} tokens/s ({r['train_seconds']:.1f} s)  "
            f"{tps[name] / tps[ref_name]:5.2f}x  [{flags}]"
        )
    print(f"step losses (all four equal to rel 1e-4): {', '.join(f'{x:.4f}' for x in ref)}")


def step_loss(model, ids, labels, novel, chunked: bool) -> torch.Tensor:
    """One causal-LM step's weighted loss (θ = 4), from the logits (from the earliest label on, as our loop's
    logits path computes them) or chunked from the hidden states."""
    from multimsd.training.chunked_loss import chunked_weighted_cross_entropy
    from multimsd.training.kinds import get_kind
    from multimsd.training.loss import weighted_cross_entropy
    from multimsd.training.output_head import find_output_head

    # the causal shift our collator makes (multimsd.training.data.shift_targets), on these tensors
    labels = torch.nn.functional.pad(labels, (0, 1), value=-100)[:, 1:]
    novel = torch.nn.functional.pad(novel, (0, 1), value=0)[:, 1:]
    if not chunked:
        kw, start = get_kind("causal").logits_forward_kw(model, {"labels": labels}, True)
        logits = model(input_ids=ids, use_cache=False, **kw).logits
        return weighted_cross_entropy(logits, labels[:, start:], novel_mask=novel[:, start:], theta=4.0)
    head = find_output_head(model)
    with head.returning_hidden():
        hidden = model(input_ids=ids, use_cache=False).logits
    return chunked_weighted_cross_entropy(hidden, head.weight, labels, novel, theta=4.0)


def logits_memory(batch: int, seq_len: int) -> None:
    """What the logits cost with Llama-3.1's 128k vocabulary: a 2-layer, 64-wide Llama (so the vocabulary
    dominates, as the logits do in the real step), the last quarter of each row labelled (a prompt before it).
    Reported: the tensors autograd keeps for backward (the step's activations) and the time of forward +
    backward, full logits vs the chunked loss; the same loss."""
    import time

    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=LLAMA31_8B["vocab_size"],
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config)
    params = {p.data_ptr() for p in model.parameters()}
    ids = torch.randint(0, config.vocab_size, (batch, seq_len))
    labels = ids.clone()
    labels[:, : 3 * seq_len // 4] = -100
    novel = torch.rand(batch, seq_len) < 0.3
    print(
        f"\n## Logits cost, vocabulary {config.vocab_size:,}, batch {batch} x {seq_len}, 1/4 labelled, fp32 CPU"
    )
    losses = {}
    for chunked in (False, True):
        kept: list[int] = []

        def pack(t, kept=kept):
            if t.data_ptr() not in params:  # weights are the model's, not the step's activations
                kept.append(t.numel() * t.element_size())
            return t

        model.zero_grad()
        t0 = time.perf_counter()
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = step_loss(model, ids, labels, novel, chunked)
        loss.backward()
        seconds = time.perf_counter() - t0
        losses[chunked] = float(loss.detach())
        name = "chunked CE (labelled only)" if chunked else "logits from the first label"
        print(
            f"{name:27s}: kept for backward {sum(kept) / 2**20:8.1f} MiB (largest {max(kept) / 2**20:7.1f} MiB), "
            f"forward + backward {seconds:.2f} s, loss {losses[chunked]:.5f}"
        )
    if abs(losses[True] - losses[False]) > 1e-4 * abs(losses[False]):
        raise SystemExit(f"the two paths disagree: {losses}")


def llama8b_gpu(batch: int, seq_len: int, steps: int, peak_tflops: float, chunked: bool = True) -> None:
    import time

    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    from multimsd.training.kinds.transformer import LLAMA_LORA_TARGETS

    if not torch.cuda.is_available():
        raise SystemExit("--llama8b-gpu needs a CUDA device")
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = LlamaForCausalLM(LlamaConfig(**LLAMA31_8B)).to(torch.bfloat16)
    n_params = sum(p.numel() for p in model.parameters())
    model = get_peft_model(
        model, LoraConfig(r=4, lora_alpha=8, lora_dropout=0.05, target_modules=LLAMA_LORA_TARGETS)
    )
    model.gradient_checkpointing_enable()
    model.enable_input_require_grads()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=5e-5)
    ids = torch.randint(0, LLAMA31_8B["vocab_size"], (batch, seq_len), device="cuda")
    novel = torch.rand(batch, seq_len, device="cuda") < 0.3
    times = []
    for step in range(steps + 3):  # 3 warm-up steps
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        loss = step_loss(model, ids, ids, novel, chunked)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        if step >= 3:
            times.append(time.perf_counter() - t0)
    step_s = sum(times) / len(times)
    tokens = batch * seq_len
    d, layers = LLAMA31_8B["hidden_size"], LLAMA31_8B["num_hidden_layers"]
    flops_per_token = 4 * n_params + 4 * layers * seq_len * d
    achieved = flops_per_token * tokens / step_s
    print(
        f"\n## Llama-3.1-8B architecture, LoRA r=4, bf16, batch {batch} x {seq_len}, {torch.cuda.get_device_name()}, "
        f"{'chunked CE' if chunked else 'full logits'}"
    )
    print(f"step time        : {step_s * 1000:.0f} ms")
    print(f"throughput       : {tokens / step_s:,.0f} tokens/s")
    print(f"MFU              : {100 * achieved / (peak_tflops * 1e12):.1f} % of {peak_tflops:.0f} TFLOP/s")
    print(f"peak GPU memory  : {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2_lora", choices=sorted(MODELS))
    ap.add_argument("--examples", type=int, default=32)
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3, help="fresh runs of each loop, rotated (default 3)")
    ap.add_argument(
        "--warmup", type=int, default=1, help="optimizer steps left out on every side (default 1)"
    )
    ap.add_argument(
        "--chunked", choices=["true", "false"], help="loss.chunked for our loop (default: the config's)"
    )
    ap.add_argument("--packing", action="store_true", help="data.packing=true for our loop")
    ap.add_argument("--paths", action="store_true", help="compare padded/packed x full logits/chunked CE")
    ap.add_argument("--padding", action="store_true", help="padding share of the batches, in order / grouped")
    ap.add_argument(
        "--logits-memory",
        action="store_true",
        help="activations kept for backward: full logits vs chunked CE",
    )
    ap.add_argument(
        "--llama8b-gpu", action="store_true", help="LoRA throughput / MFU of Llama-3.1-8B's architecture"
    )
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument(
        "--peak-tflops", type=float, default=989.0, help="the GPU's dense bf16 peak (H100/H200: 989)"
    )
    args = ap.parse_args()
    if args.llama8b_gpu:
        llama8b_gpu(args.batch_size, args.seq_len, args.steps, args.peak_tflops, args.chunked != "false")
        return
    if args.padding:
        for model in sorted(MODELS):
            print_padding(model, None, args.batch_size)
        return
    if args.logits_memory:
        logits_memory(args.batch_size, args.seq_len)
        return
    torch.manual_seed(0)
    if args.paths:
        compare_paths(args.model, args.examples, args.batch_size, args.repeats)
        return
    extra = [f"data.packing={str(args.packing).lower()}"]
    if args.chunked:
        extra.append(f"loss.chunked={args.chunked}")
    best = trainer_comparison(args.model, args.examples, args.batch_size, args.repeats, args.warmup, extra)
    plain, weighted, trainer = best["plain"], best["weighted"], best["trainer"]
    tps = {k: r["tokens_per_s"] for k, r in best.items()}
    timed = sum(plain["step_tokens"][args.warmup :])

    def secs(r: dict) -> str:
        return f"{sum(r['step_seconds'][args.warmup :]):.1f} s"

    print(
        f"\n## Training benchmark ({args.model}, {args.examples} examples, batch {args.batch_size}, fp32 CPU; "
        f"ours: chunked_loss={plain['chunked_loss']}, packing={plain['packing']}; {args.repeats} fresh processes "
        f"each, rotated, best kept; {args.warmup} warm-up step(s) left out; {timed} tokens timed)"
    )
    print(f"our loop, θ = 1 (plain CE)   : {tps['plain']:9.1f} tokens/s ({secs(plain)})")
    print(
        f"our loop, θ = 4 (weighted)   : {tps['weighted']:9.1f} tokens/s ({secs(weighted)})   overhead {100 * (tps['plain'] / tps['weighted'] - 1):+.1f} % (goal <= 3 %)"
    )
    print(f"🤗 Trainer (plain CE)         : {tps['trainer']:9.1f} tokens/s ({secs(trainer)})")
    print(
        f"first-step loss, ours/Trainer: {plain['first_loss']:.4f} / {trainer['first_loss']:.4f} (same batches)"
    )
    print(f"ours / Trainer               : {tps['plain'] / tps['trainer']:9.2f}x (goal >= 1.0)")
    rss = max(r["peak_gib"] for r in best.values()) * 1024
    print(f"peak RSS (largest process)   : {rss:9.0f} MiB")


if __name__ == "__main__":
    main()
