"""The training stage: ``accelerate launch train.py [overrides]`` -> :func:`run`.

Read top to bottom, :func:`run` is the whole stage (MultiMSD sections 4-5), a :class:`Session` through its seams:

1. :func:`build`: the aligned pairs (align.py output, JSONL/TSV, or the sample's gold pairs), mono or multi;
   the Accelerator; the model: mBART-50 (full fine-tuning) or a chat LM with LoRA / QLoRA (Llama-3.1-8B-Instruct;
   SmolLM2 offline), or the word-level LSTM encoder-decoder of Adduru et al. 2018 trained from scratch with a
   sampled softmax. Everything that differs between them (loading, encoding, forward arguments, loss,
   generation, saving) is the *model kind*'s (``model.kind``, multimsd.training.kinds): this module only calls
   its methods;
2. :func:`prepare_training`: loaders, optimizer and schedule, Accelerate's ``prepare``, the micro-batch loss,
   the resume state;
3. :func:`train` / :func:`train_step`: an explicit Accelerate loop (one optimizer step over ``grad_accum``
   micro-batches, clipping, scheduler) with the novel-token weighted cross-entropy normalised by the label
   tokens of the *whole* accumulated, all-process batch;
4. :func:`end_epoch`: validation cross-entropy and SARI / BLEU on generated outputs (gathered over processes),
   early stopping on the validation loss (or SARI), the best model kept, a resumable checkpoint saved;
5. :func:`finish`: predictions of the best model per language for validation and test, ``all_results.json``
   (:mod:`multimsd.training.results`).

Tests call the seams one by one (tests/training/test_training_seams.py); a whole run only where only a whole run shows
the behaviour. ``mode=icl`` skips training: 0-shot or k-shot prompting of a chat model (paper section 5.2).

Why this module is long: it is the training stage read top to bottom, as nanoGPT's ``train.py`` is: the build,
the preparation, the step with its accumulation in plain sight, the epoch's end and the results; the other
modules hold what a step calls (the data, the loss, the kinds), and a reader follows one run in one file.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import time
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from multimsd import interrupts, launcher, runlock
from multimsd.console import progress_bar, say, working
from multimsd.early_stopping import early_stopping
from multimsd.errors import MultimsdError
from multimsd.fsutil import check_writable_dir, write_text_atomic
from multimsd.training.attention import check_attention
from multimsd.training.checkpoint import (
    TrainState,
    last_checkpoint,
    load_checkpoint,
    register_trainable_only_hooks,
    remove_partial_checkpoints,
    save_checkpoint,
)
from multimsd.training.checks import check_config, check_resume_target, config_fingerprint
from multimsd.training.config import TrainConfig
from multimsd.training.data import (
    Collator,
    PackingCollator,
    eval_dataloader,
    load_pairs,
    select,
    tokenize_dataset,
    train_dataloader,
)
from multimsd.training.forward import MicroBatchLoss, input_tokens, label_count
from multimsd.training.kinds import MODEL_KINDS, ModelKind, get_kind
from multimsd.training.modeling import load_model_and_tokenizer, model_path
from multimsd.training.optimizers import build_optimizer
from multimsd.training.progress import Progress
from multimsd.training.results import (
    cap_per_language,
    evaluate_epoch,
    fmt_metrics,
    load_best,
    save_model,
    write_predictions,
)

log = logging.getLogger(__name__)


def to_train_config(cfg: TrainConfig | DictConfig | dict) -> TrainConfig:
    """Accept a Hydra DictConfig, a plain dict or a TrainConfig; return a validated TrainConfig.

    ``model`` holds the options of its kind: a Hydra config already has them (``model=tiny_llama`` starts from
    ``model=causal``); for a plain dict the kind's options are the schema its keys are merged into (the shared
    settings keep TrainConfig's defaults), so ``{"model": {"kind": "lstm", "lstm": {...}}}`` is checked too."""
    if isinstance(cfg, TrainConfig):
        return cfg
    user = cfg if isinstance(cfg, DictConfig) else OmegaConf.create(cfg)
    base = OmegaConf.structured(TrainConfig)
    typed = isinstance(user.get("model"), DictConfig) and OmegaConf.get_type(user.model) not in (None, dict)
    kind_name = OmegaConf.select(user, "model.kind", default=None) or base.model.kind
    if not typed and kind_name in MODEL_KINDS:
        base.model = MODEL_KINDS[kind_name].settings(OmegaConf.to_object(base.model))
    try:
        return OmegaConf.to_object(OmegaConf.merge(base, user))
    except OmegaConfBaseException as e:  # a key outside the schema, a value of the wrong type
        raise MultimsdError(f"train config: {str(e).strip().splitlines()[0]}") from None


