"""The one loss rule (multimsd.training.loss.weighted_token_loss): θ weighting of novel tokens, ignored positions
and the global ``num_items`` on hand-made tensors, and the three loss paths (full logits, chunked hidden states,
sampled softmax) being that rule applied to their own per-token losses, values and gradients alike."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from helpers.causal import shifted

from multimsd.errors import MultimsdError
from multimsd.training import chunked_loss, loss, sampled_softmax
from multimsd.training.chunked_loss import chunked_weighted_cross_entropy, labelled_token_losses
from multimsd.training.loss import check_theta, weighted_cross_entropy, weighted_token_loss
from multimsd.training.sampled_softmax import sampled_softmax_loss, sampled_token_losses

LN2, LN3 = math.log(2.0), math.log(3.0)

# ---------------------------------------------------------------------------------------------- by hand
# Three positions, V = 3:
#   position 0: logits [0, 0, 0]    label 0, novel      CE = ln 3
#   position 1: logits [0, ln2, 0]  label 1, copied     CE = ln 2
#   position 2: logits [5, 0, 0]    ignore_index (-100) CE = 0 (not a label; also flagged novel, which must not count)
HAND_LOGITS = torch.tensor([[0.0, 0.0, 0.0], [0.0, LN2, 0.0], [5.0, 0.0, 0.0]])
HAND_LABELS = torch.tensor([0, 1, -100])
HAND_NOVEL = torch.tensor([True, False, True])


def _hand_token_losses() -> torch.Tensor:
    return F.cross_entropy(HAND_LOGITS, HAND_LABELS, ignore_index=-100, reduction="none")


def test_hand_token_losses_are_what_the_comment_says():
    torch.testing.assert_close(_hand_token_losses(), torch.tensor([LN3, LN2, 0.0]))


@pytest.mark.parametrize(
    ("theta", "num_items", "expected"),
    [
        (1.0, None, (LN3 + LN2) / 2),  # plain token mean over the 2 labels
        (4.0, None, (4 * LN3 + LN2) / 2),  # θ on the novel label only; the denominator is not weighted
        (4.0, 5, (4 * LN3 + LN2) / 5),  # the step's global count (other micro-batches hold 3 more labels)
    ],
)
def test_hand_example(theta, num_items, expected):
    labelled = HAND_LABELS != -100
    got = weighted_token_loss(
        _hand_token_losses(), HAND_NOVEL, theta=theta, num_items=num_items, labelled=labelled
    )
    assert got.item() == pytest.approx(expected, abs=1e-6)
    # An ignored position adds nothing whatever its value: a loss of 100 there changes nothing.
    noisy = _hand_token_losses() + torch.tensor([0.0, 0.0, 100.0])
    again = weighted_token_loss(noisy, HAND_NOVEL, theta=theta, num_items=num_items, labelled=labelled)
    assert again.item() == got.item()


def test_hand_example_numbers():
    # the literals, for a reader checking the formulas above: ln 3 = 1.0986122887, ln 2 = 0.6931471806
    assert math.isclose((4 * LN3 + LN2) / 2, 2.5437981676, abs_tol=1e-9)
    assert math.isclose((4 * LN3 + LN2) / 5, 1.0175192670, abs_tol=1e-9)


def test_global_num_items_over_micro_batches_equals_one_batch():
    """Two micro-batches (2 and 3 labels) normalised by the step's 5 labels sum to the one-batch loss, gradients
    included; normalising each micro-batch by its own count and averaging gives another number."""
    losses = torch.tensor([LN3, LN2, 0.5, 2.0, 1.5], requires_grad=True)
    novel = torch.tensor([True, False, False, True, False])
    # by hand: (4 ln3 + ln2 + 0.5 + 4 * 2.0 + 1.5) / 5
    expected = (4 * LN3 + LN2 + 0.5 + 8.0 + 1.5) / 5
    whole = weighted_token_loss(losses, novel, theta=4.0)
    assert whole.item() == pytest.approx(expected, abs=1e-6)
    (g_whole,) = torch.autograd.grad(whole, losses)
    torch.testing.assert_close(g_whole, torch.tensor([4.0, 1.0, 1.0, 4.0, 1.0]) / 5)

    n = torch.tensor(5)  # the loop's count of the whole step, a tensor as in training
    parts = [
        weighted_token_loss(losses[s], novel[s], theta=4.0, num_items=n) for s in (slice(0, 2), slice(2, 5))
    ]
    total = parts[0] + parts[1]
    assert total.item() == pytest.approx(expected, abs=1e-6)
    (g_parts,) = torch.autograd.grad(total, losses)
    torch.testing.assert_close(g_parts, g_whole)

    naive = sum(weighted_token_loss(losses[s], novel[s], theta=4.0) for s in (slice(0, 2), slice(2, 5))) / 2
    # ((4 ln3 + ln2) / 2 + (0.5 + 8 + 1.5) / 3) / 2 = 2.9386 against 3.0175: another loss, so the check above can fail
    assert naive.item() == pytest.approx(((4 * LN3 + LN2) / 2 + 10 / 3) / 2, abs=1e-6)
    assert abs(naive.item() - expected) > 0.05


def test_no_labels_give_zero_not_nan():
    got = weighted_token_loss(torch.zeros(0), torch.zeros(0, dtype=torch.bool), theta=2.0)
    assert got.item() == 0.0
    got = weighted_token_loss(torch.ones(3), None, theta=1.0, labelled=torch.zeros(3, dtype=torch.bool))
    assert got.item() == 0.0


def test_dtype_is_kept():
    got = weighted_token_loss(
        torch.tensor([LN3, LN2], dtype=torch.float64), torch.tensor([True, False]), theta=4.0
    )
    assert got.dtype == torch.float64 and got.item() == pytest.approx((4 * LN3 + LN2) / 2, abs=1e-12)


@pytest.mark.parametrize("theta", [0, 0.0, -1.0, float("nan"), float("inf"), True, "2"])
def test_the_theta_check(theta):
    with pytest.raises(MultimsdError, match="theta"):
        check_theta(theta)
    with pytest.raises(MultimsdError, match="theta"):
        weighted_token_loss(torch.ones(2), torch.ones(2, dtype=torch.bool), theta=theta)
    with pytest.raises(MultimsdError, match=r"^loss\.theta="):
        check_theta(theta, "loss.theta")


@pytest.mark.parametrize("theta", [0.0, -2.0, float("nan")])
def test_the_training_settings_use_the_same_check(theta):
    from multimsd.training.checks import check_config
    from multimsd.training.config import TrainConfig

    cfg = TrainConfig()
    cfg.loss.theta = theta
    with pytest.raises(MultimsdError, match=rf"^loss\.theta={theta}: must be finite and > 0"):
        check_config(cfg)


def test_bad_arguments():
    with pytest.raises(ValueError, match="novel is needed"):
        weighted_token_loss(torch.ones(2), None, theta=2.0)
    with pytest.raises(ValueError, match="novel shape"):
        weighted_token_loss(torch.ones(2), torch.ones(3, dtype=torch.bool), theta=2.0)
    with pytest.raises(ValueError, match="labelled shape"):
        weighted_token_loss(torch.ones(2), None, theta=1.0, labelled=torch.ones(1, dtype=torch.bool))
    with pytest.raises(ValueError, match="num_items"):
        weighted_token_loss(torch.ones(2), None, theta=1.0, num_items=0)


# ---------------------------------------------------------------------------------------------- the three paths
def _case(seed=0, B=3, T=6, H=5, V=9):
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(B, T, H, generator=g, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(V, H, generator=g, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(V, generator=g, dtype=torch.float64, requires_grad=True)
    labels = torch.randint(0, V, (B, T), generator=g)
    labels[torch.rand(B, T, generator=g) < 0.3] = -100
    novel = torch.rand(B, T, generator=g) < 0.5
    assert (novel & (labels != -100)).any() and (~novel & (labels != -100)).any()  # θ has something to weight
    return hidden, weight, bias, labels, novel


def _same_value_and_gradients(a: torch.Tensor, b: torch.Tensor, inputs: tuple) -> None:
    assert torch.equal(a, b)
    # retain_graph: the two losses may share their first steps (the logits)
    for ga, gb in zip(torch.autograd.grad(a, inputs, retain_graph=True), torch.autograd.grad(b, inputs)):
        assert torch.equal(ga, gb)


@pytest.mark.parametrize("shift", [False, True])
def test_logits_path_is_the_rule_on_its_token_losses(shift):
    hidden, weight, bias, labels, novel = _case()
    logits = F.linear(hidden, weight, bias)
    n = torch.tensor(23)
    lab, nov = (
        shifted(labels, novel) if shift else (labels, novel)
    )  # a decoder-only LM's: the collator's shift
    got = weighted_cross_entropy(logits, lab, novel_mask=nov, theta=4.0, num_items=n)
    ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), lab.reshape(-1), reduction="none")
    ref = weighted_token_loss(ce, nov.reshape(-1), theta=4.0, num_items=n, labelled=lab.reshape(-1) != -100)
    _same_value_and_gradients(got, ref, (hidden, weight, bias))


@pytest.mark.parametrize("shift", [False, True])
def test_chunked_path_is_the_rule_on_its_token_losses(shift):
    hidden, weight, bias, labels, novel = _case(seed=1)
    n = torch.tensor(23)
    lab, nov = (
        shifted(labels, novel) if shift else (labels, novel)
    )  # a decoder-only LM's: the collator's shift
    got = chunked_weighted_cross_entropy(
        hidden, weight, lab, nov, theta=4.0, num_items=n, bias=bias, chunk_size=4
    )
    token_losses, where = labelled_token_losses(hidden, weight, lab, bias=bias, chunk_size=4)
    ref = weighted_token_loss(token_losses, nov[where], theta=4.0, num_items=n)
    _same_value_and_gradients(got, ref, (hidden, weight, bias))


def test_sampled_softmax_path_is_the_rule_on_its_token_losses():
    hidden, weight, bias, labels, novel = _case(seed=2)
    sampled = torch.tensor([0, 3, 5])
    log_e = torch.log(torch.tensor([0.5, 0.25, 0.125], dtype=torch.float64))
    log_e_true = torch.full(labels.shape, math.log(0.3), dtype=torch.float64)
    n = torch.tensor(23)
    args = (hidden, weight, bias, labels, sampled, log_e, log_e_true)
    got = sampled_softmax_loss(*args, novel_mask=novel, theta=4.0, num_items=n)
    token_losses, index = sampled_token_losses(*args)
    assert torch.equal(index, (labels != -100).reshape(-1).nonzero().squeeze(1))
    ref = weighted_token_loss(token_losses, novel.reshape(-1)[index], theta=4.0, num_items=n)
    _same_value_and_gradients(got, ref, (hidden, weight, bias))


@pytest.mark.parametrize("path", ["logits", "chunked", "sampled"])
def test_every_path_calls_the_rule_once(monkeypatch, path):
    """Each path's result is what the rule returns: a path doing its own weighting would bypass the spy."""
    calls = []
    sentinel = torch.tensor(123.0)

    def spy(token_losses, novel, *, theta, num_items=None, labelled=None):
        calls.append((token_losses, novel, theta, num_items))
        return sentinel

    hidden, weight, bias, labels, novel = _case(seed=3)
    if path == "logits":
        monkeypatch.setattr(loss, "weighted_token_loss", spy)
        out = weighted_cross_entropy(
            F.linear(hidden, weight, bias), labels, novel_mask=novel, theta=4.0, num_items=7
        )
    elif path == "chunked":
        monkeypatch.setattr(chunked_loss, "weighted_token_loss", spy)
        out = chunked_weighted_cross_entropy(hidden, weight, labels, novel, theta=4.0, num_items=7, bias=bias)
    else:
        monkeypatch.setattr(sampled_softmax, "weighted_token_loss", spy)
        out = sampled_softmax_loss(
            hidden,
            weight,
            bias,
            labels,
            torch.tensor([0, 1]),
            None,
            None,
            novel_mask=novel,
            theta=4.0,
            num_items=7,
        )
    assert out is sentinel and len(calls) == 1
    token_losses, passed_novel, theta, num_items = calls[0]
    assert theta == 4.0 and num_items == 7 and passed_novel.shape == token_losses.shape


