"""The training step's GPU levers, checked for correctness on CPU (issue #30): the chunked loss applies under bf16
autocast and equals the logits path there; a step makes one vocabulary-wide cross-entropy pass; 32 × 1 and 8 × 4
give the same gradient; our loss's gradients equal the model's own loss (what 🤗 Trainer trains on); the loss
picks its rows without a host-device synchronisation."""

from __future__ import annotations

import pytest
import torch

from multimsd.training.kinds import get_kind
from multimsd.training.loop import run, to_train_config
from multimsd.training.loss import count_label_tokens

pytestmark = pytest.mark.usefixtures("fresh_accelerate_state")


def _model_and_batch(model: str, n: int = 4, lora: bool = False):
    from multimsd.training.data import Collator, load_pairs, select, tokenize_rows
    from multimsd.training.modeling import load_model_and_tokenizer

    kind = "seq2seq" if model == "mbart" else "causal"
    tc = to_train_config(
        {
            "model": {
                "name": f"tiny_{model}",
                "kind": kind,
                "pretrained": f"tiny:{model}",
                "lora": {"enabled": lora, "dropout": 0.0},
                # no dropout: every forward of the same batch gives the same numbers (tiny Llama has none)
                **({"dropout": 0.0} if kind == "seq2seq" else {}),
            },
            "data": {"languages": ["en"], "mode": "mono", "max_length": 64 if kind == "seq2seq" else 512},
        }
    )
    torch.manual_seed(0)
    net, tok = load_model_and_tokenizer(tc.model)
    rows = select(load_pairs(None), tc.data, tc.seed)["train"][:n]
    collate = Collator(tok.pad_token_id, shift=get_kind(kind).shift_labels)
    batch = collate(tokenize_rows(tok, rows, kind, tc.data.max_length))
    return tc, net, tok, batch


# ----------------------------------------------------------------------------------------------- the collator
def test_target_index_by_hand():
    from multimsd.training.data import Collator, PackingCollator, target_index

    labels = [[-100, 5, 6], [7, -100, -100]]
    assert target_index(labels).tolist() == [1, 2, 3]  # b * 3 + t where labels[b][t] is one
    rows = [
        {"input_ids": [1, 2, 3], "labels": [-100, 5, 6], "novel": [0, 1, 0]},
        {"input_ids": [4], "labels": [7], "novel": [1]},
    ]
    b = Collator(pad_id=0, shift=False)(rows)  # an encoder-decoder: labels as they are
    assert b["labels"].tolist() == labels and b["target_index"].tolist() == [1, 2, 3]
    b = Collator(pad_id=0, shift=True)(rows)  # a decoder-only LM: labels[t] is the token after t
    assert b["labels"].tolist() == [[5, 6, -100], [-100, -100, -100]]
    assert b["novel"].tolist() == [[True, False, False], [False, False, False]]
    assert b["target_index"].tolist() == [0, 1]  # the 7 of row 2 follows nothing: never a target
    p = PackingCollator()(
        [
            {"input_ids": [1, 2, 3], "labels": [-100, 2, 3], "novel": [0, 0, 0]},
            {"input_ids": [4, 5], "labels": [-100, 5], "novel": [0, 0]},
        ]
    )
    # one row of 5, targets [2, 3, -100, 5, -100]
    assert p["labels"].tolist() == [[2, 3, -100, 5, -100]] and p["target_index"].tolist() == [0, 1, 3]


@pytest.mark.integration
def test_the_label_count_is_known_on_the_host_and_equals_the_kinds():
    from multimsd.training.forward import label_count
    from multimsd.training.kinds import get_kind

    for model in ("llama", "mbart"):
        tc, _, _, batch = _model_and_batch(model)
        kind = get_kind(tc.model.kind)
        assert label_count(kind, batch) == count_label_tokens(batch["labels"]) > 0


# --------------------------------------------------------------------------------------- bf16 mixed precision
@pytest.mark.integration
@pytest.mark.parametrize("model", ["mbart", "llama"])
def test_the_chunked_loss_applies_under_bf16_autocast_and_equals_the_logits_path(model, caplog):
    """5f6c4ff compared a float32 projection with the model's bf16 logits at a float32 tolerance: under mixed
    precision the check always failed and every run fell back to the full logits."""
    from accelerate import Accelerator

    from multimsd.training.kinds import get_kind

    tc, net, tok, batch = _model_and_batch(model)
    kind = get_kind(tc.model.kind)
    acc = Accelerator(cpu=True, mixed_precision="bf16")
    prepared = acc.prepare(net)
    n = count_label_tokens(batch["labels"])
    losses = {}
    for chunked in (True, False):
        tc.loss.chunked = chunked
        step = kind.build_loss(tc, prepared, tok, acc, probe=batch)
        assert step.chunked == chunked
        losses[chunked] = float(step(prepared, batch, step=0, micro_batch=0) / n)
    assert "loss.chunked=auto: not applied" not in caplog.text
    # the same bf16 products on both paths; the float32 cross-entropy sums them in another order
    assert losses[True] == pytest.approx(losses[False], rel=2e-3)


