"""Resumable checkpoints of the training loop: what trains, never the frozen base.

A checkpoint (``<output.dir>/checkpoints/step_<N>``) is Accelerate's ``save_state``: the model's weights, the
optimizer, the scheduler, every RNG and the loop counters (:class:`TrainState`: epoch, micro-batches consumed,
best value, history). Resuming from it continues the run step for step (tests/training/test_train_cli.py kills a run
with SIGKILL and checks that the resumed one gives the same step losses).

``save_state`` writes the *whole* state dict of each prepared model. With LoRA that is the frozen base too: for
Llama-3.1-8B 16 GB per checkpoint, of weights that never change and are reloaded from ``model.pretrained``
anyway. :func:`register_trainable_only_hooks` installs Accelerate's save-state pre-hook, which receives the
state dicts about to be written, and keeps only the parameters with ``requires_grad`` (the adapter: 0.3 % of
an 8B model at r=4). Loading is then non-strict for such a model, so :func:`load_checkpoint` first checks that
the file holds exactly the trainable parameters: a checkpoint of another adapter fails loudly instead of
resuming half-initialised. Fully trained models (mBART, the LSTM) are saved and loaded whole, strictly.

Every checkpoint (and the ``best/`` model) ends with :data:`MANIFEST`, written last, before the directory is
renamed into place: the size and SHA-256 of every other file in it. The rename makes a half-written checkpoint
impossible; the manifest catches what happens to it afterwards (a disk that filled up under a copy, a truncated
sync, flipped bytes). :func:`last_checkpoint` returns the newest checkpoint that matches its manifest, with a
warning naming the file of each newer one that does not, so a run resumes from the previous good checkpoint (or
starts afresh) instead of loading garbage or dying on an unpickling error.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from pathlib import Path

from multimsd import interrupts
from multimsd.console import without_log_message
from multimsd.errors import MultimsdError
from multimsd.fsutil import writing

log = logging.getLogger(__name__)

MANIFEST = "multimsd_manifest.json"


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


def _plain(names: set[str]) -> set[str]:
    return {n.removeprefix("module.") for n in names}


def load_checkpoint(accelerator, ckpt: Path, model) -> None:
    """Restore a checkpoint written by :func:`save_checkpoint` into the prepared objects of ``accelerator``."""
    if not has_frozen_parameters(model):
        accelerator.load_state(str(ckpt))
        return
    # Under DDP the names may carry its "module." prefix on one side only: Accelerate saves the model it keeps
    # (wrapped on GPUs, unwrapped on several CPU processes), while `model` is what prepare() returned.
    saved, want = _saved_weight_names(ckpt), _plain(trainable_names(model))
    if saved is not None and not want <= _plain(saved):
        missing = sorted(want - _plain(saved))
        raise MultimsdError(
            f"checkpoint {ckpt} lacks {len(missing)} trainable weight(s) of this model (e.g. {missing[0]}); "
            f"it was written by another model or adapter: use another output.dir"
        )
    # The frozen base is not in the file (it came from model.pretrained), hence non-strict; the check above
    # made sure everything that trains is.
    accelerator.load_state(str(ckpt), strict=False)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.is_file() and p.name != MANIFEST)


def write_manifest(directory: Path) -> None:
    """Record size and SHA-256 of every file in ``directory``; call it when the directory is complete.
    Modes follow the user's umask first (libraries save weights through 0600 temporary files)."""
    from multimsd.fsutil import share_modes

    share_modes(directory)
    entries = {
        p.relative_to(directory).as_posix(): {"size": p.stat().st_size, "sha256": _sha256(p)}
        for p in _files(directory)
    }
    tmp = directory / f".{MANIFEST}.tmp"
    with tmp.open("w", encoding="utf-8") as f:
        json.dump({"files": entries}, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, directory / MANIFEST)


