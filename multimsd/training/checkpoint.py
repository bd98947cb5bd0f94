"""Resumable checkpoints of the training loop: what trains, never the frozen base.

A checkpoint (``<output_dir>/checkpoints/step_<N>``) is Accelerate's ``save_state``: the model's weights, the
optimizer, the scheduler, every RNG and the loop counters (:class:`TrainState`: epoch, micro-batches consumed,
best value, history). Resuming from it continues the run step for step (tests/test_train_cli.py kills a run
with SIGKILL and checks that the resumed one gives the same step losses).

``save_state`` writes the *whole* state dict of each prepared model. With LoRA that is the frozen base too: for
Llama-3.1-8B 16 GB per checkpoint, of weights that never change and are reloaded from ``model.pretrained``
anyway. :func:`register_trainable_only_hooks` installs Accelerate's save-state pre-hook, which receives the
state dicts about to be written, and keeps only the parameters with ``requires_grad`` (the adapter: 0.3 % of
an 8B model at r=4). Loading is then non-strict for such a model, so :func:`load_checkpoint` first checks that
the file holds exactly the trainable parameters: a checkpoint of another adapter fails loudly instead of
resuming half-initialised. Fully trained models (mBART, the LSTM) are saved and loaded whole, strictly.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from multimsd.errors import MultimsdError


class TrainState:
    """Loop counters saved with every checkpoint (Accelerate's register_for_checkpointing protocol)."""

    def __init__(self) -> None:
        self.epoch = 0  # epoch in progress
        self.step = 0  # optimizer steps done
        self.batches_in_epoch = 0  # micro-batches of `epoch` already consumed
        self.best: float | None = None
        self.bad_epochs = 0
        self.history: list[dict] = []
        self.done = False
        self.train_seconds = 0.0  # time in forward/backward/step only (not evaluation or checkpoints)
        self.train_tokens = 0  # non-pad input tokens + label tokens seen by this process

    def state_dict(self) -> dict:
        return dict(vars(self))

    def load_state_dict(self, d: dict) -> None:
        vars(self).update(d)


def trainable_names(model) -> set[str]:
    """Names (as in ``model.state_dict()``) of the parameters that train."""
    return {n for n, p in model.named_parameters() if p.requires_grad}


def has_frozen_parameters(model) -> bool:
    return any(not p.requires_grad for p in model.parameters())


def register_trainable_only_hooks(accelerator) -> None:
    """Make ``accelerator.save_state`` write only the trainable parameters of models that have frozen ones."""

    def keep_trainable(models: list, weights: list, output_dir: str) -> None:
        # `weights[i]` is the state dict about to be written for `models[i]` (FSDP / DeepSpeed write their own
        # shards and pass no state dicts here, so there is nothing to filter for them).
        for i, model in enumerate(models[: len(weights)]):
            if has_frozen_parameters(model):
                keep = trainable_names(model)
                weights[i] = {k: v for k, v in weights[i].items() if k in keep}

    accelerator.register_save_state_pre_hook(keep_trainable)


def _saved_weight_names(ckpt: Path) -> set[str] | None:
    path = ckpt / "model.safetensors"
    if not path.exists():
        return None  # a pickled (.bin) checkpoint or a sharded one: loaded as Accelerate does
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        return set(f.keys())


def load_checkpoint(accelerator, ckpt: Path, model) -> None:
    """Restore a checkpoint written by :func:`save_checkpoint` into the prepared objects of ``accelerator``."""
    if not has_frozen_parameters(model):
        accelerator.load_state(str(ckpt))
        return
    saved, want = _saved_weight_names(ckpt), trainable_names(model)
    if saved is not None and not want <= saved:
        missing = sorted(want - saved)
        raise MultimsdError(
            f"checkpoint {ckpt} lacks {len(missing)} trainable weight(s) of this model (e.g. {missing[0]}); "
            f"it was written by another model or adapter: use another output_dir"
        )
    # The frozen base is not in the file (it came from model.pretrained), hence non-strict; the check above
    # made sure everything that trains is.
    accelerator.load_state(str(ckpt), strict=False)


def last_checkpoint(out: Path) -> Path | None:
    ckpts = sorted((out / "checkpoints").glob("step_*"), key=lambda p: int(p.name.split("_")[1]))
    return ckpts[-1] if ckpts else None


def save_checkpoint(accelerator, out: Path, state: TrainState, keep: int = 2) -> None:
    """Model (what trains), optimizer, scheduler, RNG states and :class:`TrainState`; the last ``keep`` kept.

    Written under a temporary name and renamed when complete, so a run killed mid-save (SIGKILL, OOM,
    pre-emption) leaves only whole checkpoints for the next run to resume from.
    """
    final = out / "checkpoints" / f"step_{state.step:08d}"
    tmp = out / "checkpoints" / f".tmp_step_{state.step:08d}"
    accelerator.save_state(str(tmp))
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        if final.exists():
            shutil.rmtree(final)
        tmp.rename(final)
        for p in sorted((out / "checkpoints").glob("step_*"))[:-keep]:
            shutil.rmtree(p, ignore_errors=True)
    accelerator.wait_for_everyone()
