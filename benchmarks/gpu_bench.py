"""GPU benchmark of the training stage at paper scale, in one command, with an answer that can be trusted.

    python benchmarks/gpu_bench.py                       # on a CUDA GPU: the paper's two architectures
    python benchmarks/gpu_bench.py --quick               # on CPU: the same code on tiny models (CI runs this)
    python benchmarks/gpu_bench.py --profile             # top CUDA kernels and host-device syncs per step
    python benchmarks/gpu_bench.py --out bench.md        # also bench.md (the table) and bench.json (all numbers)

No Hub needed: on a GPU the models are ``random:llama31_8b`` (Llama-3.1-8B-Instruct's exact architecture, random
bf16 weights, SmolLM2's tokenizer; LoRA r=4 on all 7 projections) and ``random:mbart_large50`` (mBART-large-50's
architecture and tokenizer; full fine-tuning, bf16 mixed precision, batch 32). On CPU (``--quick``): ``tiny:llama``
+ LoRA and ``tiny:mbart``, every row present. Data: the bundled sample's pairs (``--languages``: leave ``ja`` out
where MeCab's dictionary is not installed).

Why it is built this way (issue #30): the first version timed our loop from *before* fetching and collating a
batch and the Trainer from after; ours always ran first (paying the first-time costs of new padded shapes) and
its model stayed in memory while the Trainer ran, all in one process. Now:

- **Process layout**: this parent process never touches the GPU. Every measurement (each training run, each
  decoding variant, the checkpoint sizes) is a fresh child process, ``python gpu_bench.py --worker <what> SPEC
  RESULT``, that reads its settings from a JSON file and writes its numbers to another. Nothing of one
  measurement (allocator cache, compiled kernels, a model in memory) is left for the next.
- **Order**: the two loops alternate, ``ours, trainer, trainer, ours, ...`` (``--repeats`` runs of each, 2 by
  default); each side reports the **best** (highest tokens/s) of its runs, every run is in the JSON.
- **The clock, both sides**: from the optimizer step's batches in hand (fetched, collated, on the device) to the
  optimizer step done, synchronised. Ours: the loop's ``history[*]["seconds"]`` (``data_seconds``, the fetch, is
  reported beside it where the loop records it). The Trainer: ``get_batch_samples`` is overridden to fetch the
  step's micro-batches, synchronise and start the clock, then count the label tokens (as our loop does inside
  its clock); ``on_step_end`` (after the optimizer and scheduler steps and ``zero_grad``) synchronises and
  stops it. The first ``--warmup`` steps are left out of the timing on both sides.
- **The same batches**: ours with ``data.shuffle=false``, the Trainer with a sequential sampler over the same
  tokenised examples and our collator; the same seed before the model is built, so the same random (and LoRA)
  weights. The first-step losses must agree (within 1 %: mBART's dropout draws differ between the loops);
  where they do not, the row says so and prints no ratio.

Rows: Llama + LoRA ours vs Trainer at batch 8 × accumulation 4; ours at 32 × 1 (the same 32 examples an
optimizer step, same lr and schedule; the loss is normalised by the step's global label count, so the gradient
is the same, and its first-step loss must equal ours at 8 × 4); ours with ``--packing-overrides`` (default
``data.packing=true model.attn_implementation=flex_attention``, merged into the train config as ``key=value``
dot-list overrides, so a key another branch adds works once merged); mBART ours vs Trainer at batch 32. Decoding
(each variant its own process, ``--decode-warmup`` rows decoded untimed first): Llama + LoRA greedy, ours with
the default ``eval.*`` settings and ours per ``--decode-backends`` value (``eval.backend=<value>`` plus
``--decode-overrides``) vs plain ``model.generate`` (adapter merged) at each of ``--plain-batches``, the best
one reported; mBART beam search (5 beams) ours vs plain ``generate(num_beams=5)`` likewise (one language a batch,
its code forced first, as mBART-50 needs). New tokens are counted from the plain path's outputs (up to and
including the first end token). Checkpoints: size and save time of one checkpoint as the loop writes it (LoRA:
the adapter alone) and of the whole state.

``--profile`` runs each training loop once more (fresh processes, no clock) with ``torch.profiler`` over
``--profile-steps`` optimizer steps after the warm-up, delimited by a global optimizer-step hook
(``torch.optim.optimizer.register_optimizer_step_post_hook``: accelerate steps the inner optimizer once per
accumulation window, the Trainer likewise), so a "step" is everything a loop does from one optimizer step to the
next, its data fetch and logging included. It prints, per loop, the 15 most expensive CUDA kernels per step
(name, calls a step, ms a step, from the profiler's device events) and the **host-device synchronisations per
step**: the CUDA runtime calls that block the host, counted by name among the profiler's events
(``cudaStreamSynchronize``, ``cudaDeviceSynchronize``, ``cudaEventSynchronize`` and the synchronous
``cudaMemcpy``; a ``.item()`` / ``float(tensor)`` shows up as a ``cudaStreamSynchronize``). On CPU it prints the 15
most expensive CPU ops per step (self time) and "syncs: n/a (CPU)".

Time budget (GPU defaults, one 80 GB GPU): 320 training examples (10 optimizer steps of 32 examples, 2 warm-up),
6 Llama and 4 mBART training processes, 128 prompts × 256 new tokens decoded by ours and by plain ``generate``
at batches 64 and 128, the same for mBART's beam search, one checkpoint process. The wall time is printed at the
end, and each process's in the JSON (``--out``); docs/performance.md has the estimate and the command.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from itertools import islice
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # a GPU box may run the working tree without multimsd installed (PYTHONPATH)
    sys.path.insert(0, str(ROOT))

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
# QLoRA (issue #37): the same 8B + LoRA at the same batch on a 4-bit NF4 base (model.quantization=4bit, gradient
# checkpointing on by default, as a 24 GB card needs it); ours vs the Trainer on the same quantized model, both
# with torch's AdamW. Training rows only: its peak memory beside bf16 LoRA's is the point.
GPU["qlora"] = {
    **GPU["llama"],
    "model": {**GPU["llama"]["model"], "name": "llama31_8b_qlora", "quantization": "4bit"},
    "only": ["train"],
}
CPU = {
    "llama": {
        **GPU["llama"],
        "model": {**GPU["llama"]["model"], "pretrained": "tiny:llama", "dtype": "float32"},
        # tiny:llama's tokenizer is one token a byte: at the default 256 a shuffle of 16 examples in the GPU
        # command's 8 languages left none that fit ("no training example fits data.max_length")
        "max_length": 512,
        "batch": 2,
        "accum": 2,
    },
    "mbart": {
        **GPU["mbart"],
        "model": {**GPU["mbart"]["model"], "pretrained": "tiny:mbart"},
        "mixed": "no",
        "batch": 4,
    },
}
CPU["qlora"] = {
    **CPU["llama"],
    "model": {**CPU["llama"]["model"], "quantization": "4bit"},
    "only": ["train"],
}
PACKING = {
    "gpu": ["data.packing=true", "model.attn_implementation=flex_attention"],
    "cpu": ["data.packing=true"],  # flex_attention needs a GPU; on CPU the row checks the override path
}
LOSS_TOLERANCE = 1e-2  # relative: mBART's dropout draws differ between the two loops
SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy")
"""CUDA runtime calls that block the host until the device is done (``cudaMemcpy`` is the synchronous copy;
``cudaMemcpyAsync`` is not counted, its wait shows up as the ``cudaStreamSynchronize`` after it)."""
TOP = 15


# ====================================================================================== worker side (child)
def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _peak_reset() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()


def _peak_gib() -> float:
    import torch

    if torch.cuda.is_available():
        return torch.cuda.max_memory_allocated() / 2**30
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # CPU: the process's peak RSS


def _device_name() -> str:
    import torch

    return torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU"


def train_cfg(spec: dict):
    """The training stage's config of a measurement: our loop's, and the Trainer's model / data settings."""
    from omegaconf import OmegaConf

    setup = spec["setup"]
    base = {
        "model": setup["model"],
        "data": {
            "mode": "multi",
            "languages": spec["languages"],
            "max_train_examples": spec["examples"],
            "max_eval_examples": 1,  # the final predictions are not what is measured here
            "shuffle": False,
            **({"max_length": setup["max_length"]} if "max_length" in setup else {}),
        },
        "optim": {"batch_size": spec["batch"], "grad_accum": spec["accum"], "epochs": 1, "lr": 5e-5},
        # merge_lora=false: the final predictions (1 row a language) need no 14 GiB host copy of the 8B base
        "eval": {"generate": False, "before_training": False, "max_new_tokens": 4, "merge_lora": False},
        "output": {"dir": spec["out"]},
        "resume": False,
    }
    if "max_new" in spec:  # a decoding measurement: the default eval settings, the bench's length and beams
        base["eval"] = {"max_new_tokens": spec["max_new"], "num_beams": spec["beams"]}
    return OmegaConf.merge(OmegaConf.create(base), OmegaConf.from_dotlist(list(spec.get("overrides", []))))