def manifest_problem(directory: Path) -> str | None:
    """Why ``directory`` does not match its manifest (naming the file), or None when every file does."""
    manifest = directory / MANIFEST
    try:
        entries = json.loads(manifest.read_text(encoding="utf-8"))["files"]
        if not isinstance(entries, dict):
            raise TypeError("files is not an object")
    except FileNotFoundError:
        return f"{manifest} is missing (an incomplete copy, or written before multimsd kept manifests)"
    except (OSError, ValueError, KeyError, TypeError) as e:
        return f"{manifest} is unreadable ({type(e).__name__}: {e})"
    for rel, want in sorted(entries.items()):
        path = directory / rel
        if not path.is_file():
            return f"{path} is missing"
        size = path.stat().st_size
        if size != want["size"]:
            return f"{path} has {size} bytes, the manifest says {want['size']} (truncated or overwritten)"
        if _sha256(path) != want["sha256"]:
            return f"{path} does not match its SHA-256 in the manifest (corrupted)"
    extra = [p.relative_to(directory).as_posix() for p in _files(directory)]
    extra = [rel for rel in extra if rel not in entries]
    if extra:
        return f"{directory / extra[0]} is not in the manifest (added after the checkpoint was written)"
    return None


def _step(p: Path) -> int:
    return int(p.name.split("_")[1])


def last_checkpoint(out: Path) -> Path | None:
    """The newest checkpoint under ``out`` that matches its manifest; each newer one that does not is reported
    (one warning naming the bad file) and skipped."""
    for ckpt in sorted((out / "checkpoints").glob("step_*"), key=_step, reverse=True):
        problem = manifest_problem(ckpt)
        if problem is None:
            return ckpt
        log.warning("checkpoint %s is not used: %s", ckpt.name, problem)
    return None


def remove_partial_checkpoints(out: Path) -> None:
    """Remove the temporary directories of checkpoints a killed run (SIGKILL) was writing: never resumed
    from (only whole ``step_*`` directories are), they would only take space."""
    for partial in (out / "checkpoints").glob(".tmp_step_*"):
        shutil.rmtree(partial, ignore_errors=True)


def save_checkpoint(accelerator, out: Path, state: TrainState, keep: int = 2) -> Path:
    """Model (what trains), optimizer, scheduler, RNG states and :class:`TrainState`; the last ``keep`` kept.

    Written under a temporary name and renamed when complete, so a run killed mid-save (SIGKILL, OOM,
    pre-emption) leaves only whole checkpoints for the next run to resume from; an interrupt (Ctrl-C,
    SIGTERM) removes the partial one on its way out. Returns the checkpoint's directory.
    """
    final = out / "checkpoints" / f"step_{state.step:08d}"
    tmp = out / "checkpoints" / f".tmp_step_{state.step:08d}"
    try:
        # A full disk (or a file-size limit, a read-only remount) is one line naming the checkpoint; torch.save
        # does not say why a write failed, so `writing` asks the file system while `tmp` still fills it.
        with writing(final, tmp):
            # Tied weights (mBART's embeddings and head) are saved once, as they should: Accelerate says so
            # every time.
            with without_log_message("accelerate.utils.other", "Removed shared tensor"):
                accelerator.save_state(str(tmp))
            accelerator.wait_for_everyone()  # every process's files (RNG states, shards) are in `tmp`
            if accelerator.is_main_process:
                write_manifest(tmp)  # last: a checkpoint with a manifest was complete when it was written
    except BaseException:
        # Interrupted (Ctrl-C, SIGTERM) or failed while writing (a full disk): the partial checkpoint goes, the
        # last complete one stays the one to resume from.
        if accelerator.is_main_process:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    if accelerator.is_main_process:
        with interrupts.deferred():  # the swap and the pruning are done whole
            if final.exists():
                shutil.rmtree(final)
            tmp.rename(final)
            ckpts = sorted((out / "checkpoints").glob("step_*"), key=_step)
            # Checkpoints past this step are ones this run skipped as corrupted when it resumed (else it would
            # have resumed from them): they go, so that they cannot hold a place of the `keep` good ones.
            stale = [p for p in ckpts if _step(p) > state.step]
            kept = [p for p in ckpts if _step(p) <= state.step]
            for p in stale + kept[:-keep]:
                shutil.rmtree(p, ignore_errors=True)
    accelerator.wait_for_everyone()
    return final