# ---------------------------------------------------------------------------------------------- the stage
def run(cfg: TrainConfig | DictConfig | dict) -> dict:
    """Train (or prompt, ``mode=icl``) and evaluate; return the final metrics (also in all_results.json)."""
    cfg = to_train_config(cfg)
    check_config(cfg)
    # A multi-process launch is one process group or nothing: refused here, before the lock, when Accelerate
    # would not join its processes (GPU configs on a machine without one: multimsd.launcher)
    launcher.check_training_launch()
    progress = Progress(cfg)
    if cfg.mode == "grpo":  # its step and checkpoints are TRL's (multimsd.training.grpo)
        from multimsd.training.grpo import GrpoProgress

        progress = GrpoProgress(cfg)
    with (
        runlock.hold(cfg.output.dir, "train"),
        interrupts.note(progress.where, progress.on_disk, progress.advice),
    ):
        results = _run(cfg, progress)
    log.info("%s", progress.time_spent())  # which part of a slow stage was slow
    return results


@dataclass
class Session:
    """What a training run holds between its seams: :func:`build` makes it, :func:`train_step` and
    :func:`end_epoch` advance it, :func:`finish` writes its results. Tests call the seams one by one."""

    cfg: TrainConfig
    kind: ModelKind
    out: Path
    accelerator: Any
    model: Any
    tokenizer: Any
    rows: dict  # split -> rows, as loaded
    progress: Progress
    packing: bool = False  # data.packing where the kind and the device allow it
    train_dl: Any = None
    val_dl: Any = None
    optimizer: Any = None
    scheduler: Any = None
    losses: MicroBatchLoss | None = None
    state: TrainState = field(default_factory=TrainState)
    results: dict = field(default_factory=dict)

    def eval_rows(self, split: str) -> list[dict]:
        """The rows of ``split`` that are generated and scored: ``data.max_eval_examples`` per language."""
        return cap_per_language(self.rows[split], self.cfg.data.max_eval_examples)


def _run(cfg: TrainConfig, progress: Progress) -> dict:
    if cfg.mode == "grpo":  # TRL's GRPOTrainer from the start system
        from multimsd.training.grpo import check_grpo_resume, run_grpo

        check_grpo_resume(cfg)  # before the model is loaded
        return run_grpo(build(cfg, progress))
    s = build(cfg, progress)
    if cfg.mode == "icl":
        return run_icl(s)
    if cfg.mode == "predict":
        return run_predict(s)
    prepare_training(s)
    train(s)
    return finish(s)


# ---------------------------------------------------------------------------------------------- build
def build(cfg: TrainConfig, progress: Progress) -> Session:
    """Data, the accelerator and the model (LoRA / quantization as configured), seeded."""
    from accelerate import Accelerator
    from accelerate.utils import DataLoaderConfiguration, GradientAccumulationPlugin, set_seed

    out = Path(cfg.output.dir)
    check_writable_dir(out, "output.dir")  # before loading data and model, not at the first write
    rows = select(load_pairs(cfg.data.path, cfg.data), cfg.data, cfg.seed)
    if not rows["train"] and cfg.mode == "train":
        raise MultimsdError("the training split is empty")
    # Build a local model (offline:/tiny:/random:) now, before Accelerator() starts torch.distributed (see
    # model_path): the ranks of one launch then build it once, under a lock, with every file written.
    with working(f"building {cfg.model.pretrained}"):
        model_path(cfg.model)
    accelerator = Accelerator(
        # Accumulation is the loop's own (train_step): Accelerate's would divide every loss by the steps and skip
        # optimizer steps behind the loop's back. A plugin, not the number: the environment cannot set it either.
        gradient_accumulation_plugin=GradientAccumulationPlugin(num_steps=1),
        step_scheduler_with_optimizer=False,  # the loop steps the schedule: once per optimizer step
        log_with=list(cfg.report_to) or None,
        project_dir=str(out),
        # A seedable sampler makes the shuffle a function of (seed, epoch): the same order after a resume (its
        # seed given: torch.initial_seed() at prepare time changes with any torch.manual_seed on the way).
        dataloader_config=DataLoaderConfiguration(use_seedable_sampler=True, data_seed=cfg.seed),
    )
    launcher.check_group(accelerator)  # the launcher's processes are this group, before anything is written
    set_seed(cfg.seed)
    check_resume_target(out, config_fingerprint(cfg), cfg)
    with working(f"loading {cfg.model.pretrained}"):
        model, tokenizer = load_model_and_tokenizer(cfg.model, rows["train"], cfg.data.paraphrase)
    if cfg.start:  # mode=dpo / grpo / predict: the trained system it optimises further or decodes again
        model = load_start(cfg, get_kind(cfg.model.kind), model, accelerator)
    return Session(cfg, get_kind(cfg.model.kind), out, accelerator, model, tokenizer, rows, progress)


