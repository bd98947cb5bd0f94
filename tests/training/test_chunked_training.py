"""The chunked loss inside training (loss.chunked): hidden states out of the real model call, the same step loss
and gradients as the logits path on tiny Llama + LoRA and tiny mBART, the same run() losses, clean fallbacks."""

from __future__ import annotations

import pytest
import torch

from multimsd.training.loop import run, to_train_config
from multimsd.training.loss import count_label_tokens

pytestmark = pytest.mark.usefixtures("fresh_accelerate_state")


def cfg_for(tmp_path, model_name: str, name: str = "run", **sections) -> dict:
    kind = "seq2seq" if model_name == "tiny_mbart" else "causal"
    cfg = {
        "model": {
            "name": model_name,
            "kind": kind,
            "pretrained": f"tiny:{model_name.split('_')[1]}",
            "lora": {"enabled": kind == "causal"},
        },
        "data": {
            "languages": ["en"],
            "mode": "mono",
            "max_train_examples": 8,
            "max_eval_examples": 2,  # per language: the final predictions are generated for these only
            "max_length": 64 if kind == "seq2seq" else 512,
        },
        "optim": {"batch_size": 4, "epochs": 1, "lr": 1e-2},
        "eval": {"generate": False, "before_training": True, "batch_size": 4, "max_new_tokens": 4},
        "output_dir": str(tmp_path / name),
    }
    for section, values in sections.items():
        cfg.setdefault(section, {}).update(values)
    return cfg


def model_and_batch(tmp_path, model: str, n: int = 4, lora: bool | None = None):
    from multimsd.training.data import Collator, load_pairs, select, tokenize_rows

    tc = to_train_config(cfg_for(tmp_path, model))
    if lora is not None:
        tc.model.lora.enabled = lora
    tc.model.lora.dropout = 0.0
    from multimsd.training.modeling import load_model_and_tokenizer

    torch.manual_seed(0)
    net, tok = load_model_and_tokenizer(tc.model)
    rows = select(load_pairs(None), tc.data, tc.seed)["train"][:n]
    collate = Collator(tok.pad_token_id, shift=tc.model.kind == "causal")
    batch = collate(tokenize_rows(tok, rows, tc.model.kind, tc.data.max_length))
    return tc, net, tok, batch


@pytest.mark.integration
@pytest.mark.parametrize(
    ("model", "lora"), [("tiny_llama", True), ("tiny_mbart", False), ("tiny_mbart", True)]
)
def test_lm_head_returns_hidden_states_within_the_block_only(tmp_path, model, lora):
    from multimsd.training.kinds import get_kind
    from multimsd.training.output_head import find_output_head, matches_logits

    tc, net, _, batch = model_and_batch(tmp_path, model, n=2, lora=lora)
    kind = get_kind(tc.model.kind)
    head = find_output_head(net)
    assert head is not None and head.weight is net.get_input_embeddings().weight  # tied: the same parameter
    assert (head.bias is not None) == (model == "tiny_mbart")  # mBART's final_logits_bias
    inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
    logits_kw = {**inputs, **kind.logits_forward_kw(net, batch, False)[0]}
    hidden_kw = {**inputs, **kind.hidden_forward_kw(net, batch)}
    assert "labels" not in hidden_kw
    assert matches_logits(net, head, logits_kw, hidden_kw)
    net.eval()
    with torch.no_grad():
        before = net(**logits_kw).logits
        with head.returning_hidden():
            hidden = net(**hidden_kw).logits
        after = net(**logits_kw).logits
    assert hidden.shape[-1] == head.weight.shape[1] != before.shape[-1]
    assert torch.equal(before, after) and "forward" not in vars(head.head)  # everything restored
    if model == "tiny_mbart":
        assert head.model.final_logits_bias.shape == (1, before.shape[-1])
    # restored on an exception too
    with pytest.raises(RuntimeError), head.returning_hidden():
        raise RuntimeError
    assert "forward" not in vars(head.head)