class StepProfiler:
    """torch.profiler over ``steps`` optimizer steps after the first ``after`` (see the module docstring)."""

    def __init__(self, after: int, steps: int):
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self.after, self.steps, self.seen, self.recorded = after, steps, 0, 0
        self.prof = None
        self.summary: dict | None = None
        self.handle = register_optimizer_step_post_hook(self._hook)

    def _hook(self, *_args) -> None:
        self.seen += 1
        if self.prof is not None:
            self.recorded += 1
            if self.recorded >= self.steps:
                self.finish()
        elif self.seen == self.after and self.summary is None:
            from torch.profiler import ProfilerActivity, profile

            activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if _cuda() else [])
            self.prof = profile(activities=activities)
            self.prof.__enter__()

    def finish(self) -> None:
        if self.prof is not None:
            _sync()
            self.prof.__exit__(None, None, None)
            self.summary = summarise(self.prof, max(self.recorded, 1), _cuda())
            # closed by the hook after `steps` steps; else the run ended first and the window holds its end
            # (evaluation, predictions, saving) too
            self.summary["complete"] = self.recorded >= self.steps
            self.prof = None
        self.handle.remove()


def summarise(prof, steps: int, gpu: bool) -> dict:
    """Per step: the top kernels (GPU) or CPU ops (CPU) by time, and the blocking CUDA calls (GPU)."""
    if gpu:
        from torch.autograd import DeviceType

        events = list(prof.events())
        kernels: dict[str, list[float]] = {}
        for e in events:
            if e.device_type == DeviceType.CUDA:
                k = kernels.setdefault(e.name, [0, 0.0])
                k[0] += 1
                k[1] += e.time_range.elapsed_us()
        rows = sorted(kernels.items(), key=lambda kv: -kv[1][1])[:TOP]
        top = [{"name": n, "calls": c / steps, "ms": us / 1e3 / steps} for n, (c, us) in rows]
        return {"steps": steps, "what": "CUDA kernels", "top": top, "syncs": count_syncs(events) / steps}
    ops = sorted(prof.key_averages(), key=lambda a: -a.self_cpu_time_total)[:TOP]
    top = [{"name": a.key, "calls": a.count / steps, "ms": a.self_cpu_time_total / 1e3 / steps} for a in ops]
    return {"steps": steps, "what": "CPU ops (self time)", "top": top, "syncs": None}


