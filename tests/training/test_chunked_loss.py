"""multimsd.training.chunked_loss: the weighted cross-entropy from hidden states, chunk by chunk, equals
multimsd.training.loss.weighted_cross_entropy on the projected logits (values and gradients), and never keeps
a [tokens, vocabulary] tensor for backward."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from helpers.causal import shifted

from multimsd.errors import MultimsdError
from multimsd.training.chunked_loss import chunked_weighted_cross_entropy, labelled_token_losses
from multimsd.training.loss import weighted_cross_entropy

LN2, LN3 = math.log(2.0), math.log(3.0)


def _random_case(seed=0, B=3, T=7, H=5, V=11, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(B, T, H, generator=g, dtype=dtype, requires_grad=True)
    weight = torch.randn(V, H, generator=g, dtype=dtype, requires_grad=True)
    bias = torch.randn(V, generator=g, dtype=dtype, requires_grad=True)
    labels = torch.randint(0, V, (B, T), generator=g)
    labels[torch.rand(B, T, generator=g) < 0.3] = -100  # prompts and padding
    labels[2] = -100  # a row with no label at all
    novel = torch.rand(B, T, generator=g) < 0.4
    return hidden, weight, bias, labels, novel


def _grads(loss, *tensors):
    return torch.autograd.grad(loss, tensors)


@pytest.mark.parametrize("theta", [1.0, 4.0])
@pytest.mark.parametrize("shift", [False, True])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
@pytest.mark.parametrize("chunk_size", [1, 3, 4096])
def test_equals_the_logits_path_values_and_gradients(theta, shift, label_smoothing, chunk_size):
    hidden, weight, bias, labels, novel = _random_case()
    if shift:  # a decoder-only LM's targets: the collator's shift
        labels, novel = shifted(labels, novel)
    num_items = torch.tensor(17)  # a global count, larger than this batch's
    kw = {"theta": theta, "num_items": num_items, "label_smoothing": label_smoothing}
    ref = weighted_cross_entropy(F.linear(hidden, weight, bias), labels, novel_mask=novel, **kw)
    got = chunked_weighted_cross_entropy(
        hidden, weight, labels, novel, bias=bias, chunk_size=chunk_size, **kw
    )
    assert got.dtype == ref.dtype and got.dim() == 0
    torch.testing.assert_close(got, ref, rtol=1e-12, atol=1e-12)
    for a, b in zip(_grads(got, hidden, weight, bias), _grads(ref, hidden, weight, bias)):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_float32_and_without_bias_or_num_items():
    hidden, weight, _, labels, novel = _random_case(seed=1, dtype=torch.float32)
    ref = weighted_cross_entropy(F.linear(hidden, weight), labels, novel_mask=novel, theta=2.0)
    got = chunked_weighted_cross_entropy(hidden, weight, labels, novel, theta=2.0, chunk_size=2)
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-6)
    for a, b in zip(_grads(got, hidden, weight), _grads(ref, hidden, weight)):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_bf16_weights_project_in_bf16_and_reduce_in_float32():
    """As the bf16 lm_head + weighted_cross_entropy do: bf16 logits, upcast, a float32 loss."""
    hidden, weight, _, labels, novel = _random_case(seed=2, dtype=torch.float32)
    hidden, weight = hidden.detach().bfloat16(), weight.detach().bfloat16()
    ref = weighted_cross_entropy(F.linear(hidden, weight), labels, novel_mask=novel, theta=4.0)
    got = chunked_weighted_cross_entropy(hidden, weight, labels, novel, theta=4.0, chunk_size=4)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, ref, rtol=1e-6, atol=1e-6)


# Hand-computed (as in test_weighted_loss.py): with the identity as weight the hidden states are the logits.
#   position 0: logits [0, 0, 0]   -> CE of label 0 = ln3 (novel)
#   position 1: logits [0, ln2, 0] -> CE of label 1 = ln2 (copied)
HAND_HIDDEN = torch.tensor([[[0.0, 0.0, 0.0], [0.0, LN2, 0.0]]])
HAND_LABELS = torch.tensor([[0, 1]])
HAND_NOVEL = torch.tensor([[True, False]])


@pytest.mark.parametrize(
    ("theta", "num_items", "expected"),
    [
        (1.0, None, (LN3 + LN2) / 2),
        (2.0, None, (2 * LN3 + LN2) / 2),
        (8.0, None, (8 * LN3 + LN2) / 2),
        (2.0, 4, (2 * LN3 + LN2) / 4),  # the global batch has 4 label tokens
    ],
)
def test_hand_computed(theta, num_items, expected):
    loss = chunked_weighted_cross_entropy(
        HAND_HIDDEN, torch.eye(3), HAND_LABELS, HAND_NOVEL, theta=theta, num_items=num_items, chunk_size=1
    )
    assert loss.item() == pytest.approx(expected, abs=1e-6)


def test_hand_computed_bias_shift_and_smoothing():
    # The bias moves position 1's logits into place: hidden 0 everywhere, bias [0, ln2, 0] for every token.
    hidden = torch.zeros(1, 3, 2)
    bias = torch.tensor([0.0, LN2, 0.0])
    weight = torch.zeros(3, 2)
    # shift: position t predicts labels[t + 1]; labels[0] is never a target; position 2 predicts nothing.
    labels, novel = shifted(torch.tensor([[2, 1, 0]]), torch.tensor([[False, True, False]]))
    assert labels.tolist() == [[1, 0, -100]] and novel.tolist() == [[True, False, False]]
    # position 0 -> label 1: -log(2/4) = ln2, novel (x3); position 1 -> label 0: -log(1/4) = 2 ln2, copied
    loss = chunked_weighted_cross_entropy(hidden, weight, labels, novel, theta=3.0, bias=bias)
    assert loss.item() == pytest.approx((3 * LN2 + 2 * LN2) / 2, abs=1e-6)
    # eps = 0.1: CE = 0.9 * (-log p_y) + 0.1 * mean_v(-log p_v), mean_v = (2 ln2 + ln2 + 2 ln2) / 3 = 5 ln2 / 3
    smooth = chunked_weighted_cross_entropy(
        hidden, weight, labels, None, theta=1.0, bias=bias, label_smoothing=0.1
    )
    mean_v = 5 * LN2 / 3
    expected = ((0.9 * LN2 + 0.1 * mean_v) + (0.9 * 2 * LN2 + 0.1 * mean_v)) / 2
    assert smooth.item() == pytest.approx(expected, abs=1e-6)


def test_token_losses_are_per_labelled_position_in_row_major_order():
    hidden, weight, bias, labels, _ = _random_case(seed=3)
    losses, where = labelled_token_losses(hidden, weight, labels, bias=bias, chunk_size=2)
    assert torch.equal(where, labels != -100) and losses.shape == (int(where.sum()),)
    ce = F.cross_entropy(F.linear(hidden, weight, bias).transpose(1, 2), labels, reduction="none")
    torch.testing.assert_close(losses, ce[where])


def test_no_vocabulary_sized_activation_is_kept_for_backward():
    """Only the chunk inputs are saved; each chunk's [C, V] logits are recomputed in backward."""
    B, T, H, V, chunk = 4, 32, 8, 1000, 16
    hidden = torch.randn(B, T, H, requires_grad=True)
    weight = torch.randn(V, H, requires_grad=True)
    labels = torch.randint(0, V, (B, T))
    novel = torch.zeros(B, T, dtype=torch.bool)
    saved: list[torch.Size] = []

    def pack(t):
        saved.append(t.shape)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = chunked_weighted_cross_entropy(hidden, weight, labels, novel, theta=2.0, chunk_size=chunk)
    assert saved and max(math.prod(s) for s in saved) <= max(B * T * H, V * H)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        ref = weighted_cross_entropy(F.linear(hidden, weight), labels, novel_mask=novel, theta=2.0)
    assert max(math.prod(s) for s in saved) >= B * T * V  # the logits path does keep them: the check can fail
    for a, b in zip(_grads(loss, hidden, weight), _grads(ref, hidden, weight)):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_no_label_gives_zero_and_zero_gradients():
    hidden, weight, _, labels, novel = _random_case(seed=4)
    labels = torch.full_like(labels, -100)
    loss = chunked_weighted_cross_entropy(hidden, weight, labels, novel, theta=4.0)
    assert loss.item() == 0.0
    gh, gw = _grads(loss, hidden, weight)  # still connected to the inputs (DDP waits for every gradient)
    assert not gh.any() and not gw.any()


