"""The training loop's seams (multimsd.training.loop: build, prepare_training, train_step, end_epoch, finish)
called one by one on tiny Llama + LoRA: behaviour that used to need a whole run, in seconds."""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.usefixtures("fresh_accelerate_state")


def session(tmp_path, name: str, **optim):
    return session_with(tmp_path, name, **optim)


def session_with(tmp_path, name: str = "run", shuffle: bool = False, **optim):
    from accelerate.state import AcceleratorState, GradientState

    from multimsd.training.loop import build, prepare_training, to_train_config
    from multimsd.training.progress import Progress

    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    cfg = to_train_config(
        {
            "model": {
                "name": "tiny_llama",
                "kind": "causal",
                "pretrained": "tiny:llama",
                "lora": {"enabled": True, "dropout": 0.0},
            },
            "data": {
                "languages": ["en"],
                "mode": "mono",
                "max_train_examples": 8,
                "max_eval_examples": 2,
                "max_length": 512,
                "shuffle": shuffle,
            },
            "optim": {"batch_size": 4, "epochs": 1, "lr": 1e-2, **optim},
            "eval": {"generate": False, "before_training": False, "batch_size": 4, "patience": 1},
            "output": {"dir": str(tmp_path / name)},
        }
    )
    s = build(cfg, Progress(cfg))
    prepare_training(s)
    return s


def adapter(s) -> dict:
    return {n: p.detach().clone() for n, p in s.model.named_parameters() if p.requires_grad}


@pytest.mark.integration
def test_one_step_of_4_equals_one_step_of_2_micro_batches_of_2(tmp_path):
    """Gradient accumulation gives one big batch's step: the loss is normalised by the step's label count."""
    from multimsd.training.loop import train_step

    whole = session(tmp_path, "whole")
    record = train_step(whole, [next(iter(whole.train_dl))])
    split = session(tmp_path, "split", batch_size=2, grad_accum=2)
    it = iter(split.train_dl)
    halves = train_step(split, [next(it), next(it)])
    assert record["step"] == halves["step"] == 1 and record["tokens"] == halves["tokens"] > 0
    assert halves["loss"] == pytest.approx(record["loss"], rel=1e-6)
    a, b = adapter(whole), adapter(split)
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=1e-5, atol=1e-6, msg=k)
    assert split.state.batches_in_epoch == 2 and whole.state.batches_in_epoch == 1


@pytest.mark.integration
def test_a_step_changes_only_the_adapter_and_counts_its_work(tmp_path):
    from multimsd.training.loop import train_step

    s = session(tmp_path, "run")
    frozen = {n: p.detach().clone() for n, p in s.model.named_parameters() if not p.requires_grad}
    before = adapter(s)
    record = train_step(s, [next(iter(s.train_dl))])
    after = adapter(s)
    assert any(not torch.equal(before[k], after[k]) for k in before)
    assert all(torch.equal(p, frozen[n]) for n, p in s.model.named_parameters() if not p.requires_grad)
    assert s.state.step == 1 and s.state.train_tokens == record["tokens"] and record["seconds"] > 0


@pytest.mark.integration
def test_end_epoch_keeps_the_best_and_stops_when_it_no_longer_improves(tmp_path):
    from multimsd.training.loop import end_epoch

    s = session(tmp_path, "run")
    end_epoch(s)  # the first evaluation is the best so far: saved, not stopped
    first = s.state.history[-1]
    assert first["best"] and (s.out / "best").is_dir() and not s.state.done
    assert (s.out / "checkpoints" / "step_00000000").is_dir()  # the epoch's checkpoint
    s.state.best = first["val_loss"] - 1.0  # an earlier epoch was better: this one does not improve
    end_epoch(s)
    assert not s.state.history[-1]["best"] and s.state.done and s.state.bad_epochs == 1
    assert s.state.epoch == 2 and s.state.batches_in_epoch == 0


@pytest.mark.integration
@pytest.mark.parametrize("shuffle", [False, True])
def test_data_order_and_the_first_steps_loss(tmp_path, shuffle):
    """data.shuffle=false (the Trainer benchmark's order) feeds select()'s order, and the first step's loss is the
    untrained model's cross-entropy on those examples; data.shuffle=true feeds another order (seeded). Moved
    here from tests/training/test_train.py, where it ran two whole trainings."""
    from multimsd.training.data import Collator, load_pairs, select, tokenize_rows
    from multimsd.training.loop import train_step

    s = session_with(tmp_path, shuffle=shuffle)
    rows = select(load_pairs(None), s.cfg.data, s.cfg.seed)["train"]
    want = Collator(s.tokenizer.pad_token_id, shift=True)(tokenize_rows(s.tokenizer, rows[:4], "causal", 512))
    first = next(iter(s.train_dl))
    same = first["input_ids"].shape == want["input_ids"].shape and torch.equal(
        first["input_ids"], want["input_ids"]
    )
    assert same != shuffle
    # the model shifts its labels itself: as they were before the collator's shift (every row starts with a prompt)
    unshifted = torch.nn.functional.pad(first["labels"], (1, 0), value=-100)[:, :-1]
    with torch.no_grad():
        plain = s.model(
            input_ids=first["input_ids"], attention_mask=first["attention_mask"], labels=unshifted
        ).loss
    assert train_step(s, [first])["loss"] == pytest.approx(float(plain), rel=1e-5)


@pytest.mark.integration
def test_a_step_of_2_micro_batches_is_one_optimizer_step_and_one_schedule_step(tmp_path):
    """The loop accumulates (issue #50): the Accelerator divides and skips nothing, the optimizer and the
    schedule step once per optimizer step, not per micro-batch (exponential: lr * gamma per step)."""
    from multimsd.training.loop import train_step

    s = session(tmp_path, "run", batch_size=2, grad_accum=2, scheduler="exponential", gamma=0.5)
    assert s.accelerator.gradient_accumulation_steps == 1
    it = iter(s.train_dl)
    train_step(s, [next(it), next(it)])
    steps = {int(state["step"]) for state in s.optimizer.optimizer.state.values()}
    assert steps == {1} and s.scheduler.get_last_lr() == [pytest.approx(1e-2 * 0.5)]
    train_step(s, [next(it), next(it)])
    assert s.scheduler.get_last_lr() == [pytest.approx(1e-2 * 0.25)] and s.state.step == 2