def count_syncs(events) -> int:
    """How many of the profiler's events are CUDA runtime calls that block the host (SYNC_CALLS, by name)."""
    return sum(1 for e in events if e.name in SYNC_CALLS)


def w_train_ours(spec: dict) -> dict:
    os.environ["ACCELERATE_MIXED_PRECISION"] = spec["setup"]["mixed"]
    from multimsd.training import loop
    from multimsd.training.loop import run

    load = loop.load_model_and_tokenizer

    def load_then_reset_peak(*args, **kwargs):
        # The peak of training, from the model loaded on, as the Trainer's side measures it: a random: model is
        # built in full precision before it is quantized (QLoRA), which a checkpoint loaded quantized never is.
        loaded = load(*args, **kwargs)
        _peak_reset()
        return loaded

    loop.load_model_and_tokenizer = load_then_reset_peak
    prof = StepProfiler(spec["warmup"], spec["profile_steps"]) if spec.get("profile") else None
    _peak_reset()
    res = run(train_cfg(spec))
    if prof is not None:
        prof.finish()
    steps = [h for h in res["history"] if "step" in h]
    out = {
        "first_loss": steps[0]["loss"],
        "losses": [h["loss"] for h in steps],
        "steps": len(steps),
        "peak_gib": _peak_gib(),
        "device": _device_name(),
        "chunked_loss": res.get("chunked_loss"),
        "packing": res.get("packing"),
    }
    if prof is not None:
        return {**out, "profile": prof.summary}
    timed = steps[spec["warmup"] :]
    if not timed:
        raise SystemExit(f"only {len(steps)} steps: lower --warmup or raise --examples")
    out.update(
        step_tokens=[h["tokens"] for h in steps],
        step_seconds=[h["seconds"] for h in steps],
        tokens_per_s=sum(h["tokens"] for h in timed) / sum(h["seconds"] for h in timed),
    )
    if all("data_seconds" in h for h in steps):
        out["data_seconds"] = [h["data_seconds"] for h in steps]
    return out


def w_train_trainer(spec: dict) -> dict:
    import datasets
    import torch
    from accelerate.utils import set_seed
    from transformers import Trainer, TrainerCallback, TrainingArguments

    from multimsd.training.data import Collator, load_pairs, select, tokenize_rows
    from multimsd.training.forward import input_tokens
    from multimsd.training.loop import to_train_config
    from multimsd.training.modeling import load_model_and_tokenizer

    setup = spec["setup"]
    cfg = to_train_config(train_cfg(spec))
    # The plain 🤗 model: no fused kernels patched in (multimsd's model.fused_kernels=auto would on a GPU).
    if hasattr(cfg.model, "fused_kernels"):
        cfg.model.fused_kernels = "false"
    set_seed(cfg.seed)  # as our loop does before building the model: the same (random / LoRA) weights
    net, tok = load_model_and_tokenizer(cfg.model)
    rows = select(load_pairs(None), cfg.data, cfg.seed)["train"]
    encoded = tokenize_rows(tok, rows, cfg.model.kind, cfg.data.max_length)
    ds = datasets.Dataset.from_list([{"input_ids": e["input_ids"], "labels": e["labels"]} for e in encoded])
    collate = Collator(tok.pad_token_id, shift=False)  # the plain 🤗 model shifts its labels itself

    def collator(features):
        b = collate([{**f, "novel": [0] * len(f["labels"])} for f in features])
        for k in ("novel", "target_index"):  # our loss's, not the model's inputs
            b.pop(k)
        return b

    profiling = bool(spec.get("profile"))
    clock = {"t0": 0.0, "times": [], "tokens": []}

    class StepClock(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            if not profiling:
                _sync()
                clock["times"].append(time.perf_counter() - clock["t0"])

    class ClockedTrainer(Trainer):
        def _get_train_sampler(self, *args, **kwargs):  # our loop's order with data.shuffle=false
            return torch.utils.data.SequentialSampler(self.train_dataset)

        def get_batch_samples(self, epoch_iterator, num_batches, device):
            batches = list(islice(epoch_iterator, num_batches))  # the step's micro-batches in hand
            if not profiling:
                # counted before the clock starts (reading them waits for the device; ours reads them once,
                # after its step, with the loss)
                clock["tokens"].append(
                    sum(int(input_tokens(b)) + int(b["labels"].ne(-100).sum()) for b in batches)
                )
                _sync()
                clock["t0"] = time.perf_counter()
            return super().get_batch_samples(iter(batches), len(batches), device)

    args = TrainingArguments(
        output_dir=str(Path(spec["out"]) / "trainer"),
        per_device_train_batch_size=spec["batch"],
        gradient_accumulation_steps=spec["accum"],
        num_train_epochs=1,
        learning_rate=5e-5,
        lr_scheduler_type="linear",
        max_grad_norm=1.0,
        optim="adamw_torch",
        save_strategy="no",
        report_to=[],
        logging_strategy="steps",
        logging_steps=1,  # the first step's loss; ours also reads its loss every step
        use_cpu=not torch.cuda.is_available(),
        bf16=setup["mixed"] == "bf16",
        dataloader_num_workers=0,
        seed=cfg.seed,
        remove_unused_columns=False,
    )
    prof = StepProfiler(spec["warmup"], spec["profile_steps"]) if profiling else None
    _peak_reset()
    trainer = ClockedTrainer(
        model=net, args=args, train_dataset=ds, data_collator=collator, callbacks=[StepClock()]
    )
    trainer.train()
    if prof is not None:
        prof.finish()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    out = {
        "first_loss": losses[0],
        "losses": losses,
        "steps": trainer.state.global_step,
        "peak_gib": _peak_gib(),
        "device": _device_name(),
    }
    if prof is not None:
        return {**out, "profile": prof.summary}
    w = spec["warmup"]
    if len(clock["times"]) <= w:
        raise SystemExit(f"only {len(clock['times'])} steps: lower --warmup or raise --examples")
    out.update(
        step_tokens=clock["tokens"],
        step_seconds=clock["times"],
        tokens_per_s=sum(clock["tokens"][w:]) / sum(clock["times"][w:]),
    )
    return out


def _decoding_model(spec: dict, plain: bool = False):
    """The model every decoding variant uses: the same seed, so the same random weights in every process; a
    trained adapter is not the identity, so LoRA's B is drawn non-zero (merging then changes the weights).
    ``plain``: the plain 🤗 model, without the fused kernels multimsd would patch in on a GPU."""
    import torch
    from accelerate.utils import set_seed

    from multimsd.training.data import load_pairs, select
    from multimsd.training.loop import to_train_config
    from multimsd.training.modeling import load_model_and_tokenizer

    cfg = to_train_config(train_cfg(spec))
    if plain and hasattr(cfg.model, "fused_kernels"):
        cfg.model.fused_kernels = "false"
    set_seed(cfg.seed)
    model, tok = load_model_and_tokenizer(cfg.model)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.02)
    model = model.to("cuda" if torch.cuda.is_available() else "cpu").eval()
    split = select(load_pairs(None), cfg.data, cfg.seed)
    rows = (split["validation"] + split["test"])[: spec["rows"]]
    return cfg, model, tok, rows


