"""``mode=grpo``: group relative policy optimisation (GRPO; Shao et al. 2024) from a trained system, through
TRL's ``GRPOTrainer`` (issue #48 item 2). Causal chat models (Llama, SmolLM2) with a LoRA or QLoRA adapter; TRL
is the ``rl`` extra (``pip install 'multimsd[rl]'``). The weighted loss's θ stays the fine-tuning stage's lever:
this is a stage after it. Read top to bottom, :func:`run_grpo` is the stage:

1. start-up (:func:`multimsd.training.checks.check_grpo`, before anything is loaded): TRL there
   (:func:`check_trl`, a look at the installed packages, no import), a causal kind with LoRA, ``grpo.beta > 0``
   and the other settings; then :func:`check_grpo_resume`: checkpoints of another configuration are never
   resumed;
2. :func:`multimsd.training.loop.build`: data, the Accelerator and the model as every run builds them, the
   start system's best adapter (``start``) loaded into the LoRA model: the policy begins as the system it
   improves on;
3. :func:`prompts_dataset`: the training sources (``grpo.max_sources`` of them, a seeded draw) as TRL's
   conversational prompts, the project's instruction around each source
   (:func:`multimsd.training.prompts.chat_messages`, the prompt the model was fine-tuned on), with the
   ``source``, ``references`` and ``lang`` columns the reward reads;
4. :func:`reward_function`: the reward spec ``grpo.reward`` (:mod:`multimsd.metrics.rewards`: terms added,
   gates multiplied) as TRL's reward function; each component's mean is logged every step too
   (``rewards/<name>/mean``), so that the curves of SARI and of each gate are in the history;
5. :func:`build_trainer`: the ``GRPOConfig`` from our settings (:func:`grpo_args`) and the trainer. Given a
   PEFT model and ``beta > 0``, TRL 1.16 copies the model's adapter (here: the start's) into a second adapter,
   ``ref``, kept frozen, and computes the reference log-probabilities of the KL with that adapter active: the
   KL is to the *start system*, not to the bare base model (checked here: an error if TRL did otherwise);
6. ``trainer.train``: sampling ``grpo.num_generations`` completions per prompt, rewards, group-relative
   advantages, the clipped policy loss + ``beta`` × KL; TRL's Trainer does the Accelerate multi-process
   launch, gradient accumulation and checkpoints (``output.dir/grpo_checkpoints/checkpoint-N``, every
   ``checkpoint_every`` steps or each epoch). The same command resumes from the last *complete* checkpoint
   (its ``trainer_state.json``, written last, reads back); what a kill left half-written is removed first;
7. :func:`finish`: the trained adapter as ``output.dir/best`` (:func:`multimsd.training.results.save_model`,
   the frozen ``ref`` copy dropped: ``multimsd simplify`` / ``export`` load it like any system's), greedy
   predictions for validation and test and ``all_results.json`` (:func:`~multimsd.training.results.
   write_predictions`, as every system), with ``mode: grpo`` and TRL's per-step log as ``history``.

Importing this module imports neither TRL nor transformers: ``multimsd.training`` works without the extra.
"""

from __future__ import annotations

import json
import logging
import math
import shutil
from dataclasses import asdict
from pathlib import Path

from multimsd.console import bars_shown, progress_bar, say
from multimsd.errors import MultimsdError
from multimsd.fsutil import write_text_atomic
from multimsd.training import checks
from multimsd.training.checkpoint import TrainState
from multimsd.training.progress import Progress

log = logging.getLogger(__name__)

CHECKPOINTS = "grpo_checkpoints"  # in output.dir: TRL's Trainer's checkpoint-N directories
STATE_FILE = "trainer_state.json"  # the Trainer writes it last into a checkpoint: its presence marks it whole


# ---------------------------------------------------------------------------------------------- 1. start-up
# check_trl (TRL installed, at the extra's floor: a look at the installed packages, no import) is in
# multimsd.training.checks, with the stage's other start-up checks.


def grpo_fingerprint(cfg) -> dict:
    """What a GRPO checkpoint must agree on to be resumed: the training run's fingerprint (model, data,
    optimisation, seed, start) and the GRPO settings, the completions' length included."""

    grpo = {**asdict(cfg.grpo), "max_completion_length": cfg.eval.max_new_tokens}
    return json.loads(json.dumps({**checks.config_fingerprint(cfg), "grpo": grpo}))