def load_start(cfg: TrainConfig, kind: ModelKind, model, accelerator):
    """The best weights of the system ``start`` (its manifest checked) in the freshly built ``model``."""
    best = Path(cfg.start) / "best"
    say(f"mode={cfg.mode}: starting from {best}", accelerator)
    return load_best(cfg, kind, best, accelerator, model)


def build_dataloaders(s: Session) -> dict:
    """The tokenised splits' loaders (packed where the kind and the device allow); returns the first training
    example collated, the probe of :class:`MicroBatchLoss`."""
    from multimsd.paths import cache_dir

    cfg, kind, accelerator = s.cfg, s.kind, s.accelerator
    # tokenised once on the main process first (the others then read the same result)
    with accelerator.main_process_first():
        tok = {
            split: tokenize_dataset(
                s.tokenizer, s.rows[split], cfg.model.kind, cfg.data.max_length, cache_dir() / "tokenized"
            )
            for split in ("train", "validation")
        }
    if len(tok["train"]) == 0:
        raise MultimsdError("no training example fits data.max_length")
    collate = Collator(s.tokenizer.pad_token_id, shift=kind.shift_labels)
    cols = ["input_ids", "labels", "novel"]
    s.packing = check_attention(cfg, kind, s.model, accelerator.device.type)  # GPU: no dense-mask attention
    if cfg.data.packing and not s.packing:
        log.warning("data.packing: model.kind=%s takes padded batches; packing is off", kind.name)
    train_rows = tok["train"].select_columns(cols)
    collate_train = PackingCollator() if s.packing else collate
    s.train_dl = train_dataloader(train_rows, cfg.data, cfg.optim.batch_size, cfg.seed, collate_train)
    if len(tok["validation"]):
        val_rows = tok["validation"].select_columns(cols)
        s.val_dl = eval_dataloader(val_rows, cfg.eval.batch_size, cfg.seed, collate)
    return collate([train_rows[0]])


def build_optimization(s: Session) -> None:
    """The optimizer (optim.optimizer) and the learning-rate schedule over the run's optimizer steps."""
    from transformers import get_scheduler

    cfg = s.cfg
    s.optimizer = build_optimizer(cfg.optim, [p for p in s.model.parameters() if p.requires_grad])
    # The loader is not sharded yet: a process gets ceil(batches / processes) of it (Accelerate's even batches),
    # and takes one optimizer step, and one schedule step, per grad_accum of those.
    batches = math.ceil(len(s.train_dl) / s.accelerator.num_processes)
    total_steps = math.ceil(batches / cfg.optim.grad_accum) * cfg.optim.epochs
    if cfg.optim.max_steps:
        total_steps = min(total_steps, cfg.optim.max_steps)
    if cfg.optim.scheduler == "exponential":  # lr * gamma ** step
        s.scheduler = torch.optim.lr_scheduler.ExponentialLR(s.optimizer, cfg.optim.gamma)
    else:
        s.scheduler = get_scheduler(
            cfg.optim.scheduler,
            s.optimizer,
            num_warmup_steps=int(cfg.optim.warmup_ratio * total_steps),
            num_training_steps=total_steps,
        )