def _timed(fn):
    _peak_reset()
    t0 = time.perf_counter()
    result = fn()
    _sync()
    return result, time.perf_counter() - t0


def w_decode_ours(spec: dict) -> dict:
    from accelerate import Accelerator

    from multimsd.training.predict import generate

    acc = Accelerator()
    cfg, model, tok, rows = _decoding_model(spec)
    generate(cfg, model, tok, rows[: spec["warm_rows"]], acc)  # first-time costs, untimed
    texts, seconds = _timed(lambda: generate(cfg, model, tok, rows, acc))
    return {
        "texts": [t.text for t in texts],
        "seconds": seconds,
        "peak_gib": _peak_gib(),
        "device": _device_name(),
    }


def w_decode_plain(spec: dict) -> dict:
    """Plain ``model.generate`` at each batch size of ``spec["batch_sizes"]`` (each after its own untimed
    warm-up), the adapter merged (the fastest plain setup)."""
    import torch

    from multimsd.training.kinds.seq2seq import MBART50_LANG_CODES
    from multimsd.training.prompts import chat_messages

    cfg, model, tok, rows = _decoding_model(spec, plain=True)
    merged = model.merge_and_unload() if hasattr(model, "merge_and_unload") else model
    max_new, device = spec["max_new"], merged.device
    eos = tok.eos_token_id

    def new_tokens(g: list[int]) -> int:  # up to and including the first end token
        return next((i + 1 for i, t in enumerate(g) if t == eos), len(g))

    def causal(part: list[dict], b: int) -> tuple[list[str], list[int]]:
        prompts = [
            tok.apply_chat_template(
                chat_messages(r["complex"], r["lang"]), tokenize=False, add_generation_prompt=True
            )
            for r in part
        ]
        tok.padding_side = "left"
        texts, counts = [], []
        for k in range(0, len(prompts), b):
            enc = tok(prompts[k : k + b], return_tensors="pt", padding=True, add_special_tokens=False).to(
                device
            )
            gen = merged.generate(
                **enc, max_new_tokens=max_new, do_sample=False, num_beams=1, pad_token_id=tok.pad_token_id
            )[:, enc["input_ids"].shape[1] :]
            counts += [new_tokens(g) for g in gen.tolist()]
            texts += [" ".join(t.split()) for t in tok.batch_decode(gen, skip_special_tokens=True)]
        return texts, counts

    def seq2seq(part: list[dict], b: int) -> tuple[list[str], list[int]]:
        texts, counts = [""] * len(part), [0] * len(part)
        for lang in dict.fromkeys(r["lang"] for r in part):  # one language a batch: its code forced first
            idx = [k for k, r in enumerate(part) if r["lang"] == lang]
            code = MBART50_LANG_CODES[lang]
            tok.src_lang = code
            for j in range(0, len(idx), b):
                chunk = idx[j : j + b]
                enc = tok(
                    [part[k]["complex"] for k in chunk],
                    return_tensors="pt",
                    padding=True,
                    truncation=True,
                    max_length=cfg.data.max_length,
                ).to(device)
                gen = merged.generate(
                    **enc,
                    num_beams=spec["beams"],
                    max_length=max_new,  # as ours: counts the decoder's start token
                    forced_bos_token_id=tok.convert_tokens_to_ids(code),
                )
                for k, g, t in zip(chunk, gen.tolist(), tok.batch_decode(gen, skip_special_tokens=True)):
                    texts[k], counts[k] = " ".join(t.split()), new_tokens(g[1:])
        return texts, counts

    fn = causal if spec["setup"]["model"]["kind"] == "causal" else seq2seq
    by_batch = {}
    with torch.inference_mode():
        for b in spec["batch_sizes"]:
            fn(rows[: spec["warm_rows"]], b)  # first-time costs, untimed
            (texts, counts), seconds = _timed(lambda b=b: fn(rows, b))
            by_batch[b] = {"texts": texts, "counts": counts, "seconds": seconds, "peak_gib": _peak_gib()}
    return {"batches": by_batch, "device": _device_name()}


