"""Where a training run's time went (multimsd.training.progress): each phase's clock, summed."""

from __future__ import annotations

from multimsd.training import progress as progress_module
from multimsd.training.checkpoint import TrainState
from multimsd.training.config import TrainConfig
from multimsd.training.progress import Progress


def test_time_spent_sums_each_phase_and_counts_the_steps(monkeypatch):
    clock = iter([0.0, 14.0, 20.0, 632.0, 700.0, 703.0, 1163.0, 1170.0])
    monkeypatch.setattr(progress_module.time, "perf_counter", lambda: next(clock))
    p = Progress(TrainConfig())  # 0: loading and preparing
    p.state = TrainState()
    p.phase = "step"  # 14
    p.phase = "evaluation"  # 20: 6 s of steps
    p.phase = "step"  # 632: 612 s of validation
    p.state.step = 64
    p.phase = "checkpoint"  # 700: 68 s more of steps
    p.phase = "predictions"  # 703: 3 s of checkpoint
    p.phase = "predictions"  # 1163: the same phase again adds up
    line = p.time_spent()  # 1170: 7 s more, under way
    assert line == (
        "where the time went: loading and preparing 14 s, training steps 1 min 14 s (64 steps), "
        "validation 10 min 12 s, checkpoints 3 s, predictions 7 min 47 s"
    )