def complete_checkpoints(folder: Path) -> tuple[list[Path], list[Path]]:
    """(the whole checkpoints, oldest first; the rest): a checkpoint is whole when its trainer_state.json,
    the Trainer's last file, reads back."""
    whole, partial = [], []
    found = [p for p in folder.glob("checkpoint-*") if p.is_dir() and p.name.split("-")[-1].isdigit()]
    for p in sorted(found, key=lambda p: int(p.name.split("-")[-1])):
        try:
            json.loads((p / STATE_FILE).read_text(encoding="utf-8"))
            whole.append(p)
        except (OSError, ValueError):
            partial.append(p)
    return whole, partial


def check_grpo_resume(cfg) -> None:
    """Before the model is loaded: output.dir's GRPO checkpoints are this configuration's (resume) or there
    are none; a directory of another stage's checkpoints is not reused."""
    from multimsd.training.checkpoint import last_checkpoint

    out = Path(cfg.output.dir)
    if last_checkpoint(out) is not None:
        raise MultimsdError(
            f"{out} holds the checkpoints of another training stage; choose another output.dir"
        )
    whole, _ = complete_checkpoints(out / CHECKPOINTS)
    if not whole:
        return
    if not cfg.resume:
        raise MultimsdError(
            f"{out} already holds GRPO checkpoints; pass resume=true to continue, or another output.dir"
        )
    saved = out / "train_config.json"
    if saved.is_file():
        old, new = json.loads(saved.read_text(encoding="utf-8")), grpo_fingerprint(cfg)
        defaults = grpo_fingerprint(checks.kind_defaults(cfg))
        if diff := sorted(k for k in new if not checks.same_setting(old.get(k), new[k], defaults.get(k))):
            raise MultimsdError(
                f"{out} holds GRPO checkpoints of a different configuration (differs in: {', '.join(diff)}); "
                "choose another output.dir"
            )


class GrpoProgress(Progress):
    """The interrupt line of a GRPO run (:mod:`multimsd.training.progress`): its step follows TRL's
    (:func:`progress_callback`), its last checkpoint is the Trainer's last whole one."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.state = TrainState()

    def last_checkpoint(self) -> Path | None:
        whole, _ = complete_checkpoints(self.out / CHECKPOINTS)
        return whole[-1] if whole else None


def progress_callback(progress: Progress):
    """A TrainerCallback keeping ``progress`` at TRL's step and phase (step, saving a checkpoint)."""
    from transformers import TrainerCallback

    class FollowSteps(TrainerCallback):
        def on_train_begin(self, args, state, control, **kw):
            progress.total, progress.phase = state.max_steps, "step"
            if progress.state is not None:
                progress.state.step = state.global_step

        def on_step_end(self, args, state, control, **kw):
            if progress.state is not None:
                progress.state.step = state.global_step
            progress.phase = "checkpoint" if control.should_save else "step"

        def on_save(self, args, state, control, **kw):
            progress.phase = "step"

    return FollowSteps()


def step_lines():
    """Off a terminal, a TrainerCallback giving GRPO's steps the lines of every loop of ours
    (:func:`multimsd.console.progress_bar`): a status line every 20 s (steps done of all, rate, time left, the
    last step's reward and KL) and one at the end, on the local main process."""
    from transformers import TrainerCallback

    class StepLines(TrainerCallback):
        bar = None

        def on_train_begin(self, args, state, control, **kw):
            self.bar = progress_bar(
                total=state.max_steps,
                initial=state.global_step,
                desc="grpo",
                unit="step",
                disable=not state.is_local_process_zero,
            )

        def on_log(self, args, state, control, logs=None, **kw):
            if self.bar is not None and logs and "reward" in logs:
                self.bar.set_postfix(
                    reward=f"{float(logs['reward']):.3f}", kl=f"{float(logs.get('kl', 0)):.4f}"
                )

        def on_step_end(self, args, state, control, **kw):
            if self.bar is not None:
                self.bar.update(1)

        def on_train_end(self, args, state, control, **kw):
            if self.bar is not None:
                self.bar.close()

    return StepLines()


# ---------------------------------------------------------------------------------------------- 3. prompts
def prompts_dataset(rows: list[dict]):
    """TRL's conversational prompts (the instruction and the source as the user turn, as the model was
    fine-tuned) with the columns the reward reads: ``source``, ``references`` (the row's simplification),
    ``lang``."""
    from datasets import Dataset

    from multimsd.training.prompts import chat_messages

    return Dataset.from_list(
        [
            {
                "prompt": chat_messages(r["complex"], r["lang"]),
                "source": r["complex"],
                "references": [r["simple"]],
                "lang": r["lang"],
            }
            for r in rows
        ]
    )


