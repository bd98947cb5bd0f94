"""The DPO loss and sequence log-probabilities (issue #48 item 3) against hand computations on made-up
numbers: the loss, its label smoothing, the implicit rewards, the direction of the gradient, the ignored
positions."""

from __future__ import annotations

import math

import pytest
import torch

from multimsd.errors import MultimsdError
from multimsd.training.dpo import dpo_loss, sequence_logps


def test_the_loss_is_minus_log_sigmoid_of_beta_times_the_margin():
    # pair 1: chosen gained 1 nat over the reference, rejected lost 1: z = 1 - (-1) = 2, beta z = 1
    # pair 2: the policy is the reference: z = 0, loss = log 2
    pc, pr = torch.tensor([-1.0, -4.0]), torch.tensor([-3.0, -5.0])
    rc, rr = torch.tensor([-2.0, -4.0]), torch.tensor([-2.0, -5.0])
    loss, chosen, rejected = dpo_loss(pc, pr, rc, rr, beta=0.5)
    by_hand = (math.log(1 + math.exp(-1.0)) + math.log(2.0)) / 2  # -log σ(1) = log(1 + e^-1)
    assert loss.item() == pytest.approx(by_hand, abs=1e-6)
    assert chosen.tolist() == pytest.approx([0.5, 0.0]) and rejected.tolist() == pytest.approx([-0.5, 0.0])


def test_label_smoothing_mixes_in_the_reversed_preference():
    one = torch.tensor([0.0])
    loss, _, _ = dpo_loss(one + 2.0, one, one, one, beta=1.0, label_smoothing=0.1)
    by_hand = 0.9 * math.log(1 + math.exp(-2.0)) + 0.1 * math.log(1 + math.exp(2.0))
    assert loss.item() == pytest.approx(by_hand, abs=1e-6)


def test_the_gradient_raises_the_chosen_and_lowers_the_rejected():
    pc = torch.tensor([-2.0], requires_grad=True)
    pr = torch.tensor([-2.0], requires_grad=True)
    loss, _, _ = dpo_loss(pc, pr, torch.tensor([-2.0]), torch.tensor([-2.0]), beta=0.1)
    loss.backward()
    # d/dpc of -log σ(β(pc - pr)) at z = 0 is -β/2; d/dpr is +β/2
    assert pc.grad.item() == pytest.approx(-0.05) and pr.grad.item() == pytest.approx(0.05)


def test_sequence_logps_sum_the_labels_log_probabilities_and_skip_ignored_positions():
    # vocabulary of 2: logits [0, 0] give log 1/2 to each; [ln 3, 0] give log 3/4 to token 0
    logits = torch.tensor([[[0.0, 0.0], [math.log(3.0), 0.0], [5.0, -5.0]]])
    labels = torch.tensor([[1, 0, -100]])
    assert sequence_logps(logits, labels).item() == pytest.approx(math.log(0.5) + math.log(0.75), abs=1e-6)
    assert sequence_logps(logits.half(), labels).dtype == torch.float32
    with pytest.raises(MultimsdError, match="not aligned"):
        sequence_logps(logits, labels[:, :2])


def test_bad_settings_are_one_error_line():
    t = torch.zeros(1)
    with pytest.raises(MultimsdError, match="beta=0"):
        dpo_loss(t, t, t, t, beta=0)
    with pytest.raises(MultimsdError, match="label_smoothing=0.5"):
        dpo_loss(t, t, t, t, label_smoothing=0.5)