def w_checkpoint(spec: dict) -> dict:
    import torch
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState, GradientState

    from multimsd.training.checkpoint import TrainState, register_trainable_only_hooks, save_checkpoint
    from multimsd.training.loop import to_train_config
    from multimsd.training.modeling import load_model_and_tokenizer

    work = Path(spec["out"])

    def size(p: Path) -> int:
        return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())

    out = {}
    for name, hooked in (("trainable", True), ("whole", False)):
        AcceleratorState._reset_state(True)
        GradientState._reset_state()
        acc = Accelerator()
        cfg = to_train_config(train_cfg(spec))
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
    return {**out, "device": _device_name()}


WORKERS = {
    "train-ours": w_train_ours,
    "train-trainer": w_train_trainer,
    "decode-ours": w_decode_ours,
    "decode-plain": w_decode_plain,
    "checkpoint": w_checkpoint,
}


def worker_main(what: str, spec_file: str, result_file: str) -> None:
    spec = json.loads(Path(spec_file).read_text(encoding="utf-8"))
    t0 = time.perf_counter()
    result = WORKERS[what](spec)
    result["process_seconds"] = time.perf_counter() - t0
    Path(result_file).write_text(json.dumps(result), encoding="utf-8")


# ===================================================================================== parent side (no GPU)
def spawn(what: str, spec: dict, work: Path, log: list, progress: Path | None = None) -> dict:
    """Run one measurement in a fresh process; its result, or ``{"error": <its last error line>}``. Each
    result is also appended to ``progress`` (a JSON line) and its main number printed as it comes: a run cut
    off by a time limit (a lent GPU's, a job's) keeps every measurement it finished."""
    n = len(log)
    spec = {**spec, "out": str(work / f"{n:02d}_{what}")}
    spec_file, result_file = work / f"{n:02d}_{what}.spec.json", work / f"{n:02d}_{what}.result.json"
    spec_file.write_text(json.dumps(spec), encoding="utf-8")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", what, str(spec_file), str(result_file)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode == 0 and result_file.exists():
        result = json.loads(result_file.read_text(encoding="utf-8"))
    else:
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        result = {"error": lines[-1] if lines else f"exit status {proc.returncode}"}
        print(proc.stderr[-4000:], file=sys.stderr)
    result["wall_seconds"] = wall
    log.append(
        {"what": what, "label": spec.get("label", ""), "wall_seconds": wall, "error": result.get("error")}
    )
    line = f"[gpu_bench] {what} {spec.get('label', '')}: {wall:.0f} s; {headline(result)}"
    print(line.rstrip("; "), file=sys.stderr, flush=True)
    if progress is not None:
        with progress.open("a", encoding="utf-8") as f:
            f.write(
                json.dumps({"what": what, "label": spec.get("label", ""), "result": result}, default=str)
                + "\n"
            )
    return result


def headline(result: dict) -> str:
    """One measurement's main number, for its progress line (the table comes at the end)."""
    if result.get("error"):
        return f"failed: {result['error']}"
    if "tokens_per_s" in result:
        return f"{result['tokens_per_s']:,.0f} tokens/s"
    if "batches" in result:  # plain generate: seconds per batch size
        return ", ".join(f"batch {b}: {r['seconds']:.1f} s" for b, r in result["batches"].items())
    if "seconds" in result:  # our decoding
        return f"decoded in {result['seconds']:.1f} s"
    if "trainable" in result:  # checkpoint sizes
        return f"checkpoint {result['trainable']['bytes'] / 1e6:,.1f} MB, whole state {result['whole']['bytes'] / 1e6:,.1f} MB"
    return ""


def alternating(repeats: int) -> list[str]:
    """ours, trainer, trainer, ours, ours, trainer, ...: each side first as often as the other."""
    order: list[str] = []
    for k in range(repeats):
        order += ["ours", "trainer"] if k % 2 == 0 else ["trainer", "ours"]
    return order


def best(runs: list[dict]) -> dict | None:
    """The run with the highest tokens/s (the least disturbed one); None when every run failed."""
    ok = [r for r in runs if "tokens_per_s" in r]
    return max(ok, key=lambda r: r["tokens_per_s"]) if ok else None


def losses_agree(a: float, b: float) -> bool:
    return abs(a - b) <= LOSS_TOLERANCE * max(1.0, abs(b))