SRC = Path(loss.__file__).parent
RULE_NAMES = {"theta", "num_items"}
RULE_FUNCTIONS = ("weighted_token_loss", "check_theta")


def rule_arithmetic(source: str, where: str) -> list[str]:
    """Operators (arithmetic, comparisons) on θ or num_items outside the rule's own functions."""
    tree = ast.parse(source)
    inside = {
        id(n)
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef) and f.name in RULE_FUNCTIONS
        for n in ast.walk(f)
    }
    bad = []
    for node in ast.walk(tree):
        if id(node) in inside or not isinstance(node, ast.BinOp | ast.Compare | ast.AugAssign | ast.UnaryOp):
            continue
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        names |= {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
        if names & RULE_NAMES:
            bad.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    return bad


@pytest.mark.parametrize(
    "module",
    ["loss.py", "chunked_loss.py", "sampled_softmax.py", "forward.py", "kinds/base.py", "kinds/lstm.py"],
)
def test_no_theta_or_normalisation_arithmetic_outside_the_rule(module):
    """Outside weighted_token_loss / check_theta, θ and num_items are only passed on."""
    assert not rule_arithmetic((SRC / module).read_text(encoding="utf-8"), module)


def test_the_source_check_finds_a_path_that_weights_by_itself():
    own = "def f(losses, novel, theta, num_items):\n    return (losses * theta).sum() / num_items\n"
    assert len(rule_arithmetic(own, "x.py")) == 2
    rule = "def weighted_token_loss(losses, theta):\n    return losses * theta\n"
    assert rule_arithmetic(rule, "x.py") == []


# ---------------------------------------------------------------------------------------------- edges, word for word
def test_the_denominator_at_one_label_and_one_position():
    # One label of two positions: (2 * 3.0) / 1, the ignored 5.0 adds nothing.
    got = weighted_token_loss(
        torch.tensor([3.0, 5.0]), torch.tensor([True, True]), theta=2.0, labelled=torch.tensor([True, False])
    )
    assert got.item() == 6.0
    # One position, no `labelled`: the count of positions, 1.
    assert weighted_token_loss(torch.tensor([3.0]), torch.tensor([True]), theta=2.0).item() == 6.0
    # num_items = 1 is a valid global count (one label in the whole step)
    assert weighted_token_loss(torch.tensor([3.0]), None, theta=1.0, num_items=1).item() == 3.0
    assert weighted_token_loss(torch.tensor([3.0]), None, theta=1.0, num_items=torch.tensor(2)).item() == 1.5


@pytest.mark.parametrize(
    "theta,message",
    [
        (True, "theta=True: must be a number (1 = plain cross-entropy; paper: 2, 4, 8)"),
        ("2", "theta='2': must be a number (1 = plain cross-entropy; paper: 2, 4, 8)"),
        (0, "theta=0: must be finite and > 0 (1 = plain cross-entropy; paper: 2, 4, 8)"),
        (float("inf"), "theta=inf: must be finite and > 0 (1 = plain cross-entropy; paper: 2, 4, 8)"),
    ],
)
def test_the_theta_messages_word_for_word(theta, message):
    with pytest.raises(MultimsdError) as exc:
        check_theta(theta)
    assert str(exc.value) == message
    with pytest.raises(MultimsdError) as exc:
        weighted_token_loss(torch.ones(2), torch.ones(2, dtype=torch.bool), theta=theta)
    assert str(exc.value) == message


@pytest.mark.parametrize("theta", [1, 1.0, 0.5, 2, 8.0, 1e-6, 1e6])
def test_every_positive_finite_theta_is_accepted(theta):
    check_theta(theta)
    got = weighted_token_loss(torch.tensor([1.0, 2.0]), torch.tensor([True, False]), theta=theta)
    assert got.item() == pytest.approx((theta * 1.0 + 2.0) / 2)


def test_the_rule_errors_word_for_word():
    cases = [
        (lambda: weighted_token_loss(torch.ones(2), None, theta=2.0), "novel is needed when theta != 1"),
        (
            lambda: weighted_token_loss(torch.ones(2), torch.ones(3, dtype=torch.bool), theta=2.0),
            "novel shape (3,) != token_losses shape (2,)",
        ),
        (
            lambda: weighted_token_loss(
                torch.ones(2, 2), None, theta=1.0, labelled=torch.ones(1, 2, dtype=torch.bool)
            ),
            "labelled shape (1, 2) != token_losses shape (2, 2)",
        ),
        (
            lambda: weighted_token_loss(torch.ones(2), None, theta=1.0, num_items=-3),
            "num_items must be > 0, got -3",
        ),
    ]
    for call, message in cases:
        with pytest.raises(ValueError) as exc:
            call()
        assert str(exc.value) == message


def test_dtype_is_kept_for_a_single_token_too():
    # "any shape": a 0-dim bf16 loss with its masks stays bf16 (a float32 zero for the ignored positions must
    # not promote it)
    one = torch.tensor(2.0, dtype=torch.bfloat16)
    got = weighted_token_loss(one, torch.tensor(True), theta=2.0, labelled=torch.tensor(True))
    assert got.dtype == torch.bfloat16 and got.item() == 4.0
    got = weighted_token_loss(one, torch.tensor(True), theta=2.0, labelled=torch.tensor(False))
    assert got.dtype == torch.bfloat16 and got.item() == 0.0