def prepare_training(s: Session) -> None:
    """Loaders, optimizer, Accelerate's ``prepare``, the micro-batch loss, the resume state, the results' head."""
    cfg, accelerator = s.cfg, s.accelerator
    if cfg.mode == "dpo":  # preference pairs, mined with the start model (or read back on a resume)
        from multimsd.training.preference import DpoObjective, build_pair_dataloaders

        probe = build_pair_dataloaders(s)
    else:
        probe = build_dataloaders(s)
    build_optimization(s)
    s.model, s.optimizer, s.train_dl, s.scheduler = accelerator.prepare(
        s.model, s.optimizer, s.train_dl, s.scheduler
    )
    if s.val_dl is not None:
        s.val_dl = accelerator.prepare(s.val_dl)
    # forward + loss of a micro-batch: chunked from the hidden states where it applies (checked once on the first
    # training example), else from the logits (multimsd.training.forward)
    probe = {k: t.to(accelerator.device) for k, t in probe.items()}
    s.losses = s.kind.build_loss(cfg, s.model, s.tokenizer, accelerator, probe)
    if cfg.mode == "dpo":  # the DPO loss over the kind's forward: sequence log-probabilities of each pair
        s.losses = DpoObjective(s.losses, cfg.dpo.beta, cfg.dpo.label_smoothing)
    accelerator.register_for_checkpointing(s.state)
    register_trainable_only_hooks(accelerator)  # a LoRA checkpoint holds the adapter, not the frozen base
    fingerprint = config_fingerprint(cfg)
    if cfg.report_to:
        accelerator.init_trackers("multimsd", config=fingerprint)
    ckpt = last_checkpoint(s.out) if cfg.resume else None
    if ckpt is not None:
        load_checkpoint(accelerator, ckpt, s.model)
        accelerator.print(f"resumed from {ckpt} (epoch {s.state.epoch}, step {s.state.step})")
    elif accelerator.is_main_process:
        s.out.mkdir(parents=True, exist_ok=True)
        write_text_atomic(s.out / "train_config.json", json.dumps(fingerprint, indent=2) + "\n")
    if accelerator.is_main_process:
        remove_partial_checkpoints(s.out)  # what a run killed (SIGKILL) while saving one left
    # how the steps were computed (loss.chunked / data.packing apply where they can, see multimsd.training.forward)
    s.results = {
        **s.results,  # mode=dpo: what the pair mining found
        "resumed_from": None if ckpt is None else str(ckpt),
        "chunked_loss": s.losses.chunked,
        "packing": s.packing,
        # the base's storage (QLoRA: 4bit / 8bit; multimsd.training.quantization); none for other kinds
        "quantization": getattr(s.kind.settings(cfg.model), "quantization", "none"),
    }
    if cfg.eval.before_training and ckpt is None:
        s.results["before"] = evaluate(s)
        accelerator.print(f"before training: {fmt_metrics(s.results['before'])}")


# ---------------------------------------------------------------------------------------------- the loop
def train(s: Session) -> None:
    """Epochs of optimizer steps, each ended by :func:`end_epoch`, until done, stopped early or out of epochs."""
    cfg, state, accelerator = s.cfg, s.state, s.accelerator
    s.model.train()
    s.progress.start(state, len(s.train_dl), cfg)  # this process's optimizer steps: progress.total
    shown = accelerator.is_local_main_process  # a bar on a terminal, else a line per epoch (multimsd.console)
    bar = progress_bar(
        total=s.progress.total, initial=state.step, desc="training", unit="step", disable=not shown
    )
    while not state.done and state.epoch < cfg.optim.epochs:
        s.train_dl.set_epoch(state.epoch)
        dl = (
            accelerator.skip_first_batches(s.train_dl, state.batches_in_epoch)
            if state.batches_in_epoch
            else s.train_dl
        )
        it = iter(dl)
        while True:
            # One optimizer step = grad_accum micro-batches, fetched first (collated, on the device).
            t_fetch = time.perf_counter()
            window = list(islice(it, cfg.optim.grad_accum))
            if not window:
                break
            t0 = time.perf_counter()
            record = train_step(s, window)
            state.history.append({**record, "data_seconds": t0 - t_fetch})
            accelerator.log(
                {"train/loss": record["loss"], "lr": s.scheduler.get_last_lr()[0]}, step=state.step
            )
            bar.update(1)
            bar.set_postfix(loss=f"{record['loss']:.4f}")
            if cfg.checkpoint_every and state.step % cfg.checkpoint_every == 0:
                s.progress.save(save_checkpoint, accelerator, s.out, state)
            if cfg.optim.max_steps and state.step >= cfg.optim.max_steps:
                state.done = True
                break
        end_epoch(s)
    bar.close()