def ratio_cell(ours: dict | None, ref: dict | None) -> str:
    """``x.xx×``, or why there is no ratio: a failed side, or first-step losses that differ (not the same
    batches / weights, so the two numbers measure different work)."""
    if ours is None or ref is None:
        return "no ratio: a run failed or was not run"
    if not losses_agree(ours["first_loss"], ref["first_loss"]):
        return f"no ratio: first-step losses differ ({ours['first_loss']:.4f} vs {ref['first_loss']:.4f})"
    return f"{ours['tokens_per_s'] / ref['tokens_per_s']:.2f}×"


def flops_per_token(setup: dict) -> float:
    """6·N (forward + both backward matmuls) for full fine-tuning, 4·N for LoRA (no weight gradients of the base);
    N = the parameters that do matrix products (the input embedding table is a lookup)."""
    import torch
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


def commit() -> str:
    """``git rev-parse HEAD`` (+ ``-dirty`` with uncommitted changes) where the checkout has its .git, else
    $MULTIMSD_COMMIT (a GPU box gets the working tree without .git), else "unknown"."""
    if (ROOT / ".git").exists():
        try:
            head = subprocess.run(
                ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
            ).stdout.strip()
            dirty = subprocess.run(
                ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                capture_output=True,
                text=True,
            ).stdout.strip()
            return head + ("-dirty" if dirty else "")
        except (OSError, subprocess.CalledProcessError):
            pass
    return os.environ.get("MULTIMSD_COMMIT") or "unknown"


def versions() -> str:
    parts = []
    for dist in ("torch", "transformers", "peft", "accelerate", "liger-kernel"):
        try:
            parts.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            if dist != "liger-kernel":  # optional: named only where installed
                parts.append(f"{dist} absent")
    return ", ".join(parts)


