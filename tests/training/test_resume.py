"""Resuming is exact: after a kill mid-epoch or at an epoch boundary, the resumed run's step losses are the
uninterrupted run's, compared with ``==`` (CPU), for every model kind *with* its dropout (LoRA's, mBART's, the
LSTM's: the global torch RNG draws the masks, so any draw the resume adds or loses shows) and with the data
options that change the batches (packing, grouping by length). The subprocess tests (SIGINT / SIGTERM /
SIGKILL through the real command) are in tests/project/test_interrupts.py."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file

LSTM_SIZES = {
    "embedding_size": 16,
    "hidden_size": 16,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "num_sampled": 8,
}
MODELS = {
    # LoRA dropout 0.05, the preset's (MultiMSD's) value
    "tiny_llama": {
        "name": "tiny_llama",
        "kind": "causal",
        "pretrained": "tiny:llama",
        "lora": {"enabled": True},
    },
    "tiny_mbart": {"name": "tiny_mbart", "kind": "seq2seq", "pretrained": "tiny:mbart", "dropout": 0.1},
    "tiny_lstm": {
        "name": "tiny_lstm",
        "kind": "lstm",
        "pretrained": "scratch",
        "dropout": 0.3,
        "lstm": LSTM_SIZES,
    },
}
STEPS_PER_EPOCH = 5  # 10 examples, batch 2; 2 epochs


def cfg_for(tmp_path, model: str, name: str, **data) -> dict:
    return {
        "model": MODELS[model],
        "data": {
            "languages": ["en"],
            "mode": "mono",
            "max_train_examples": 2 * STEPS_PER_EPOCH,
            "max_eval_examples": 2,
            "max_length": 512 if model == "tiny_llama" else 64,  # the chat prompt is long
            **data,
        },
        "optim": {"batch_size": 2, "epochs": 2, "lr": 1e-2},
        "eval": {"generate": False, "before_training": False, "batch_size": 4, "max_new_tokens": 4},
        "checkpoint_every": 3,  # and one at the end of each epoch (mBART's, optimizer included: 100 MB)
        "output": {"dir": str(tmp_path / name)},
    }


def step_losses(res: dict) -> list[float]:
    return [h["loss"] for h in res["history"] if "step" in h]


def val_losses(res: dict) -> list[float]:
    return [h["val_loss"] for h in res["history"] if "val_loss" in h]


class Killed(KeyboardInterrupt):
    pass


def run_fresh(cfg: dict) -> dict:
    from accelerate.state import AcceleratorState, GradientState

    from multimsd.training import loop

    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    return loop.run(cfg)


def run_killed_after(monkeypatch, cfg: dict, when) -> None:
    """Run until the checkpoint for which ``when(state)`` holds is written, then die (as a kill would)."""
    from multimsd.training import loop

    save = loop.save_checkpoint

    def save_then_die(accelerator, out, state, keep=2):
        path = save(accelerator, out, state, keep)
        if when(state):
            raise Killed
        return path

    monkeypatch.setattr(loop, "save_checkpoint", save_then_die)
    with pytest.raises(Killed):
        run_fresh(cfg)
    monkeypatch.setattr(loop, "save_checkpoint", save)


MID_EPOCH = lambda s: s.step == 3 and s.batches_in_epoch == 3  # noqa: E731  (epoch 0, 2 batches to go)
# the checkpoint written at the end of epoch 0 (after its evaluation), not the step checkpoint before it
EPOCH_BOUNDARY = lambda s: s.step == STEPS_PER_EPOCH and s.epoch == 1  # noqa: E731


@pytest.mark.integration
@pytest.mark.parametrize(
    "model,data",
    [
        ("tiny_llama", {}),
        # tiny mBART's runs take ~15 s each (hashing XLM-R's 250k-token tokenizer for the tokenisation cache)
        pytest.param("tiny_mbart", {}, marks=pytest.mark.slow),
        ("tiny_lstm", {}),
        ("tiny_llama", {"packing": True}),
        pytest.param("tiny_mbart", {"group_by_length": True}, marks=pytest.mark.slow),
    ],
    ids=["llama-lora", "mbart", "lstm", "llama-packing", "mbart-grouped"],
)
def test_resume_mid_epoch_and_at_an_epoch_boundary_is_exact(tmp_path, monkeypatch, model, data):
    ref = run_fresh(cfg_for(tmp_path, model, "ref", **data))
    expected = step_losses(ref)
    assert len(expected) == 2 * STEPS_PER_EPOCH
    final = "checkpoints/step_00000010/model.safetensors"
    for name, when, resumed_at in (("mid", MID_EPOCH, 3), ("boundary", EPOCH_BOUNDARY, STEPS_PER_EPOCH)):
        cfg = cfg_for(tmp_path, model, name, **data)
        run_killed_after(monkeypatch, cfg, when)
        resumed = run_fresh(cfg)
        assert resumed["resumed_from"].endswith(f"step_{resumed_at:08d}")
        assert step_losses(resumed) == expected, name  # exactly: the same draws, batches and weights
        assert val_losses(resumed) == val_losses(ref), name
        got, want = load_file(tmp_path / name / final), load_file(tmp_path / "ref" / final)
        assert got.keys() == want.keys() and all(torch.equal(got[k], want[k]) for k in want), name


@pytest.mark.integration
def test_resume_with_gradient_accumulation_is_exact(tmp_path, monkeypatch):
    """3 micro-batches a step, 5 a epoch: the last step of an epoch is short; killed after step 1."""
    over = {"optim": {"batch_size": 2, "epochs": 2, "lr": 1e-2, "grad_accum": 3}, "checkpoint_every": 1}
    ref = run_fresh({**cfg_for(tmp_path, "tiny_llama", "ref"), **over})
    cfg = {**cfg_for(tmp_path, "tiny_llama", "cut"), **over}
    run_killed_after(monkeypatch, cfg, lambda s: s.step == 1)
    resumed = run_fresh(cfg)
    assert resumed["resumed_from"].endswith("step_00000001")
    assert step_losses(resumed) == step_losses(ref) and len(step_losses(ref)) == 4


def test_iterating_the_training_data_leaves_the_global_rng_alone(tmp_path):
    """The root cause of issue #24: ``iter(DataLoader)`` drew its workers' base seed from the global torch RNG,
    which also draws the dropout masks; a run resumed mid-epoch starts a fresh iterator after restoring that
    RNG, so its draw shifted every later mask. The loaders now have generators of their own."""
    import datasets

    from multimsd.training.config import TrainData
    from multimsd.training.data import Collator, train_dataloader

    rows = datasets.Dataset.from_list(
        [
            {"input_ids": [1] * (i % 5 + 1), "labels": [2] * (i % 3 + 1), "novel": [0] * (i % 3 + 1)}
            for i in range(12)
        ]
    )
    for data in (TrainData(), TrainData(group_by_length=True), TrainData(shuffle=False)):
        dl = train_dataloader(rows, data, 4, 0, Collator(0, shift=True))
        torch.manual_seed(1)
        before = torch.get_rng_state()
        for _ in range(2):
            it = iter(dl)
            next(it)
            assert torch.equal(torch.get_rng_state(), before), data
            list(it)
            assert torch.equal(torch.get_rng_state(), before), data


@pytest.mark.integration
def test_the_interrupt_line_names_the_last_complete_checkpoint(tmp_path, monkeypatch):
    """What an interrupt prints comes from the loop's notes: the step in flight, the last complete checkpoint."""
    from multimsd import interrupts
    from multimsd.training import forward

    cfg = cfg_for(tmp_path, "tiny_llama", "run")
    cfg["checkpoint_every"] = 2
    objective = forward.MicroBatchLoss.objective

    def interrupt_step_4(self, out, batch, *, step, **kw):
        if step == 3:  # the 4th optimizer step, in flight
            raise KeyboardInterrupt
        return objective(self, out, batch, step=step, **kw)

    monkeypatch.setattr(forward.MicroBatchLoss, "objective", interrupt_step_4)
    with pytest.raises(KeyboardInterrupt) as e:
        run_fresh(cfg)
    ckpt = tmp_path / "run" / "checkpoints" / "step_00000002"
    assert interrupts.message(e.value) == (
        f"interrupted at step 4/10: the last complete checkpoint is {ckpt}; run the same command to resume"
    )
    assert sorted(p.name for p in ckpt.parent.iterdir()) == ["step_00000002"]  # nothing partial
    assert not (tmp_path / "run" / "all_results.json").exists()

    # interrupted before any checkpoint, with resume=false
    cfg = {**cfg_for(tmp_path, "tiny_llama", "early"), "checkpoint_every": 0}
    with pytest.raises(KeyboardInterrupt) as e:
        run_fresh(cfg)
    assert interrupts.message(e.value) == (
        f"interrupted at step 4/10: no checkpoint in {tmp_path / 'early'} yet (checkpoint_every=0: one at the end "
        "of each epoch); run the same command to start again"
    )