# ---------------------------------------------------------------------------------------------- 4. the reward
def reward_function(spec: dict[str, float]):
    """The combined reward of ``spec`` as TRL calls a reward function (one score per completion, the columns
    per completion); each component's values are handed to TRL's ``log_metric`` one completion at a time, so
    that TRL's per-step mean over every process's completions is their mean (``rewards/<name>/mean``)."""
    from multimsd.metrics.rewards import check_spec, reward_components

    spec = check_spec(spec)

    def reward(prompts, completions, source, references, lang, log_metric=None, **_) -> list[float]:
        outputs = [c[-1]["content"] if isinstance(c, list) else str(c) for c in completions]
        parts: dict[str, list[float]] = {name: [0.0] * len(outputs) for name in [*spec, "reward"]}
        for g in dict.fromkeys(lang):  # one call per language: the checks and tokenisers are per language
            idx = [k for k, x in enumerate(lang) if x == g]
            got = reward_components(
                spec, [source[k] for k in idx], [outputs[k] for k in idx], [references[k] for k in idx], g
            )
            for name, values in got.items():
                for k, v in zip(idx, values):
                    parts[name][k] = v
        if log_metric is not None:
            for name in spec:
                for v in parts[name]:
                    log_metric(f"rewards/{name}/mean", v)
        return parts["reward"]

    reward.__name__ = "reward"  # TRL logs the combined reward as rewards/reward/mean (and reward)
    return reward


# ---------------------------------------------------------------------------------------------- 5. the trainer
def grpo_args(cfg, accelerator, folder: Path):
    """TRL's ``GRPOConfig`` from the run's settings (optim.*, eval.max_new_tokens, grpo.*, checkpoint_every)."""
    import dataclasses

    from trl import GRPOConfig

    from multimsd.training.quantization import uses_gradient_checkpointing

    g, o = cfg.grpo, cfg.optim
    # completions per device and micro-batch: optim.batch_size rounded up to whole groups, so that every
    # generation batch holds whole groups of num_generations whatever the process count
    per_device = math.ceil(o.batch_size / g.num_generations) * g.num_generations
    optimizer = {"adamw": "adamw_torch", "sgd": "sgd", "paged_adamw_8bit": "paged_adamw_8bit"}[o.optimizer]
    every = {"save_strategy": "steps", "save_steps": cfg.checkpoint_every} if cfg.checkpoint_every else {}
    # TRL turns activation checkpointing on by default; here it is the model's setting (on for QLoRA). Its
    # name since transformers 5 (the old one warns), the old one before.
    names = {f.name for f in dataclasses.fields(GRPOConfig)}
    checkpointing = (
        "activation_checkpointing" if "activation_checkpointing" in names else "gradient_checkpointing"
    )
    return GRPOConfig(
        output_dir=str(folder),
        learning_rate=o.lr,
        weight_decay=o.weight_decay,
        max_grad_norm=o.max_grad_norm,
        optim=optimizer,
        lr_scheduler_type=o.scheduler,
        warmup_steps=o.warmup_ratio,  # a float below 1: a share of the steps, as optim.warmup_ratio
        per_device_train_batch_size=per_device,
        gradient_accumulation_steps=o.grad_accum,
        num_train_epochs=o.epochs,
        max_steps=o.max_steps or -1,
        num_generations=g.num_generations,
        max_completion_length=cfg.eval.max_new_tokens,
        temperature=g.temperature,
        top_p=g.top_p,
        beta=g.beta,
        # The same network samples and is updated: with dropout the ratio to the sampling policy and the KL
        # would carry dropout's noise (LoRA's dropout included).
        disable_dropout=True,
        **{checkpointing: uses_gradient_checkpointing(cfg.model)},
        shuffle_dataset=cfg.data.shuffle,
        seed=cfg.seed,
        data_seed=cfg.seed,
        dataloader_num_workers=cfg.data.num_workers,
        dataloader_pin_memory=accelerator.device.type == "cuda",
        ddp_find_unused_parameters=False,  # every trainable (LoRA) parameter takes part in each forward
        logging_strategy="steps",
        logging_steps=1,  # every step in the history: each reward's curve
        # TRL's bar on a terminal; off one, our lines (step_lines) instead of \r redraws and a dict a step
        disable_tqdm=not bars_shown(),
        save_strategy=every.get("save_strategy", "epoch"),
        save_steps=every.get("save_steps", 500),
        save_total_limit=2,  # as the training loop keeps 2
        report_to=list(cfg.report_to) or "none",
        # mixed precision as the launch set it (accelerate launch --mixed_precision): none on a CPU
        bf16=accelerator.mixed_precision == "bf16",
        fp16=accelerator.mixed_precision == "fp16",
    )