def fmt_tps(r: dict | None) -> str:
    return "failed" if r is None else f"{r['tokens_per_s']:,.0f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="CPU-sized: tiny models, few examples and rows")
    ap.add_argument("--profile", action="store_true", help="per-step top kernels / syncs of both loops")
    ap.add_argument("--profile-steps", type=int, default=3, help="optimizer steps profiled (default 3)")
    ap.add_argument("--examples", type=int, default=None, help="training examples (GPU 256, quick 16)")
    ap.add_argument("--warmup", type=int, default=None, help="optimizer steps left out (GPU 2, quick 1)")
    ap.add_argument("--repeats", type=int, default=2, help="fresh runs of each loop, alternated (default 2)")
    ap.add_argument(
        "--languages", default=None, help="comma-separated, default all (leave ja out without MeCab)"
    )
    ap.add_argument("--decode-rows", type=int, default=None, help="prompts decoded (GPU 128, quick 8)")
    ap.add_argument(
        "--decode-warmup", type=int, default=None, help="rows decoded untimed first (GPU 8, quick 2)"
    )
    ap.add_argument("--max-new-tokens", type=int, default=None, help="GPU: 256 (paper); quick: 8")
    ap.add_argument(
        "--plain-batches", default=None, help="plain generate's batch sizes (GPU 64,128; quick 4,8)"
    )
    ap.add_argument(
        "--decode-backends",
        default=None,
        help="also ours with eval.backend=<each>, comma-separated (GPU: static,continuous; quick: none)",
    )
    ap.add_argument("--decode-overrides", nargs="*", default=[], help="key=value for the backend rows")
    ap.add_argument("--packing-overrides", nargs="*", default=None, help="key=value of the packing row")
    ap.add_argument("--beams", type=int, default=5, help="mBART beam search width (paper: 5)")
    ap.add_argument("--beam-rows", type=int, default=None, help="mBART rows beam-searched (GPU 64, quick 8)")
    ap.add_argument(
        "--peak-tflops", type=float, default=989.0, help="the GPU's dense bf16 peak (H100/H200: 989)"
    )
    ap.add_argument("--only", choices=["train", "checkpoint", "decode"], action="append")
    ap.add_argument(
        "--models",
        choices=["llama", "mbart", "qlora"],
        action="append",
        help="default: llama and mbart; qlora (8B + LoRA on a 4-bit base, training only; needs bitsandbytes) "
        "where named; measured in the order given",
    )
    ap.add_argument("--out", type=Path, default=None, help="also write the table here, and its .json beside")
    ap.add_argument(
        "--deadline",
        type=float,
        default=None,
        help="start no measurement after this many seconds; the rest are rows 'not run' (a lent GPU's limit)",
    )
    ap.add_argument("--worker", nargs=3, metavar=("WHAT", "SPEC", "RESULT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker_main(*args.worker)
        return 0

    import torch  # the parent asks only whether a GPU exists; it creates no CUDA context

    started = time.perf_counter()
    gpu = torch.cuda.is_available() and not args.quick
    setups = GPU if gpu else CPU
    from multimsd import LANGUAGES

    languages = args.languages.split(",") if args.languages else list(LANGUAGES)
    examples = args.examples or (256 if gpu else 16)
    warmup = args.warmup if args.warmup is not None else (2 if gpu else 1)
    rows_n = args.decode_rows or (128 if gpu else 8)
    warm_rows = args.decode_warmup if args.decode_warmup is not None else (4 if gpu else 2)
    beam_rows = args.beam_rows or (64 if gpu else 8)
    max_new = args.max_new_tokens or (256 if gpu else 8)
    plain_batches = [int(b) for b in (args.plain_batches or ("64,128" if gpu else "4,8")).split(",")]
    packing = (
        args.packing_overrides if args.packing_overrides is not None else PACKING["gpu" if gpu else "cpu"]
    )
    if args.decode_backends is None:  # the GPU run measures every backend against plain generate
        args.decode_backends = "static,continuous" if gpu else ""
    backends = [b for b in args.decode_backends.split(",") if b]
    only = set(args.only or ["train", "checkpoint", "decode"])
    models = list(dict.fromkeys(args.models)) if args.models else ["llama", "mbart"]  # in the order given
    common = {"languages": languages, "examples": examples, "warmup": warmup}
    log: list[dict] = []
    skipped: list[str] = []  # measurements --deadline left out
    results: dict = {"settings": {**common, "repeats": args.repeats, "gpu": gpu}, "rows": {}}
    lines: list[str] = []
    failed = False
    device = "CPU (tiny models; the GPU table needs a CUDA device)"

    progress = args.out.with_suffix(".progress.jsonl") if args.out else None
    if progress is not None:
        progress.parent.mkdir(parents=True, exist_ok=True)
        progress.write_text("", encoding="utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)

        def job(what: str, setup: dict, label: str, **extra) -> dict:
            nonlocal device, failed
            spec = {
                **common,
                "setup": setup,
                "batch": setup["batch"],
                "accum": setup["accum"],
                "label": label,
            }
            if args.deadline is not None and time.perf_counter() - started > args.deadline:
                failed = True  # the table is incomplete: say so in the exit status too
                skipped.append(f"{what} {label}")
                return {"error": f"not run: --deadline {args.deadline:g} s had passed"}
            r = spawn(what, {**spec, **extra}, work, log, progress)
            if "error" in r:
                failed = True
            elif gpu:
                device = r["device"]
            return r

        if args.profile:
            lines += ["| loop | profiled steps | syncs / step | top ops / step |", "|---|---:|---:|---|"]
            sections = []
            for name in models:
                setup = setups[name]
                # enough optimizer steps that the window closes inside the training loop, with a margin
                step_examples = setup["batch"] * setup["accum"]
                need = max(examples, (warmup + args.profile_steps + 2) * step_examples)
                for side in ("ours", "trainer"):
                    r = job(
                        f"train-{side}",
                        setup,
                        f"{name} profile",
                        profile=True,
                        profile_steps=args.profile_steps,
                        examples=need,
                    )
                    results["rows"][f"{name} {side} profile"] = r
                    if "error" in r:
                        lines.append(f"| {name} {side} | failed: {r['error']} | | |")
                        continue
                    p = r["profile"]
                    if p is None:
                        lines.append(f"| {name} {side} | 0: the run ended before the warm-up did | | |")
                        failed = True
                        continue
                    syncs = "n/a (CPU)" if p["syncs"] is None else f"{p['syncs']:.1f}"
                    steps = f"{p['steps']}" + (
                        "" if p["complete"] else " (the run ended first: its end included)"
                    )
                    lines.append(f"| {name} {side} | {steps} | {syncs} | {p['what']}: below |")
                    sections += [
                        "",
                        f"### {name}, {side}: top {TOP} {p['what']} per step",
                        "",
                        "| name | calls / step | ms / step |",
                        "|---|---:|---:|",
                    ]
                    sections += [
                        f"| `{t['name'][:90]}` | {t['calls']:.1f} | {t['ms']:.3f} |" for t in p["top"]
                    ]
            lines += sections
        else:
            lines += ["| measurement | multimsd | reference | ratio |", "|---|---:|---:|---:|"]
            for name in models:
                setup = setups[name]
                label = f"{setup['model']['pretrained']}{' + LoRA' if setup['lora'] else ''}"
                if setup["model"].get("quantization", "none") != "none":
                    label += " on a 4-bit NF4 base (QLoRA)"
                measured = only & set(setup.get("only", only))
                if "train" in measured:
                    runs: dict[str, list[dict]] = {"ours": [], "trainer": []}
                    for side in alternating(args.repeats):
                        runs[side].append(job(f"train-{side}", setup, f"{name} {side}"))
                    mine, ref = best(runs["ours"]), best(runs["trainer"])
                    results["rows"][f"{name} training"] = runs
                    mfu = ""
                    if gpu and mine is not None:
                        f = flops_per_token(setup)
                        mfu = f"; MFU {100 * f * mine['tokens_per_s'] / (args.peak_tflops * 1e12):.1f} %"
                    shape = f"batch {setup['batch']} × {setup['accum']}"
                    lines.append(
                        f"| {label} training tokens/s, {shape} (best of {args.repeats}{mfu}) | {fmt_tps(mine)} | "
                        f"🤗 Trainer {fmt_tps(ref)} | {ratio_cell(mine, ref)} |"
                    )
                    if mine is not None and ref is not None:
                        same = "equal" if losses_agree(mine["first_loss"], ref["first_loss"]) else "DIFFER"
                        lines.append(
                            f"| {label} first-step loss | {mine['first_loss']:.4f} | {ref['first_loss']:.4f} | "
                            f"{same} |"
                        )
                        what = "peak GPU memory of training" if gpu else "peak RSS of the process"
                        lines.append(
                            f"| {label} {what} (GiB) | {mine['peak_gib']:.1f} | {ref['peak_gib']:.1f} | |"
                        )
                    variants = []
                    if setup["lora"] and "only" not in setup:  # the chat LM's: a step of 32 at once, packing
                        one = {**setup, "batch": setup["batch"] * setup["accum"], "accum": 1}
                        variants.append((f"batch {one['batch']} × 1", one, []))
                        variants.append((" ".join(packing), setup, packing))
                    for what, var_setup, overrides in variants:
                        r = job("train-ours", var_setup, f"{name} {what}", overrides=overrides)
                        results["rows"][f"{name} {what}"] = r
                        ok = None if "error" in r else r
                        cell = f"failed: {r['error']}" if ok is None else fmt_tps(ok)
                        same = ""
                        if ok is not None and mine is not None:
                            agree = losses_agree(ok["first_loss"], mine["first_loss"])
                            same = f" (first-step loss {ok['first_loss']:.4f}, {shape}: {mine['first_loss']:.4f})"
                            same += "" if agree else " DIFFER"
                        lines.append(
                            f"| {label} ours, {what}{same} | {cell} | 🤗 Trainer {shape} {fmt_tps(ref)} | "
                            f"{ratio_cell(ok, ref)} |"
                        )
                if "decode" in measured:
                    dec = {"warm_rows": warm_rows, "max_new": max_new, "examples": 1}
                    if setup["lora"]:  # greedy, the paper's decoding of the chat LM
                        dec.update(rows=rows_n, beams=1)
                    else:  # mBART: beam search
                        dec.update(rows=beam_rows, beams=args.beams)
                    # mBART decodes one language a batch, and a language has fewer rows than a plain batch:
                    # only the largest batch size is tried there
                    sizes = plain_batches if setup["lora"] else [max(plain_batches)]
                    pr = job("decode-plain", setup, f"{name} plain {sizes}", **dec, batch_sizes=sizes)
                    plain = {int(b): {**r, "batch": int(b)} for b, r in pr.get("batches", {}).items()}
                    top = min(plain.values(), key=lambda r: r["seconds"]) if plain else None
                    counts = top["counts"] if top else None
                    variants = [("default eval settings", [])]
                    if setup["lora"]:
                        variants += [
                            (f"eval.backend={b}", [f"eval.backend={b}", *args.decode_overrides])
                            for b in backends
                        ]
                    results["rows"][f"{name} decode plain"] = pr
                    how = "greedy" if dec["beams"] == 1 else f"beam search, {dec['beams']} beams"
                    for what, overrides in variants:
                        r = job("decode-ours", setup, f"{name} decode {what}", **dec, overrides=overrides)
                        results["rows"][f"{name} decode {what}"] = r
                        if "error" in r or top is None:
                            why = r.get("error") or f"plain generate: {pr.get('error')}"
                            lines.append(f"| {label} decoding, ours, {what} | failed: {why} | | |")
                            continue
                        total = sum(counts)
                        ours_tps, plain_tps = total / r["seconds"], total / top["seconds"]
                        r["new_tokens_per_s"], top["new_tokens_per_s"] = ours_tps, plain_tps
                        agree = sum(a == b for a, b in zip(r["texts"], top["texts"]))
                        lines.append(
                            f"| {label} decoding new tokens/s, ours, {what} ({len(counts)} prompts, {total:,} "
                            f"new tokens, {how}; outputs equal to plain: {agree}/{len(counts)}) | {ours_tps:,.0f} | "
                            f"plain `generate` at its best batch ({top['batch']} of "
                            f"{','.join(map(str, sizes))}) {plain_tps:,.0f} | {ours_tps / plain_tps:.2f}× |"
                        )
                    for b, r in plain.items():
                        lines.append(
                            f"| {label} plain `generate`, batch {b} (peak {r['peak_gib']:.1f} GiB) | | "
                            f"{sum(counts) / r['seconds']:,.0f} | |"
                        )
                if "checkpoint" in measured:
                    ck = job("checkpoint", setup, f"{name} checkpoint", examples=1)
                    results["rows"][f"{name} checkpoint"] = ck
                    if "error" in ck:
                        lines.append(f"| {label} one checkpoint | failed: {ck['error']} | | |")
                    else:
                        t, w = ck["trainable"], ck["whole"]
                        lines.append(
                            f"| {label} one checkpoint (MB; save s) | {t['bytes'] / 1e6:,.1f}; "
                            f"{t['seconds']:.1f} s | whole state {w['bytes'] / 1e6:,.1f}; {w['seconds']:.1f} s | "
                            f"{100 * t['bytes'] / t['model_bytes']:.2f} % of the model's weights |"
                        )

    wall = time.perf_counter() - started
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    header = [
        f"## gpu_bench on {device}",
        "",
        f"commit {commit()}, {when}; {versions()}; Python {sys.version.split()[0]}",
        "",
        f"{examples} training examples ({', '.join(languages)}), {warmup} warm-up step(s) left out, "
        f"{args.repeats} fresh process(es) per loop, alternated, best of each side; each row its own process"
        + (
            f"; profile mode (no clock; at least {warmup} + {args.profile_steps} + 2 optimizer steps of examples)"
            if args.profile
            else ""
        ),
        "",
    ]
    footer = ["", f"wall time: {wall:.0f} s ({len(log)} processes)"]
    if skipped:
        footer.append(f"not run (--deadline {args.deadline:g} s): {', '.join(skipped)}")
    table = "\n".join(header + lines + footer)
    print(table)
    if args.out is not None:
        results.update(processes=log, wall_seconds=wall, commit=commit(), versions=versions(), device=device)
        args.out.write_text(table + "\n", encoding="utf-8")
        args.out.with_suffix(".json").write_text(json.dumps(results, indent=1, default=str) + "\n", "utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