@pytest.mark.integration
def test_heads_it_cannot_reproduce_keep_the_logits_path(tmp_path):
    from peft import LoraConfig, get_peft_model

    from multimsd.training.kinds import get_kind
    from multimsd.training.output_head import find_output_head, matches_logits

    tc, net, _, batch = model_and_batch(tmp_path, "tiny_llama", n=2, lora=False)
    kind = get_kind("causal")
    inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
    head = find_output_head(net)
    assert matches_logits(net, head, inputs, inputs)
    hidden_kw = {**inputs, **kind.hidden_forward_kw(net, batch)}
    # a constant factor after the head (Cohere's logit_scale) commutes with the projection: still the logits
    hook = net.register_forward_hook(lambda m, i, out: out.__setitem__("logits", out.logits * 0.5) or out)
    assert matches_logits(net, head, inputs, hidden_kw)
    hook.remove()
    # anything else done to the logits fails the numerical check
    hook = net.register_forward_hook(lambda m, i, out: out.__setitem__("logits", out.logits + 1.0) or out)
    assert not matches_logits(net, head, inputs, hidden_kw)
    hook.remove()
    net.config.final_logit_softcapping = 30.0  # Gemma 2's: refused from the config already
    assert find_output_head(net) is None
    net.config.final_logit_softcapping = None
    # an adapter on the head itself: its weight is not the head's output
    wrapped = get_peft_model(net, LoraConfig(r=2, target_modules=["lm_head", "q_proj"]))
    assert find_output_head(wrapped) is None


def _step(tc, net, tok, batch, chunked: bool):
    from accelerate import Accelerator

    from multimsd.training.kinds import get_kind

    tc.loss.chunked = chunked
    net.zero_grad()
    losses = get_kind(tc.model.kind).build_loss(tc, net, tok, Accelerator(cpu=True), probe=batch)
    assert losses.chunked == chunked
    n = torch.tensor(count_label_tokens(batch["labels"]) + 3)  # a larger global count
    torch.manual_seed(1)  # the same dropout draws: both paths run the same network in the same order
    loss = losses(net, batch, step=0, micro_batch=0) / n
    loss.backward()
    grads = {k: p.grad.clone() for k, p in net.named_parameters() if p.grad is not None}
    with torch.no_grad():
        val = losses.example_cross_entropy(net, batch)
    return loss.detach(), grads, val


@pytest.mark.integration
@pytest.mark.parametrize(
    ("model", "lora"), [("tiny_llama", True), ("tiny_llama", False), ("tiny_mbart", False)]
)
@pytest.mark.parametrize("theta", [1.0, 4.0])
def test_a_training_step_gives_the_logits_paths_loss_and_gradients(tmp_path, model, lora, theta):
    tc, net, tok, batch = model_and_batch(tmp_path, model, lora=lora)
    tc.loss.theta, tc.loss.label_smoothing, tc.loss.chunk_size = theta, 0.1, 7  # several chunks
    net.train()  # with dropout (tiny mBART's): the paths must draw the same masks
    ref_loss, ref_grads, ref_val = _step(tc, net, tok, batch, chunked=False)
    loss, grads, val = _step(tc, net, tok, batch, chunked=True)
    assert float(loss) == pytest.approx(float(ref_loss), rel=1e-5)
    assert grads.keys() == ref_grads.keys() and grads
    if not lora:  # full fine-tuning: the tied embedding / lm_head weight gets its gradient through both uses
        assert any("embed" in k or "shared" in k for k in grads)
    for k in grads:
        # atol 1e-5: the tied embedding's gradient sums many positions in another order on each path (one
        # element of tiny mBART's 8M differed by 2.1e-6 at a largest gradient of 0.17 with transformers 5.24).
        torch.testing.assert_close(grads[k], ref_grads[k], rtol=1e-4, atol=1e-5, msg=k)
    torch.testing.assert_close(val[0], ref_val[0], rtol=1e-5, atol=1e-5)
    assert torch.equal(val[1], ref_val[1])


