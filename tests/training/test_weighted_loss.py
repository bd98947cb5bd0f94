"""Tests for multimsd.training.loss: the MultiMSD weighted cross-entropy (paper, section 4).

L'(w) = theta * L(w) when the reference token w does not occur in the input X, else L(w); summed over
label tokens and divided by the number of label tokens in the (global) batch.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from helpers.causal import shifted

from multimsd.errors import MultimsdError
from multimsd.training.loss import (
    count_label_tokens,
    novel_token_mask,
    weighted_cross_entropy,
    word_level_novel_mask,
)

LN2 = math.log(2.0)  # 0.6931471806
LN3 = math.log(3.0)  # 1.0986122887

# --------------------------------------------------------------------------------------------------
# Hand-computed example: V = 3, B = 1, T = 2
# --------------------------------------------------------------------------------------------------
# position 0: logits [0, 0, 0]     -> softmax [1/3, 1/3, 1/3], log_softmax [-ln3, -ln3, -ln3]
# position 1: logits [0, ln2, 0]   -> softmax [1/4, 2/4, 1/4], log_softmax [-ln4, -ln2, -ln4]
# labels [0, 1]; input X = [1, 2]:
#   token 0 is not in X -> novel,  CE_0 = ln3 = 1.0986122887
#   token 1 is in X     -> copied, CE_1 = ln2 = 0.6931471806
HAND_LOGITS = torch.tensor([[[0.0, 0.0, 0.0], [0.0, LN2, 0.0]]])
HAND_LABELS = torch.tensor([[0, 1]])
HAND_INPUT = torch.tensor([[1, 2]])


@pytest.mark.parametrize(
    ("theta", "num_items", "expected"),
    [
        (1.0, None, 0.8958797346),  # (ln3 + ln2) / 2 = ln6 / 2
        (2.0, None, 1.4451858789),  # (2 ln3 + ln2) / 2 = ln18 / 2
        (8.0, None, 4.7410227451),  # (8 ln3 + ln2) / 2 = (8.7888983096 + 0.6931471806) / 2
        (2.0, 4, 0.7225929394),  # (2 ln3 + ln2) / 4: the global batch has 4 label tokens
    ],
)
def test_hand_computed(theta, num_items, expected):
    loss = weighted_cross_entropy(HAND_LOGITS, HAND_LABELS, HAND_INPUT, theta=theta, num_items=num_items)
    assert loss.dtype == torch.float32
    assert loss.item() == pytest.approx(expected, abs=1e-6)
    # the literals above are the formulas in the comments
    formula = {1.0: (LN3 + LN2) / 2, 2.0: (2 * LN3 + LN2) / (num_items or 2), 8.0: (8 * LN3 + LN2) / 2}[theta]
    assert formula == pytest.approx(expected, abs=1e-9)


def test_hand_computed_label_smoothing():
    # eps = 0.1: CE_t = (1 - eps) * (-log p_y) + eps * mean_v(-log p_v)
    #   position 0: every -log p_v = ln3                  -> CE_0 = ln3
    #   position 1: -log p = [ln4, ln2, ln4], mean 5ln2/3 -> CE_1 = 0.9 ln2 + 0.1 * 5ln2/3 = (16/15) ln2
    # theta = 2: (2 ln3 + (16/15) ln2) / 2 = (2.1972245773 + 0.7393569926) / 2 = 1.4682907850
    loss = weighted_cross_entropy(HAND_LOGITS, HAND_LABELS, HAND_INPUT, theta=2.0, label_smoothing=0.1)
    assert loss.item() == pytest.approx(1.4682907850, abs=1e-6)
    assert math.isclose((2 * LN3 + 16 / 15 * LN2) / 2, 1.4682907850, abs_tol=1e-9)


def test_hand_computed_shift_for_causal_lm():
    # Decoder-only layout: logits[t] predicts labels[t + 1]. Prepending one label (never predicted) and
    # appending one logits row (predicts nothing) gives back the hand example: ln18 / 2.
    logits = torch.cat([HAND_LOGITS, torch.tensor([[[5.0, -1.0, 2.0]]])], dim=1)
    labels = shifted(torch.tensor([[2, 0, 1]]))  # the collator's shift: [[0, 1, -100]]
    assert labels.tolist() == [[0, 1, -100]]
    loss = weighted_cross_entropy(logits, labels, HAND_INPUT, theta=2.0)
    assert loss.item() == pytest.approx(1.4451858789, abs=1e-6)


def test_hand_computed_ignore_and_special():
    # Append an ignored position and an EOS (id 2, special, so never novel though absent from X = [1]).
    # logits of the EOS position are [0, 0, 0] -> CE = ln3; ignored position contributes nothing.
    # labels [0, 1, -100, 2], X = [1]: novel = [T, F, F, F]
    # theta = 4: (4 ln3 + ln2 + ln3) / 3 = (5.4930614435 + 0.6931471806) / 3 = 2.0620695414
    logits = torch.cat([HAND_LOGITS, torch.randn(1, 1, 3), torch.zeros(1, 1, 3)], dim=1)
    labels = torch.tensor([[0, 1, -100, 2]])
    inp = torch.tensor([[1]])
    mask = novel_token_mask(labels, inp, special_ids=[2])
    assert mask.tolist() == [[True, False, False, False]]
    loss = weighted_cross_entropy(logits, labels, inp, theta=4.0, special_ids=[2])
    assert loss.item() == pytest.approx(2.0620695414, abs=1e-6)
    assert math.isclose((5 * LN3 + LN2) / 3, 2.0620695414, abs_tol=1e-9)


# --------------------------------------------------------------------------------------------------
# theta = 1 is plain cross-entropy
# --------------------------------------------------------------------------------------------------


def test_theta_one_equals_cross_entropy():
    g = torch.Generator().manual_seed(0)
    B, T, S, V = 3, 7, 5, 11
    for _ in range(20):
        logits = torch.randn(B, T, V, generator=g) * 3
        labels = torch.randint(0, V, (B, T), generator=g)
        labels[torch.rand(B, T, generator=g) < 0.3] = -100
        inp = torch.randint(0, V, (B, S), generator=g)
        ours = weighted_cross_entropy(logits, labels, inp, theta=1.0)
        # theta = 1 leaves every per-token loss as it is: exactly their sum over the label count ...
        per_token = F.cross_entropy(logits.view(-1, V), labels.view(-1), ignore_index=-100, reduction="none")
        assert torch.equal(ours, per_token.sum() / (labels != -100).sum())
        # ... which is PyTorch's mean cross-entropy up to the order its kernel sums in (float32 rounding)
        ref = F.cross_entropy(logits.view(-1, V), labels.view(-1), ignore_index=-100)
        torch.testing.assert_close(ours, ref, rtol=1e-6, atol=1e-7)
        # label smoothing: same value up to float32 rounding of PyTorch's mean reduction
        ours = weighted_cross_entropy(logits, labels, inp, theta=1.0, label_smoothing=0.1)
        ref = F.cross_entropy(logits.view(-1, V), labels.view(-1), ignore_index=-100, label_smoothing=0.1)
        torch.testing.assert_close(ours, ref, rtol=1e-6, atol=1e-6)


def test_theta_one_shift_equals_transformers_causal_lm_loss():
    from transformers.loss.loss_utils import ForCausalLMLoss

    g = torch.Generator().manual_seed(1)
    B, T, V = 2, 6, 9
    logits = torch.randn(B, T, V, generator=g)
    labels = torch.randint(0, V, (B, T), generator=g)
    labels[0, :2] = -100
    n = torch.tensor(13)  # a "global" count larger than this batch's
    # the collator's shift and then our loss: transformers' loss, which shifts inside
    ours = weighted_cross_entropy(logits, shifted(labels), labels, theta=1.0, num_items=n)
    ref = ForCausalLMLoss(logits, labels, V, num_items_in_batch=n)
    torch.testing.assert_close(ours, ref, rtol=1e-6, atol=1e-7)


def test_weighting_matches_explicit_per_token_formula():
    g = torch.Generator().manual_seed(2)
    B, T, S, V = 2, 6, 4, 7
    logits = torch.randn(B, T, V, generator=g)
    labels = torch.randint(0, V, (B, T), generator=g)
    labels[1, 4:] = -100
    inp = torch.randint(0, V, (B, S), generator=g)
    mask = novel_token_mask(labels, inp)
    assert mask.any() and ((labels != -100) & ~mask).any()  # both kinds present, so theta matters
    per_tok = F.cross_entropy(logits.view(-1, V), labels.view(-1), reduction="none").view(B, T)
    expected = (per_tok * torch.where(mask, 4.0, 1.0)).sum() / (labels != -100).sum()
    torch.testing.assert_close(weighted_cross_entropy(logits, labels, inp, theta=4.0), expected)
    torch.testing.assert_close(weighted_cross_entropy(logits, labels, novel_mask=mask, theta=4.0), expected)


# --------------------------------------------------------------------------------------------------
# The novelty mask
# --------------------------------------------------------------------------------------------------


def test_mask_present_tokens_not_novel_and_duplicates():
    labels = torch.tensor([[5, 6, 5, 9, 9, 7]])
    inp = torch.tensor([[7, 5, 5, 3]])  # 5 twice in X
    # 5 (twice) and 7 occur in X; 6 and 9 (twice) do not: every occurrence of a novel token is novel
    assert novel_token_mask(labels, inp).tolist() == [[False, True, False, True, True, False]]


def test_mask_is_per_row():
    labels = torch.tensor([[4, 8], [4, 8]])
    inp = torch.tensor([[4, 0], [8, 0]])
    assert novel_token_mask(labels, inp).tolist() == [[False, True], [True, False]]


def test_mask_input_padding_does_not_count():
    labels = torch.tensor([[1, 5, 6]])
    inp = torch.tensor([[5, 1, 1, 1]])  # mBART pads with id 1
    assert novel_token_mask(labels, inp).tolist() == [[False, False, True]]
    assert novel_token_mask(labels, inp, input_pad_id=1).tolist() == [[True, False, True]]
    # same through an attention mask (needed where pad == a real token, e.g. Llama's pad == eos)
    attn = torch.tensor([[1, 0, 0, 0]])
    assert novel_token_mask(labels, inp, input_mask=attn).tolist() == [[True, False, True]]


def test_mask_ignore_index_positions_false():
    inp = torch.tensor([[0, 1]])
    assert novel_token_mask(torch.tensor([[-100, 3, -100, 1]]), inp).tolist() == [[False, True, False, False]]
    # a custom ignore_index
    assert novel_token_mask(torch.tensor([[-1, 3, 5]]), inp, ignore_index=-1).tolist() == [
        [False, True, True]
    ]


def test_mask_special_ids_never_novel():
    eos, en_xx = 2, 250004
    labels = torch.tensor([[en_xx, 10, 11, eos, -100]])
    inp = torch.tensor([[10, eos, en_xx, 1]])
    # specials in X do not make anything "occur", and special labels are never novel
    mask = novel_token_mask(labels, inp, input_pad_id=1, special_ids=[eos, en_xx])
    assert mask.tolist() == [[False, False, True, False, False]]
    # without declaring them, the absent-from-X special would count as novel
    assert novel_token_mask(labels, torch.tensor([[10]])).tolist() == [[True, False, True, True, False]]


def test_mask_decoder_only_prompt_via_input_mask():
    # Llama-style: input_ids = prompt + target, labels = -100 on the prompt. X is the prompt only.
    input_ids = torch.tensor([[21, 22, 23, 22, 30, 31, 0]])
    labels = torch.tensor([[-100, -100, -100, 22, 30, 31, -100]])
    attn = torch.tensor([[1, 1, 1, 1, 1, 1, 0]])
    prompt = attn.bool() & (labels == -100)
    mask = novel_token_mask(labels, input_ids, input_mask=prompt)
    assert mask.tolist() == [[False, False, False, False, True, True, False]]


def test_mask_empty_input_and_int32_ids():
    labels = torch.tensor([[3, -100]])
    assert novel_token_mask(labels, torch.zeros(1, 0, dtype=torch.long)).tolist() == [[True, False]]
    assert novel_token_mask(labels.int(), torch.tensor([[3]], dtype=torch.int32)).tolist() == [[False, False]]


def _reference_mask(labels, inp, *, ignore_index=-100, pad=None, specials=()):
    out = []
    for lab_row, inp_row in zip(labels.tolist(), inp.tolist()):
        present = {x for x in inp_row if x != pad and x not in specials}
        out.append([x != ignore_index and x not in specials and x not in present for x in lab_row])
    return out


def test_mask_matches_python_sets_random_small():
    g = torch.Generator().manual_seed(3)
    for _ in range(30):
        B, T, S, V = 3, 9, 7, 12
        labels = torch.randint(0, V, (B, T), generator=g)
        labels[torch.rand(B, T, generator=g) < 0.2] = -100
        inp = torch.randint(0, V, (B, S), generator=g)
        inp[:, S - 2 :] = 1
        got = novel_token_mask(labels, inp, input_pad_id=1, special_ids=(0, 2))
        assert got.tolist() == _reference_mask(labels, inp, pad=1, specials=(0, 2))


def test_mask_large_vocab_matches_python_sets():
    V, B, T, S = 250_000, 2, 8, 16
    g = torch.Generator().manual_seed(4)
    inp = torch.randint(3, V, (B, S), generator=g)
    inp[1, 12:] = 1  # padding
    labels = torch.randint(3, V, (B, T), generator=g)
    labels[:, ::2] = inp[:, 1:9:2]  # half the labels copied from X
    labels[0, 7] = 2  # EOS, special
    labels[1, 6] = 1  # the pad id as a label: padding of X does not make it occur
    labels[1, 7] = -100
    labels[0, 5] = V - 1  # top of the vocabulary, absent from X
    got = novel_token_mask(labels, inp, input_pad_id=1, special_ids=[2])
    ref = _reference_mask(labels, inp, pad=1, specials=(2,))
    assert got.tolist() == ref
    assert got.sum().item() == sum(map(sum, ref)) > 0
    # and the loss itself runs at that vocabulary size
    logits = torch.zeros(B, T, V)
    loss = weighted_cross_entropy(logits, labels, inp, theta=2.0, input_pad_id=1, special_ids=[2])
    n = count_label_tokens(labels)
    expected = math.log(V) * (n + got.sum().item()) / n  # uniform logits: every CE is ln V
    assert loss.item() == pytest.approx(expected, rel=1e-5)


# --------------------------------------------------------------------------------------------------
# Word-level variant
# --------------------------------------------------------------------------------------------------


def test_word_level_mask():
    # reference "the heart attack </s>" tokenised as ▁the ▁heart ▁att ack </s>; X = "the myocardial infarction"
    label_words = [["the", "heart", "attack"], ["Heart", "failure"]]
    input_words = [{"the", "myocardial", "infarction"}, ["heart", "is", "failing"]]
    word_ids = torch.tensor([[0, 1, 2, 2, -1], [0, 0, 1, -1, -1]])
    mask = word_level_novel_mask(word_ids, label_words, input_words)
    assert mask.tolist() == [[False, True, True, True, False], [True, True, True, False, False]]
    mask = word_level_novel_mask(word_ids, label_words, input_words, normalize=True)
    assert mask.tolist()[1] == [False, False, True, False, False]
    # a sub-word that also occurs as a token of X is still novel when its word is not in X: token-level
    # and word-level masks differ exactly there (token id 7 = "ack" occurs in X's token ids)
    labels = torch.tensor([[4, 5, 6, 7, 2]])
    x_ids = torch.tensor([[4, 8, 7, 9]])
    assert novel_token_mask(labels, x_ids, special_ids=[2]).tolist() == [[False, True, True, False, False]]
    with pytest.raises(ValueError, match="word"):
        word_level_novel_mask(torch.tensor([[3]]), [["a"]], [set()])


# --------------------------------------------------------------------------------------------------
# Gradient accumulation: global num_items gives the one-big-batch gradient
# --------------------------------------------------------------------------------------------------


def _accumulation_setup():
    g = torch.Generator().manual_seed(5)
    B, T, S, D, V = 8, 6, 5, 4, 7
    feats = torch.randn(B, T, D, generator=g)
    labels = torch.randint(0, V, (B, T), generator=g)
    lengths = [6, 1, 5, 2, 6, 1, 3, 1]  # very uneven, so per-micro-batch means weight tokens differently
    for b, n in enumerate(lengths):
        labels[b, n:] = -100
    inp = torch.randint(2, V, (B, S), generator=g)
    for b in range(0, B, 3):
        inp[b, 3:] = 0  # padding (id 0)
    torch.manual_seed(0)
    model = torch.nn.Linear(D, V)
    return feats, labels, inp, model


def _grads(model):
    return [p.grad.detach().clone() for p in model.parameters()]


def test_gradient_accumulation_matches_one_batch():
    feats, labels, inp, model = _accumulation_setup()
    kw = {"theta": 4.0, "input_pad_id": 0}
    mask = novel_token_mask(labels, inp, input_pad_id=0)
    assert mask.any() and ((labels != -100) & ~mask).any()

    weighted_cross_entropy(model(feats), labels, inp, **kw).backward()
    full = _grads(model)

    n = torch.tensor(count_label_tokens(labels))  # the training loop's global count
    assert n.item() == 25
    model.zero_grad()
    for i in range(0, 8, 2):
        sl = slice(i, i + 2)
        weighted_cross_entropy(model(feats[sl]), labels[sl], inp[sl], num_items=n, **kw).backward()
    for a, b in zip(_grads(model), full):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)

    # The naive alternative (mean per micro-batch, then average the 4 losses) gives another gradient,
    # so the comparison above can fail.
    model.zero_grad()
    for i in range(0, 8, 2):
        sl = slice(i, i + 2)
        (weighted_cross_entropy(model(feats[sl]), labels[sl], inp[sl], **kw) / 4).backward()
    diff = max((a - b).abs().max().item() for a, b in zip(_grads(model), full))
    assert diff > 1e-2


# --------------------------------------------------------------------------------------------------
# Precision, validation, edge cases
# --------------------------------------------------------------------------------------------------


def test_bf16_logits_give_float32_loss():
    g = torch.Generator().manual_seed(6)
    B, T, S, V = 2, 5, 4, 50
    logits32 = torch.randn(B, T, V, generator=g) * 4
    labels = torch.randint(0, V, (B, T), generator=g)
    inp = torch.randint(0, V, (B, S), generator=g)
    logits16 = logits32.bfloat16().requires_grad_()
    loss16 = weighted_cross_entropy(logits16, labels, inp, theta=2.0)
    assert loss16.dtype == torch.float32
    # exactly the float32 computation on the same (rounded) values
    assert torch.equal(loss16, weighted_cross_entropy(logits16.detach().float(), labels, inp, theta=2.0))
    # and close to the unrounded float32 logits
    loss32 = weighted_cross_entropy(logits32, labels, inp, theta=2.0)
    torch.testing.assert_close(loss16, loss32, rtol=1e-2, atol=1e-2)
    loss16.backward()
    assert logits16.grad.dtype == torch.bfloat16


def test_float64_is_not_downcast():
    logits = torch.tensor([[[0.0, 0.0, 0.0], [0.0, LN2, 0.0]]], dtype=torch.float64)  # ln2 not rounded to f32
    loss = weighted_cross_entropy(logits, HAND_LABELS, HAND_INPUT, theta=2.0)
    assert loss.dtype == torch.float64
    assert loss.item() == pytest.approx(math.log(18) / 2, abs=1e-12)


@pytest.mark.parametrize("theta", [0, 0.0, -1.0, float("nan"), float("inf")])
def test_bad_theta_raises(theta):
    with pytest.raises(MultimsdError, match="theta"):
        weighted_cross_entropy(HAND_LOGITS, HAND_LABELS, HAND_INPUT, theta=theta)


def test_bad_arguments():
    with pytest.raises(ValueError, match="exactly one"):
        weighted_cross_entropy(HAND_LOGITS, HAND_LABELS, theta=2.0)
    with pytest.raises(ValueError, match="exactly one"):
        weighted_cross_entropy(
            HAND_LOGITS, HAND_LABELS, HAND_INPUT, novel_mask=torch.zeros(1, 2, dtype=torch.bool), theta=2.0
        )
    with pytest.raises(ValueError, match="num_items"):
        weighted_cross_entropy(HAND_LOGITS, HAND_LABELS, HAND_INPUT, theta=2.0, num_items=0)
    with pytest.raises(ValueError, match="aligned"):
        weighted_cross_entropy(HAND_LOGITS, HAND_LABELS[:, :1], HAND_INPUT, theta=2.0)
    with pytest.raises(ValueError, match="batch sizes"):
        novel_token_mask(HAND_LABELS, torch.zeros(2, 3, dtype=torch.long))


def test_all_ignored_batch_gives_zero_not_nan():
    logits = torch.randn(1, 3, 5, requires_grad=True)
    labels = torch.full((1, 3), -100)
    loss = weighted_cross_entropy(logits, labels, torch.tensor([[1, 2]]), theta=8.0)
    assert loss.item() == 0.0
    loss.backward()
    assert torch.equal(logits.grad, torch.zeros_like(logits))


def test_count_label_tokens():
    assert count_label_tokens(torch.tensor([[1, -100, 0], [-100, -100, 7]])) == 3
    assert count_label_tokens(torch.tensor([[1, -1, 0]]), ignore_index=-1) == 2


# --------------------------------------------------------------------------------------------------
# Options passed on, boundaries, and every error word for word (mutation testing: docs/development.md)
# --------------------------------------------------------------------------------------------------


def test_input_mask_reaches_the_mask_through_the_loss():
    # X = [1, 2] with only position 1 (id 2) counted: label 1 no longer occurs, both labels are novel.
    # theta = 2: (2 ln3 + 2 ln2) / 2 = ln 6
    attn = torch.tensor([[0, 1]])
    loss = weighted_cross_entropy(HAND_LOGITS, HAND_LABELS, HAND_INPUT, theta=2.0, input_mask=attn)
    assert loss.item() == pytest.approx(math.log(6.0), abs=1e-6)
    assert novel_token_mask(HAND_LABELS, HAND_INPUT, input_mask=attn.bool()).tolist() == [[True, True]]


def test_a_custom_ignore_index():
    # The hand example in the decoder-only layout (targets as the collator shifts them: the last position
    # predicts nothing) with -1 for "no label": ln18 / 2 as in test_hand_computed_shift_for_causal_lm.
    logits = torch.cat([HAND_LOGITS, torch.tensor([[[5.0, -1.0, 2.0]]])], dim=1)
    labels = torch.tensor([[0, 1, -1]])
    loss = weighted_cross_entropy(logits, labels, HAND_INPUT, theta=2.0, ignore_index=-1)
    assert loss.item() == pytest.approx(math.log(18.0) / 2, abs=1e-6)
    assert count_label_tokens(labels, ignore_index=-1) == 2 and count_label_tokens(labels) == 3


def test_the_one_shift_pads_with_ignore_and_not_novel():
    from multimsd.training.data import shift_targets

    assert shift_targets([5, 6, 7], [1, 0, 1]) == ([6, 7, -100], [0, 1, 0])
    assert shift_targets([8, -100, 9], [0, 1, 1]) == ([-100, 9, -100], [1, 1, 0])
    assert shifted(torch.tensor([[5, 6, 7]]), torch.tensor([[1, 0, 1]]))[1].tolist() == [[False, True, False]]


def test_mask_a_label_equal_to_the_largest_input_id():
    # searchsorted puts it on the last sorted position: it is found there, so it is not novel
    assert novel_token_mask(torch.tensor([[5, 6, 1]]), torch.tensor([[1, 5]])).tolist() == [
        [False, True, False]
    ]


def test_word_level_mask_word_index_bounds():
    # index 0 with no words at all, and index == number of words, are refused as ValueError
    for ids, words in ((torch.tensor([[0]]), [[]]), (torch.tensor([[1]]), [["a"]])):
        with pytest.raises(ValueError) as exc:
            word_level_novel_mask(ids, words, [set()])
        n = len(words[0])
        assert (
            str(exc.value) == f"label_word_ids refers to word {int(ids.max())}, but examples have at most {n}"
        )
    # no words and no word positions: nothing is novel
    assert word_level_novel_mask(torch.tensor([[-1, -1]]), [[]], [set()]).tolist() == [[False, False]]
    # the last word of the longest example
    mask = word_level_novel_mask(torch.tensor([[0, 1], [0, -1]]), [["a", "b"], ["c"]], [{"a"}, {"c"}])
    assert mask.tolist() == [[False, True], [False, False]]


def test_errors_word_for_word():
    L2 = torch.zeros(1, 2, dtype=torch.long)
    cases = [
        (lambda: novel_token_mask(torch.tensor([1, 2]), L2), "labels must have shape [B, L], got (2,)"),
        (lambda: novel_token_mask(L2, torch.tensor([1, 2])), "input_ids must have shape [B, L], got (2,)"),
        (lambda: novel_token_mask(L2, torch.zeros(2, 3)), "batch sizes differ: labels 1, input_ids 2"),
        (
            lambda: novel_token_mask(L2, L2, input_mask=torch.ones(1, 3)),
            "input_mask shape (1, 3) != input_ids shape (1, 2)",
        ),
        (
            lambda: word_level_novel_mask(torch.tensor([0]), [["a"]], [set()]),
            "label_word_ids must have shape [B, L], got (1,)",
        ),
        (
            lambda: word_level_novel_mask(torch.tensor([[0]]), [["a"], ["b"]], [set()]),
            "batch sizes differ: label_word_ids 1, label_words 2, input_words 1",
        ),
        (
            lambda: word_level_novel_mask(torch.tensor([[0]]), [["a"]], [set(), set()]),
            "batch sizes differ: label_word_ids 1, label_words 1, input_words 2",
        ),
        (
            lambda: weighted_cross_entropy(HAND_LOGITS, HAND_LABELS, theta=2.0),
            "give exactly one of input_ids and novel_mask",
        ),
        (
            lambda: weighted_cross_entropy(HAND_LOGITS[0], HAND_LABELS, HAND_INPUT, theta=2.0),
            "logits must have shape [B, T, V], got (2, 3)",
        ),
        (
            lambda: weighted_cross_entropy(HAND_LOGITS, HAND_LABELS[0], HAND_INPUT, theta=2.0),
            "labels must have shape [B, L], got (2,)",
        ),
        (
            lambda: weighted_cross_entropy(HAND_LOGITS, HAND_LABELS[:, :1], HAND_INPUT, theta=2.0),
            "logits (1, 2, 3) and labels (1, 1) are not aligned",
        ),
        (
            lambda: weighted_cross_entropy(
                HAND_LOGITS, HAND_LABELS, novel_mask=torch.zeros(1, 3, dtype=torch.bool), theta=2.0
            ),
            "novel_mask shape (1, 3) != labels shape (1, 2)",
        ),
    ]
    for call, message in cases:
        with pytest.raises(ValueError) as exc:
            call()
        assert str(exc.value) == message


def test_mask_input_mask_and_pad_id_together():
    # both leave positions out: 7 is masked (attention 0), 1 is the pad id; only 5 occurs
    labels = torch.tensor([[5, 7, 1]])
    inp = torch.tensor([[5, 1, 7]])
    got = novel_token_mask(labels, inp, input_pad_id=1, input_mask=torch.tensor([[1, 1, 0]]))
    assert got.tolist() == [[False, True, True]]


def test_word_level_mask_of_an_empty_batch():
    mask = word_level_novel_mask(torch.zeros(0, 3, dtype=torch.long), [], [])
    assert mask.shape == (0, 3) and mask.dtype == torch.bool