def train_step(s: Session, window: list[dict]) -> dict:
    """One optimizer step over the micro-batches of ``window`` (collated, on the device); its history record."""
    kind, accelerator, state, model = s.kind, s.accelerator, s.state, s.model
    # The step's clock starts with its batches in hand, as a benchmark times the 🤗 Trainer's steps.
    t0 = time.perf_counter()
    # Count the label tokens over all processes first, so every micro-batch loss is normalised by the same global
    # number. The collator's target_index gives the count on the host: nothing inside the step waits for the
    # device until its loss is read at the end.
    n_local = sum(s.losses.items(b) for b in window)
    if accelerator.num_processes > 1:
        n_global = accelerator.gather(torch.tensor([n_local], device=accelerator.device)).sum().clamp(min=1)
    else:
        n_global = max(n_local, 1)
    # Gradient accumulation, in plain sight (nanoGPT's step; the Accelerator accumulates nothing itself: build):
    # - each micro-batch's loss is the sum of its weighted token losses over n_global, the label tokens of the
    #   whole step on every process, so the micro-batches' gradients add up to one big batch's;
    # - DDP averages the processes' gradients, and n_global already counts every process: × processes undoes it
    #   (transformers' Trainer does the same with average_tokens_across_devices);
    # - gradients are all-reduced at the last micro-batch only (no_sync before it), then clipped once;
    # - one optimizer step and one schedule step after the loop. Under fp16 the grad scaler skips a step whose
    #   gradients overflowed: the schedule waits with it.
    # DeepSpeed's engine accumulates, clips and steps by itself (deepspeed_steps).
    deepspeed = deepspeed_steps(accelerator, s.cfg)
    scale = accelerator.num_processes * (deepspeed or 1)
    step_loss = torch.zeros((), device=accelerator.device)
    # this process's non-pad input + label tokens of the step (throughput, benchmarks), on the device
    tokens = torch.zeros((), dtype=torch.long, device=accelerator.device)
    for micro, batch in enumerate(window):
        last = micro == len(window) - 1
        if deepspeed:  # its engine steps in the backward of the micro-batch where Accelerate syncs
            accelerator.sync_gradients = last
        with contextlib.nullcontext() if last else accelerator.no_sync(model):
            out = s.losses.forward(model, batch)
            loss = s.losses.objective(out, batch, step=state.step, micro_batch=micro) / n_global
            accelerator.backward(loss * scale)
        step_loss += loss.detach()
        state.batches_in_epoch += 1
        tokens += input_tokens(batch) + label_count(kind, batch)
    if s.cfg.optim.max_grad_norm:
        accelerator.clip_grad_norm_(model.parameters(), s.cfg.optim.max_grad_norm)
    s.optimizer.step()
    if not s.optimizer.step_was_skipped:
        s.scheduler.step()
    s.optimizer.zero_grad()
    # One read of the device per step (loss and token count together): it waits for the step's last kernel, so
    # the step's time is its compute and not just its kernel launches.
    loss_sum = accelerator.reduce(step_loss, reduction="sum")
    loss_value, tokens = torch.stack([loss_sum.double(), tokens.double()]).tolist()
    state.train_tokens += int(tokens)
    state.step += 1
    seconds = time.perf_counter() - t0
    state.train_seconds += seconds
    return {
        "step": state.step,
        "epoch": state.epoch,
        "loss": loss_value,
        "seconds": seconds,
        "tokens": int(tokens),
        **s.losses.step_metrics(),  # mode=dpo: the implicit rewards of the step's pairs
    }


def deepspeed_steps(accelerator, cfg: TrainConfig) -> int | None:
    """Under DeepSpeed, whose engine accumulates gradients itself (its ``backward`` divides each loss by its
    ``gradient_accumulation_steps`` and, at the step's last micro-batch, clips, steps and zeroes: the loop's own
    calls are no-ops there), those steps, which must be ``optim.grad_accum``; None elsewhere."""
    from accelerate.utils import DistributedType

    if accelerator.distributed_type != DistributedType.DEEPSPEED:
        return None
    if accelerator.gradient_accumulation_steps != cfg.optim.grad_accum:
        raise MultimsdError(
            f"optim.grad_accum={cfg.optim.grad_accum}, but the DeepSpeed config accumulates "
            f"{accelerator.gradient_accumulation_steps} micro-batches: set them equal"
        )
    return accelerator.gradient_accumulation_steps