# tiny mBART: ~35 s, most of it hashing its 250k-token tokenizer for the tokenisation cache (twice)
@pytest.mark.integration
@pytest.mark.parametrize("model", ["tiny_llama", pytest.param("tiny_mbart", marks=pytest.mark.slow)])
def test_run_gives_the_same_losses_chunked_or_not(tmp_path, model):
    from accelerate.state import AcceleratorState, GradientState

    over = {"loss": {"theta": 4.0}, "optim": {"batch_size": 2, "grad_accum": 2, "epochs": 1, "lr": 1e-2}}
    chunked = run(cfg_for(tmp_path, model, "chunked", **over))
    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    over["loss"] = {"theta": 4.0, "chunked": False}
    full = run(cfg_for(tmp_path, model, "full", **over))
    assert chunked["chunked_loss"] and not full["chunked_loss"]
    steps = [h["loss"] for h in chunked["history"] if "step" in h]
    assert len(steps) == 2
    assert steps == pytest.approx([h["loss"] for h in full["history"] if "step" in h], rel=1e-5)
    assert chunked["before"]["val_loss"] == pytest.approx(full["before"]["val_loss"], rel=1e-5)
    assert chunked["after"]["val_loss"] == pytest.approx(full["after"]["val_loss"], rel=1e-5)


def test_kinds_without_an_output_head_keep_their_loss(tmp_path, caplog):
    from accelerate import Accelerator

    from multimsd.training.forward import chunked_head
    from multimsd.training.kinds import get_kind

    tc = to_train_config(cfg_for(tmp_path, "tiny_llama"))
    assert tc.loss.chunked_mode() == "auto"  # the default
    # the LSTM's own (sampled-softmax) loss: never replaced, and nothing to warn about
    assert chunked_head(tc.loss, get_kind("lstm"), torch.nn.Linear(2, 2), Accelerator(cpu=True)) is None
    assert "WARNING" not in caplog.text
    tc.loss.chunked = False
    assert chunked_head(tc.loss, get_kind("causal"), torch.nn.Linear(2, 2), Accelerator(cpu=True)) is None


def test_chunked_is_a_setting_of_three_words(tmp_path):
    """loss.chunked=auto|true|false (issue #50): true where the chunked path cannot serve is an error naming the
    reason, not a silent fallback; a boolean reads as its word; anything else is refused by the settings check."""
    from accelerate import Accelerator

    from multimsd.errors import MultimsdError
    from multimsd.training.checks import check_config
    from multimsd.training.forward import chunked_head
    from multimsd.training.kinds import get_kind

    assert to_train_config({}).loss.chunked_mode() == "auto"
    assert to_train_config({"loss": {"chunked": True}}).loss.chunked_mode() == "true"
    assert to_train_config({"loss": {"chunked": False}}).loss.chunked_mode() == "false"
    tc = to_train_config(cfg_for(tmp_path, "tiny_llama", loss={"chunked": "true"}))
    with pytest.raises(
        MultimsdError, match=r"loss.chunked=true: the model has no plain nn.Linear output head"
    ):
        chunked_head(tc.loss, get_kind("causal"), torch.nn.Linear(2, 2), Accelerator(cpu=True))
    with pytest.raises(MultimsdError, match=r"loss.chunked=true: model.kind=lstm computes its own loss"):
        chunked_head(tc.loss, get_kind("lstm"), torch.nn.Linear(2, 2), Accelerator(cpu=True), own_loss=True)
    with pytest.raises(MultimsdError, match=r"loss.chunked='sometimes': choose auto \| true \| false"):
        check_config(to_train_config(cfg_for(tmp_path, "tiny_llama", loss={"chunked": "sometimes"})))


def test_whether_a_kind_has_its_own_loss_is_said_not_guessed():
    """A kind's own loss is its declaration (own_loss), not an override of loss_function: a plugin kind that
    overrides loss_function only to call super() keeps the chunked loss; the LSTM's loss is its own only with
    the sampled softmax."""
    from multimsd.training.kinds import get_kind
    from multimsd.training.kinds.causal import CausalKind

    class Wrapped(CausalKind):
        def loss_function(self, settings, model, tokenizer, cfg):
            return super().loss_function(settings, model, tokenizer, cfg)

    assert not Wrapped().own_loss(to_train_config({}))
    lstm = {"model": {"kind": "lstm", "pretrained": "scratch"}}
    sampled = to_train_config({**lstm, "model": {**lstm["model"], "lstm": {"num_sampled": 8}}})
    full = to_train_config({**lstm, "model": {**lstm["model"], "lstm": {"num_sampled": 0}}})
    assert get_kind("lstm").own_loss(sampled) and not get_kind("lstm").own_loss(full)