def test_without_gradients_no_checkpoint_and_same_value():
    hidden, weight, bias, labels, novel = _random_case(seed=5)
    with_grad = chunked_weighted_cross_entropy(
        hidden, weight, labels, novel, theta=2.0, bias=bias, chunk_size=3
    )
    with torch.no_grad():
        without = chunked_weighted_cross_entropy(
            hidden, weight, labels, novel, theta=2.0, bias=bias, chunk_size=3
        )
    assert without.grad_fn is None and without.item() == pytest.approx(with_grad.item(), rel=1e-12)


def test_bad_arguments():
    hidden, weight, _, labels, novel = _random_case()
    with pytest.raises(MultimsdError, match="theta"):
        chunked_weighted_cross_entropy(hidden, weight, labels, novel, theta=0.0)
    with pytest.raises(ValueError, match="novel is needed"):
        chunked_weighted_cross_entropy(hidden, weight, labels, None, theta=2.0)
    with pytest.raises(ValueError, match="chunk_size"):
        chunked_weighted_cross_entropy(hidden, weight, labels, novel, theta=2.0, chunk_size=0)
    with pytest.raises(ValueError, match="weight must be"):
        chunked_weighted_cross_entropy(hidden, weight[:, :2], labels, novel, theta=2.0)
    with pytest.raises(ValueError, match="hidden must be"):
        chunked_weighted_cross_entropy(hidden[:, :3], weight, labels, novel, theta=2.0)
    with pytest.raises(ValueError, match="num_items"):
        chunked_weighted_cross_entropy(hidden, weight, labels, novel, theta=2.0, num_items=0)