def evaluate(s: Session) -> dict:
    """Validation cross-entropy and, with ``eval.generate``, SARI / BLEU of generated outputs (all processes)."""
    rows = s.eval_rows("validation")
    return evaluate_epoch(s.cfg, s.model, s.tokenizer, s.val_dl, rows, s.accelerator, s.losses)


def end_epoch(s: Session) -> None:
    """Evaluate, keep the best model, stop early when it no longer improves, checkpoint."""
    cfg, state, accelerator = s.cfg, s.state, s.accelerator
    s.progress.phase = "evaluation"
    metrics = evaluate(s)
    if accelerator.num_processes > 1:  # generation metrics exist on the main process: share them
        from accelerate.utils import broadcast_object_list

        metrics = broadcast_object_list([metrics])[0]
    say(
        f"epoch {state.epoch}: {fmt_metrics(metrics)}", accelerator
    )  # on a line of its own, not after the bar
    accelerator.log(
        {f"val/{k}": v for k, v in metrics.items() if isinstance(v, int | float)}, step=state.step
    )
    sari = cfg.eval.early_stopping_metric == "sari"
    verdict = early_stopping(
        metrics.get("sari" if sari else "val_loss"),
        state.best,
        state.bad_epochs,
        patience=cfg.eval.patience,
        higher_is_better=sari,
    )
    state.best, state.bad_epochs = verdict.best, verdict.bad_epochs
    state.history.append({"epoch": state.epoch, **metrics, "best": verdict.better})
    if verdict.better:
        save_model(accelerator, s.kind, s.model, s.tokenizer, s.out / "best")
    elif verdict.stop:
        say(f"early stopping: no improvement for {state.bad_epochs} epoch(s)", accelerator)
        state.done = True
    state.epoch += 1
    state.batches_in_epoch = 0
    s.progress.save(save_checkpoint, accelerator, s.out, state)


# ---------------------------------------------------------------------------------------------- results
def finish(s: Session) -> dict:
    """The best model's predictions for validation and test, ``all_results.json``, the Hub push if asked."""
    cfg, state, accelerator, results = s.cfg, s.state, s.accelerator, s.results
    s.progress.phase = "predictions"
    accelerator.wait_for_everyone()
    results["history"] = state.history
    tokens = int(
        accelerator.reduce(torch.tensor(state.train_tokens, device=accelerator.device), reduction="sum")
    )
    results["train_tokens"] = tokens
    results["num_processes"] = accelerator.num_processes  # data-parallel processes (GPUs) that trained
    results["train_seconds"] = state.train_seconds
    results["train_tokens_per_second"] = tokens / state.train_seconds if state.train_seconds else 0.0
    results["after"] = next((h for h in reversed(state.history) if h.get("best")), {})
    best = load_best(cfg, s.kind, s.out / "best", accelerator, s.model)
    splits = {"validation": s.eval_rows("validation"), "test": s.eval_rows("test")}
    write_predictions(cfg, best, s.tokenizer, splits, accelerator, s.out, results)
    if cfg.hub.push:
        from multimsd.training.hub import push_model

        push_model(cfg, s.out / "best", results)
    accelerator.end_training()
    return results


def run_predict(s: Session) -> dict:
    """The start system's model decoded again with this run's decoding settings (``eval.*``, e.g.
    ``eval.number_guard=true``): the validation and test predictions, no training."""
    model = s.accelerator.prepare(s.model)
    results: dict = {"mode": "predict", "start": s.cfg.start}
    splits = {"validation": s.eval_rows("validation"), "test": s.eval_rows("test")}
    write_predictions(s.cfg, model, s.tokenizer, splits, s.accelerator, s.out, results)
    return results


def run_icl(s: Session) -> dict:
    """k-shot prompting (no training): shots are seeded random *validation* pairs of the same language."""
    model = s.accelerator.prepare(s.model)
    results: dict = {"mode": "icl", "shots": s.cfg.icl.shots}
    # Shots come from validation, so score on test only (a shot could otherwise be its own answer).
    test = {"test": s.eval_rows("test")}
    write_predictions(
        s.cfg, model, s.tokenizer, test, s.accelerator, s.out, results, shot_pool=s.rows["validation"]
    )
    return results
