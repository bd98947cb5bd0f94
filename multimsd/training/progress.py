"""Where a training run is, for the one line an interrupt (Ctrl-C, SIGTERM) prints (:mod:`multimsd.interrupts`).

:func:`multimsd.training.loop.run` keeps a :class:`Progress` up to date (the phase, the step, the last complete
checkpoint) and hands its methods to :func:`multimsd.interrupts.note`; they are read only when an interrupt
passes: ``interrupted at step 31/38: the last complete checkpoint is …/step_00000030; run the same command to
resume``. The step in flight is dropped; the same command goes on from that checkpoint.

The phases also keep their clocks: at the end of a run :meth:`Progress.time_spent` says where its time went
(``where the time went: loading and preparing 14 s, training steps 10 min 12 s (64 steps), validation 1 min
28 s, checkpoints 3 s, predictions 7 min 40 s``), so a slow stage shows which part was slow.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

from multimsd.console import duration
from multimsd.training.checkpoint import MANIFEST, TrainState
from multimsd.training.config import TrainConfig

PHASES = {
    "start": "loading and preparing",  # the data, the model, the loaders; mode=dpo: mining the pairs
    "icl": "prompting",
    "step": "training steps",
    "evaluation": "validation",
    "checkpoint": "checkpoints",
    "predictions": "predictions",
}
"""Each phase's name in :meth:`Progress.time_spent`, in the order they are listed."""


class Progress:
    """The phase of a run (start, step, checkpoint, evaluation, predictions; icl), its step and its last
    complete checkpoint, described by :meth:`where`, :meth:`on_disk` and :meth:`advice`."""

    def __init__(self, cfg: TrainConfig):
        self.out, self.resume, self.every = Path(cfg.output.dir), cfg.resume, cfg.checkpoint_every
        self.seconds: dict[str, float] = {}  # per phase, the time spent in it so far
        self._phase, self._since = "icl" if cfg.mode == "icl" else "start", time.perf_counter()
        self.state: TrainState | None = None
        self.total = 0  # optimizer steps of the run

    @property
    def phase(self) -> str:
        return self._phase

    @phase.setter
    def phase(self, value: str) -> None:
        now = time.perf_counter()
        self.seconds[self._phase] = self.seconds.get(self._phase, 0.0) + now - self._since
        self._phase, self._since = value, now

    def time_spent(self) -> str:
        """``where the time went: loading and preparing 14 s, training steps 10 min 12 s (64 steps), …``:
        each phase's total so far, the one under way included."""
        seconds = dict(self.seconds)
        seconds[self._phase] = seconds.get(self._phase, 0.0) + time.perf_counter() - self._since
        parts = []
        for phase, name in PHASES.items():
            if phase not in seconds:
                continue
            part = f"{name} {duration(seconds[phase])}"
            if phase == "step" and self.state is not None:
                part += f" ({self.state.step} steps)"
            parts.append(part)
        return "where the time went: " + ", ".join(parts)

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