# --------------------------------------------------------------------------------------- one cross-entropy pass
@pytest.mark.integration
@pytest.mark.parametrize("model", ["mbart", "llama"])
@pytest.mark.parametrize("chunked", [True, False])
def test_a_micro_batch_makes_one_cross_entropy_pass(model, chunked, monkeypatch):
    """5f6c4ff's logits path gave mBART its labels, so it computed (and the step threw away) its own
    cross-entropy over all [tokens, 250k] logits before ours: two passes a micro-batch."""
    from accelerate import Accelerator

    from multimsd.training.kinds import get_kind

    tc, net, tok, batch = _model_and_batch(model)
    tc.loss.chunked = chunked
    kind = get_kind(tc.model.kind)
    step = kind.build_loss(tc, net, tok, Accelerator(cpu=True), probe=batch)
    calls = []
    real = torch.nn.functional.cross_entropy

    def counting(*args, **kwargs):
        calls.append(args[0].shape)
        return real(*args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "cross_entropy", counting)
    loss = step(net, batch, step=0, micro_batch=0) / count_label_tokens(batch["labels"])
    loss.backward()
    assert len(calls) == 1, calls
    # and only over the positions that have a label (chunked), or the kept logits (logits path)
    if chunked:
        assert calls[0][0] == count_label_tokens(batch["labels"])


# ------------------------------------------------------------------------------ the reference's gradients
@pytest.mark.integration
@pytest.mark.parametrize(("model", "lora"), [("llama", True), ("mbart", False)])
@pytest.mark.parametrize("chunked", [True, False])
def test_gradients_equal_the_models_own_loss(model, lora, chunked):
    """θ = 1: our step's gradients are those of the model's own loss given the labels, which is what 🤗 Trainer
    trains on (token-mean cross-entropy over the batch's labels)."""
    from accelerate import Accelerator

    from multimsd.training.kinds import get_kind

    tc, net, tok, batch = _model_and_batch(model, lora=lora)
    tc.loss.chunked = chunked
    kind = get_kind(tc.model.kind)
    inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
    net.zero_grad()
    labels = batch["labels"]
    if (
        kind.shift_labels
    ):  # a causal LM shifts its labels itself: give it them as they were before the collator
        labels = torch.nn.functional.pad(labels, (1, 0), value=-100)[
            :, :-1
        ]  # (every row starts with a prompt)
    ref = net(**inputs, labels=labels).loss
    ref.backward()
    want = {k: p.grad.clone() for k, p in net.named_parameters() if p.grad is not None}
    net.zero_grad()
    step = kind.build_loss(tc, net, tok, Accelerator(cpu=True), probe=batch)
    loss = step(net, batch, step=0, micro_batch=0) / count_label_tokens(batch["labels"])
    loss.backward()
    got = {k: p.grad.clone() for k, p in net.named_parameters() if p.grad is not None}
    assert float(loss) == pytest.approx(float(ref), rel=1e-5)
    assert got.keys() == want.keys() and got
    for k in got:
        torch.testing.assert_close(got[k], want[k], rtol=1e-4, atol=1e-6, msg=k)


