"""Where a training run is, for the one line an interrupt (Ctrl-C, SIGTERM) prints (:mod:`multimsd.interrupts`).

:func:`multimsd.training.loop.run` keeps a :class:`Progress` up to date (the phase, the step, the last complete
checkpoint) and hands its methods to :func:`multimsd.interrupts.note`; they are read only when an interrupt
passes: ``interrupted at step 31/38: the last complete checkpoint is …/step_00000030; run the same command to
resume``. The step in flight is dropped; the same command goes on from that checkpoint.
"""

from __future__ import annotations

import math
from pathlib import Path

from multimsd.training.checkpoint import MANIFEST, TrainState
from multimsd.training.config import TrainConfig


class Progress:
    """The phase of a run (start, step, checkpoint, evaluation, predictions; icl), its step and its last
    complete checkpoint, described by :meth:`where`, :meth:`on_disk` and :meth:`advice`."""

    def __init__(self, cfg: TrainConfig):
        self.out, self.resume, self.every = Path(cfg.output.dir), cfg.resume, cfg.checkpoint_every
        self.phase = "icl" if cfg.mode == "icl" else "start"
        self.state: TrainState | None = None
        self.total = 0  # optimizer steps of the run

    def start(self, state: TrainState, batches_per_epoch: int, cfg: TrainConfig) -> None:
        """The loop begins; ``batches_per_epoch`` are this process's (its share under ``accelerate launch``: the
        scheduler's total counts the batches of one process doing all the work)."""
        steps = math.ceil(batches_per_epoch / cfg.optim.grad_accum) * cfg.optim.epochs
        self.total = min(steps, cfg.optim.max_steps) if cfg.optim.max_steps else steps
        self.state, self.phase = state, "step"

    def save(self, save_checkpoint, accelerator, out: Path, state: TrainState) -> None:
        """``save_checkpoint(accelerator, out, state)``, in the phase ``checkpoint``."""
        self.phase = "checkpoint"
        save_checkpoint(accelerator, out, state)
        self.phase = "step"

    def where(self) -> str:
        s, total = self.state, self.total
        if self.phase == "icl":
            return "while prompting"
        if s is None or self.phase == "start":
            return "before training"
        if self.phase == "step":
            return f"at step {s.step + 1}/{total}"
        if self.phase == "checkpoint":
            return f"at step {s.step}/{total} (saving its checkpoint)"
        if self.phase == "evaluation":
            return f"in the evaluation of epoch {s.epoch} (after step {s.step}/{total})"
        return f"while writing the predictions (training is complete: step {s.step}/{total})"

    def last_checkpoint(self) -> Path | None:
        """The newest checkpoint on disk: a ``step_*`` directory is complete by construction (renamed into place
        with its manifest when written whole), also one renamed just before an interrupt held in
        :func:`multimsd.interrupts.deferred`. Listed, not verified: hashing every file would delay the line."""
        found = sorted(p for p in (self.out / "checkpoints").glob("step_*") if (p / MANIFEST).is_file())
        return found[-1] if found else None

    def on_disk(self) -> str:
        if self.phase == "icl":
            return f"no results in {self.out}"
        ckpt = self.last_checkpoint()
        if ckpt is None:
            when = "" if self.every else " (checkpoint_every=0: one at the end of each epoch)"
            return f"no checkpoint in {self.out} yet{when}"
        return f"the last complete checkpoint is {ckpt}"

    def advice(self) -> str:
        if self.phase == "icl" or self.last_checkpoint() is None:
            return "run the same command to start again"
        if not self.resume:
            return "run it again with resume=true to resume"
        if self.phase == "predictions":
            return "run the same command to write them"
        return "run the same command to resume"
