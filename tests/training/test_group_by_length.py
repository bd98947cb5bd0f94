"""data.group_by_length: batches of similar lengths, seeded by (seed, epoch), the same batches after a resume."""

from __future__ import annotations

import random

import pytest
import torch

from multimsd.training.data import LengthGroupedSampler

_rng = random.Random(0)
LENGTHS = [_rng.randint(3, 60) for _ in range(203)]


def padding(batches, lengths=LENGTHS) -> int:
    return sum(len(b) * max(lengths[i] for i in b) - sum(lengths[i] for i in b) for b in batches)


def test_a_seeded_permutation_in_batches_of_similar_length():
    s = LengthGroupedSampler(LENGTHS, batch_size=8, seed=42)
    batches = s.batches()
    assert sorted(i for b in batches for i in b) == list(range(len(LENGTHS)))
    assert list(s) == [i for b in batches for i in b]
    assert [len(b) for b in batches] == [8] * 25 + [3]  # the short batch last: the DataLoader cuts the same
    g = torch.Generator().manual_seed(0)
    shuffled = torch.randperm(len(LENGTHS), generator=g).tolist()
    random_batches = [shuffled[k : k + 8] for k in range(0, len(shuffled), 8)]
    assert padding(batches) < padding(random_batches) / 3
    # not sorted from long to short over the epoch: the batches' order is random
    firsts = [max(LENGTHS[i] for i in b) for b in batches[:-1]]
    assert firsts != sorted(firsts, reverse=True) and firsts != sorted(firsts)


def test_order_is_a_function_of_seed_and_epoch():
    a, b = LengthGroupedSampler(LENGTHS, 8, seed=1), LengthGroupedSampler(LENGTHS, 8, seed=1)
    assert list(a) == list(b)
    a.set_epoch(1)
    assert list(a) != list(b)
    b.set_epoch(1)
    assert list(a) == list(b)
    assert list(LengthGroupedSampler(LENGTHS, 8, seed=2)) != list(LengthGroupedSampler(LENGTHS, 8, seed=1))
    fixed = LengthGroupedSampler(LENGTHS, 8, seed=1, shuffle=False)
    first = list(fixed)
    fixed.set_epoch(3)
    assert list(fixed) == first


def test_prepared_loader_follows_the_epoch_and_skips_exactly(fresh_accelerate_state):
    """Through Accelerate: set_epoch reaches the sampler, and skip_first_batches resumes the same epoch."""
    import datasets
    from accelerate import Accelerator
    from accelerate.utils import DataLoaderConfiguration

    from multimsd.training.config import TrainData
    from multimsd.training.data import train_dataloader

    rows = [{"input_ids": list(range(n)), "labels": [1] * (n % 7 + 1)} for n in LENGTHS[:40]]

    def collate(batch):
        return torch.tensor([len(b["input_ids"]) for b in batch])

    accelerator = Accelerator(cpu=True, dataloader_config=DataLoaderConfiguration(use_seedable_sampler=True))
    data = TrainData(group_by_length=True)
    dl = accelerator.prepare(train_dataloader(datasets.Dataset.from_list(rows), data, 4, 42, collate))
    epochs = []
    for epoch in (0, 1):
        dl.set_epoch(epoch)
        epochs.append([b.tolist() for b in dl])
    assert epochs[0] != epochs[1] and len(epochs[0]) == 10
    lengths = [max(len(r["input_ids"]), len(r["labels"])) for r in rows]
    expected = LengthGroupedSampler(lengths, 4, 42)
    expected.set_epoch(1)
    assert epochs[1] == [[len(rows[i]["input_ids"]) for i in b] for b in expected.batches()]
    dl.set_epoch(1)
    assert [b.tolist() for b in accelerator.skip_first_batches(dl, 3)] == epochs[1][3:]


@pytest.mark.integration
def test_run_resumes_mid_epoch_with_the_same_batches(tmp_path, monkeypatch, fresh_accelerate_state):
    """A run stopped after step 3 (of 4 per epoch) and resumed gives the uninterrupted run's losses."""
    from accelerate.state import AcceleratorState, GradientState

    import multimsd.training.loop as loop

    cfg = {
        "model": {
            "name": "tiny_llama",
            "kind": "causal",
            "pretrained": "tiny:llama",
            "lora": {"enabled": True, "dropout": 0.0},
        },
        "data": {"languages": ["en"], "mode": "mono", "max_train_examples": 8, "max_eval_examples": 1},
        "optim": {"batch_size": 2, "epochs": 2, "lr": 1e-2, "scheduler": "constant"},
        "eval": {"generate": False, "before_training": False, "max_new_tokens": 2},
        "checkpoint_every": 1,
    }
    cfg["data"]["group_by_length"] = True  # no dropout: the losses are a function of batches and weights

    def fresh(**over):
        AcceleratorState._reset_state(True)
        GradientState._reset_state()
        return loop.run({**cfg, **over})

    full = fresh(output_dir=str(tmp_path / "full"))
    expected = [h["loss"] for h in full["history"] if "step" in h]
    assert len(expected) == 8

    save = loop.save_checkpoint

    def save_then_die(accelerator, out, state, keep=2):
        save(accelerator, out, state, keep)
        if state.step == 3:
            raise KeyboardInterrupt  # as if killed right after the checkpoint of step 3 (mid-epoch 0)

    monkeypatch.setattr(loop, "save_checkpoint", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        fresh(output_dir=str(tmp_path / "cut"))
    monkeypatch.setattr(loop, "save_checkpoint", save)
    resumed = fresh(output_dir=str(tmp_path / "cut"))
    assert resumed["resumed_from"].endswith("step_00000003")
    got = [h["loss"] for h in resumed["history"] if "step" in h]
    assert got == expected