# ------------------------------------------------------------------------------------- 32 × 1 and 8 × 4
@pytest.mark.integration
def test_one_micro_batch_of_32_and_four_of_8_make_the_same_step(tmp_path):
    """The loss is normalised by the label count of the whole optimizer step, so the micro-batch can be sized to
    the GPU's memory while the recipe's 32 examples a step stay: after one SGD step the weights agree. (On
    5f6c4ff they did not: in an epoch's last window accelerator.accumulate() stepped after every micro-batch.)"""
    from safetensors.torch import load_file

    results, weights = {}, {}
    for batch, accum in ((32, 1), (8, 4)):
        from accelerate.state import AcceleratorState, GradientState

        AcceleratorState._reset_state(True)
        GradientState._reset_state()
        out = tmp_path / f"b{batch}x{accum}"
        results[batch] = run(
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
                    "max_train_examples": 32,
                    "max_eval_examples": 1,
                },
                # SGD: the update is lr × the gradient itself (Adam's first step would hide its scale)
                "optim": {
                    "batch_size": batch,
                    "grad_accum": accum,
                    "max_steps": 1,
                    "epochs": 1,
                    "lr": 1.0,
                    "optimizer": "sgd",
                },
                "eval": {"generate": False, "before_training": False, "max_new_tokens": 2},
                "output": {"dir": str(out)},
            }
        )
        weights[batch] = load_file(str(out / "best" / "adapter_model.safetensors"))
    steps = {b: [h for h in r["history"] if "step" in h] for b, r in results.items()}
    assert len(steps[32]) == len(steps[8]) == 1
    assert steps[32][0]["loss"] == pytest.approx(steps[8][0]["loss"], rel=1e-5)
    assert steps[32][0]["tokens"] == steps[8][0]["tokens"]
    assert weights[32].keys() == weights[8].keys()
    moved = 0
    for k in weights[32]:
        torch.testing.assert_close(weights[32][k], weights[8][k], rtol=1e-4, atol=1e-6, msg=k)
        moved += "lora_B" in k and bool(weights[32][k].abs().sum() > 0)
    assert moved  # the step changed the adapter (B starts at zero)


# ---------------------------------------------------------------------------------- no host synchronisation
def _ops(fn) -> set[str]:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return {e.key for e in prof.key_averages()}


# aten ops that make the host wait for a CUDA device: a data-dependent output size, or a value read to the host
SYNCING = {"aten::nonzero", "aten::masked_select", "aten::_local_scalar_dense", "aten::item"}


@pytest.mark.parametrize("theta", [4.0, 1.0])
@pytest.mark.parametrize("shift", [True, False])
def test_the_loss_picks_its_rows_without_a_host_sync(shift, theta):
    from multimsd.training.chunked_loss import chunked_weighted_cross_entropy
    from multimsd.training.data import Collator

    torch.manual_seed(0)
    examples = [
        {"input_ids": [1, 2, 3, 4], "labels": [-100, -100, 3, 4], "novel": [0, 0, 1, 0]},
        {"input_ids": [5, 6], "labels": [-100, 6], "novel": [0, 1]},
    ]
    batch = Collator(pad_id=0, shift=shift)(examples)
    hidden = torch.randn(2, 4, 8, requires_grad=True)
    weight = torch.randn(11, 8, requires_grad=True)

    def loss(index):
        out = chunked_weighted_cross_entropy(
            hidden,
            weight,
            batch["labels"],
            batch["novel"],
            theta=theta,
            num_items=torch.tensor(3),  # a tensor, as the loop passes it on several processes
            target_index=index,
        )
        out.backward()
        return out

    with_index = _ops(lambda: loss(batch["target_index"]))
    assert not (with_index & SYNCING), with_index & SYNCING
    assert _ops(lambda: loss(None)) & SYNCING  # the boolean mask's way does synchronise: the test can fail
    a, b = loss(batch["target_index"]), loss(None)
    assert float(a) == pytest.approx(float(b), rel=1e-6)


@pytest.mark.integration
def test_every_window_is_one_optimizer_step(tmp_path):
    """16 examples, 2 × 2, two epochs: 8 windows, 8 optimizer steps. (5f6c4ff's accumulate() took its sync
    decisions from its own micro-batch counter and the loader's end flag, which a fetched-ahead window reaches
    early: its optimizer steps and the loop's steps disagreed at epoch ends.)"""
    from torch.optim.optimizer import register_optimizer_step_post_hook

    steps = []
    handle = register_optimizer_step_post_hook(lambda opt, args, kwargs: steps.append(1))
    try:
        res = run(
            {
                "model": {
                    "name": "tiny_llama",
                    "kind": "causal",
                    "pretrained": "tiny:llama",
                    "lora": {"enabled": True},
                },
                "data": {
                    "languages": ["en"],
                    "mode": "mono",
                    "max_train_examples": 16,
                    "max_eval_examples": 1,
                },
                "optim": {"batch_size": 2, "grad_accum": 2, "epochs": 2},
                "eval": {"generate": False, "before_training": False, "max_new_tokens": 2},
                "output": {"dir": str(tmp_path / "run")},
            }
        )
    finally:
        handle.remove()
    assert len([h for h in res["history"] if "step" in h]) == len(steps) == 8