def build_trainer(s, rows: list[dict], folder: Path):
    """TRL's GRPOTrainer over the session's LoRA model (its adapter the start's), checked to keep a frozen
    copy of that adapter as the KL's reference."""
    from trl import GRPOTrainer

    trainer = GRPOTrainer(
        model=s.model,
        reward_funcs=[reward_function(s.cfg.grpo.reward)],
        args=grpo_args(s.cfg, s.accelerator, folder),
        train_dataset=prompts_dataset(rows),
        processing_class=s.tokenizer,
        callbacks=[progress_callback(s.progress)],
    )
    if not bars_shown():
        from transformers.trainer_callback import PrinterCallback

        trainer.remove_callback(PrinterCallback)  # it prints each step's whole dict of logs
        trainer.add_callback(step_lines())
    model = trainer.accelerator.unwrap_model(trainer.model)
    ref = [p for n, p in model.named_parameters() if ".ref." in n]
    # TRL falls back to the base model with adapters disabled in a few setups: the KL would then be to the
    # untrained base, not to the start system. Refused rather than trained silently against the wrong model.
    if "ref" not in getattr(model, "peft_config", {}) or not ref or any(p.requires_grad for p in ref):
        raise MultimsdError(
            "mode=grpo: TRL kept no frozen copy of the start adapter, so its KL would be to the bare base model; "
            f"check the trl (>={checks.TRL_MIN}) and peft versions"
        )
    return trainer


# ---------------------------------------------------------------------------------------------- the stage
def resume_point(s, folder: Path) -> Path | None:
    """The last whole checkpoint to resume from (``resume=true``), after the main process removed what a
    killed run left half-written; one line says which, or that the stage starts."""
    accelerator = s.accelerator
    whole, partial = complete_checkpoints(folder)
    if accelerator.is_main_process:
        for p in partial:
            log.warning("grpo: removing %s (a checkpoint a killed run left half-written)", p)
            shutil.rmtree(p, ignore_errors=True)
    accelerator.wait_for_everyone()
    ckpt = whole[-1] if whole and s.cfg.resume else None
    if ckpt is not None:
        say(f"mode=grpo: resuming from {ckpt}", accelerator)
    else:
        say(f"mode=grpo: starting the stage (checkpoints in {folder})", accelerator)
    return ckpt


def run_grpo(s) -> dict:
    """GRPO from the session's start model (module docstring, steps 3-7); the final metrics."""
    from multimsd.training.mining import subset

    cfg, accelerator = s.cfg, s.accelerator
    rows = subset(s.rows["train"], cfg.grpo.max_sources, cfg.seed)
    if not rows:
        raise MultimsdError("the training split is empty")
    folder = s.out / CHECKPOINTS
    ckpt = resume_point(s, folder)
    if accelerator.is_main_process and ckpt is None:
        s.out.mkdir(parents=True, exist_ok=True)
        write_text_atomic(s.out / "train_config.json", json.dumps(grpo_fingerprint(cfg), indent=2) + "\n")
    trainer = build_trainer(s, rows, folder)
    trainer.train(resume_from_checkpoint=str(ckpt) if ckpt else None)
    s.results = {
        **s.results,
        "mode": "grpo",
        "start": cfg.start,
        "kl_reference": "start",  # the start system's adapter, frozen (step 5)
        "resumed_from": None if ckpt is None else str(ckpt),
        "train_sources": len(rows),
    }
    return finish(s, trainer)


def finish(s, trainer) -> dict:
    """The trained adapter as best/, predictions and all_results.json with TRL's per-step history."""
    from multimsd.training.results import save_model, write_predictions

    cfg, accelerator, results = s.cfg, s.accelerator, s.results
    s.progress.phase = "predictions"
    model = trainer.accelerator.unwrap_model(trainer.model)
    if "ref" in model.peft_config:  # the frozen copy of the start adapter: served the KL, not the system
        model.delete_adapter("ref")
    model.set_adapter("default")
    save_model(accelerator, s.kind, model, s.tokenizer, s.out / "best")
    logged = trainer.state.log_history
    results["history"] = [h for h in logged if "train_runtime" not in h]  # per step: loss, kl, rewards/…
    summary = next((h for h in reversed(logged) if "train_runtime" in h), {})
    results["steps"] = trainer.state.global_step
    results["train_seconds"] = summary.get("train_runtime", 0.0)  # this session's (a resumed run: since then)
    results["num_processes"] = accelerator.num_processes
    splits = {"validation": s.eval_rows("validation"), "test": s.eval_rows("test")}
    write_predictions(cfg, model, s.tokenizer, splits, accelerator, s.out, results)
    return results
