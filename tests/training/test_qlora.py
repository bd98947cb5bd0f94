"""QLoRA (``model.quantization``): bitsandbytes' NF4 / int8 base under a LoRA adapter, for real on the CPU.

The base is quantized (``Linear4bit`` / ``Linear8bitLt`` layers), the adapter trains (losses finite and falling,
the quantized weights unchanged), the weighted loss is the plain one at θ = 1 and the chunked path the logits
path, a checkpoint holds the adapter alone and resumes exactly, the saved adapter reloads onto a freshly
quantized base to the same outputs, and the merge for the Hub goes into the dequantized base."""

from __future__ import annotations

import json

import pytest
import torch

from multimsd.errors import MultimsdError
from multimsd.training.loss import count_label_tokens

bnb = pytest.importorskip("bitsandbytes", reason="the qlora extra (pip install 'multimsd[qlora]')")

pytestmark = pytest.mark.usefixtures("fresh_accelerate_state")


def cfg_for(tmp_path, name: str = "run", quantization: str = "4bit", **sections) -> dict:
    cfg = {
        "model": {
            "name": "tiny_llama",
            "kind": "causal",
            "pretrained": "tiny:llama",
            "lora": {"enabled": True},
            "quantization": quantization,
        },
        "data": {
            "languages": ["en"],
            "mode": "mono",
            "max_train_examples": 8,
            "max_eval_examples": 2,
            "max_length": 512,  # the chat prompt is long in tiny:llama's byte tokens
        },
        "optim": {"batch_size": 2, "epochs": 2, "lr": 1e-2},
        "eval": {"generate": False, "before_training": False, "batch_size": 4, "max_new_tokens": 4},
        "checkpoint_every": 2,
        "output": {"dir": str(tmp_path / name)},
    }
    for section, values in sections.items():
        cfg.setdefault(section, {}).update(values)
    return cfg


def loaded(tmp_path, quantization: str = "4bit", n: int = 4, **model):
    """The run's model and tokenizer (as the training stage loads them), its config and a batch of n rows."""
    from multimsd.training.data import Collator, load_pairs, select, tokenize_rows
    from multimsd.training.loop import to_train_config
    from multimsd.training.modeling import load_model_and_tokenizer

    tc = to_train_config(cfg_for(tmp_path, quantization=quantization, model=model))
    tc.model.lora.dropout = 0.0
    torch.manual_seed(0)
    net, tok = load_model_and_tokenizer(tc.model)
    rows = select(load_pairs(None), tc.data, tc.seed)["train"][:n]
    collate = Collator(tok.pad_token_id, shift=tc.model.kind == "causal")
    batch = collate(tokenize_rows(tok, rows, tc.model.kind, tc.data.max_length))
    return tc, net, tok, batch


def q_proj(net):
    return net.get_base_model().model.layers[0].self_attn.q_proj


# ------------------------------------------------------------------------------------------ configuration
@pytest.mark.parametrize(
    ("model", "message"),
    [
        ({"quantization": "3bit"}, "model.quantization='3bit': choose none, 4bit, 8bit"),
        (
            {"quantization": "4bit", "lora": {"enabled": False}},
            "model.quantization=4bit freezes the base in 4bit: only a LoRA adapter can train beside it; "
            "set model.lora.enabled=true (or model.quantization=none for full fine-tuning)",
        ),
    ],
)
def test_settings_a_quantized_base_cannot_train_with_are_refused(tmp_path, model, message):
    from multimsd.training.checks import check_config
    from multimsd.training.loop import to_train_config

    cfg = cfg_for(tmp_path)
    cfg["model"].update(model)
    with pytest.raises(MultimsdError) as e:
        check_config(to_train_config(cfg))
    assert str(e.value) == message


@pytest.mark.parametrize(
    ("where", "value", "what"),
    [
        ("model", {"quantization": "8bit"}, "model.quantization=8bit"),
        ("optim", {"optimizer": "paged_adamw_8bit"}, "optim.optimizer=paged_adamw_8bit"),
    ],
)
def test_without_bitsandbytes_one_line_names_the_extra(tmp_path, monkeypatch, where, value, what):
    import importlib.util

    from multimsd.training.checks import check_config
    from multimsd.training.loop import to_train_config

    find = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "bitsandbytes" else find(n, *a)
    )
    cfg = cfg_for(tmp_path, quantization="none")
    cfg[where].update(value)
    with pytest.raises(MultimsdError) as e:
        check_config(to_train_config(cfg))
    assert str(e.value) == f"{what} needs bitsandbytes, which is not installed: pip install 'multimsd[qlora]'"


# ------------------------------------------------------------------------------------------ the quantized base
@pytest.mark.parametrize(("quantization", "layer"), [("4bit", "Linear4bit"), ("8bit", "Linear8bitLt")])
def test_the_base_is_quantized_and_only_the_adapter_trains(tmp_path, quantization, layer):
    tc, net, _, _ = loaded(tmp_path, quantization)
    base = q_proj(net).get_base_layer()
    assert type(base).__name__ == layer
    if quantization == "4bit":
        state = base.weight.quant_state
        assert state.quant_type == "nf4" and state.nested  # NF4 with double quantization
        assert base.compute_dtype == torch.float32  # the run's model.dtype
    assert not base.weight.dtype.is_floating_point
    trainable = {n for n, p in net.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)
    assert net.is_gradient_checkpointing  # on by default with a quantized base


@pytest.mark.integration
@pytest.mark.parametrize("optimizer", ["adamw", "paged_adamw_8bit"])
def test_the_adapter_learns_and_the_quantized_weights_stay(tmp_path, optimizer):
    from multimsd.training.optimizers import build_optimizer

    tc, net, _, batch = loaded(tmp_path)
    tc.optim.optimizer, tc.optim.lr = optimizer, 1e-2
    opt = build_optimizer(tc.optim, [p for p in net.parameters() if p.requires_grad])
    frozen = q_proj(net).get_base_layer().weight.data.clone()
    adapter = {n: p.detach().clone() for n, p in net.named_parameters() if p.requires_grad}
    net.train()
    losses = []
    for _ in range(6):  # the same batch: the loss must fall
        out = net(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"]
        )
        out.loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(out.loss.item())
    assert all(torch.isfinite(torch.tensor(losses)))
    assert losses[-1] < losses[0] - 0.01, losses
    assert torch.equal(q_proj(net).get_base_layer().weight.data, frozen)
    changed = [n for n, p in net.named_parameters() if p.requires_grad and not torch.equal(p, adapter[n])]
    assert len(changed) == len(adapter)


@pytest.mark.integration
def test_weighted_loss_at_theta_1_is_the_plain_loss_and_chunked_is_the_logits_path(tmp_path):
    from accelerate import Accelerator

    from multimsd.training.kinds import get_kind

    tc, net, tok, batch = loaded(tmp_path)
    kind = get_kind("causal")
    n = torch.tensor(count_label_tokens(batch["labels"]))
    net.eval()  # no dropout: the paths see the same network
    got = {}
    for chunked, theta in ((False, 1.0), (True, 1.0), (False, 4.0), (True, 4.0)):
        tc.loss.chunked, tc.loss.theta = chunked, theta
        losses = kind.build_loss(tc, net, tok, Accelerator(cpu=True), probe=batch)
        assert losses.chunked == chunked
        got[chunked, theta] = float(losses(net, batch, step=0, micro_batch=0) / n)
    # the model shifts its labels itself: as they were before the collator's shift (every row starts with a prompt)
    unshifted = torch.nn.functional.pad(batch["labels"], (1, 0), value=-100)[:, :-1]
    plain = net(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=unshifted)
    assert got[False, 1.0] == pytest.approx(float(plain.loss), rel=1e-5)
    assert got[True, 1.0] == pytest.approx(got[False, 1.0], rel=1e-5)
    assert got[True, 4.0] == pytest.approx(got[False, 4.0], rel=1e-5)
    assert got[False, 4.0] > got[False, 1.0]  # novel tokens weigh more: the random model gets them wrong


def test_random_architectures_are_quantized_like_a_loaded_model(tmp_path):
    """``random:`` models (benchmarks) are quantized after they are built: the same layers and values as
    transformers' quantization while loading the same weights."""
    from transformers import AutoModelForCausalLM

    from multimsd.training.config import ModelSettings
    from multimsd.training.kinds import get_kind
    from multimsd.training.modeling import model_path
    from multimsd.training.quantization import bnb_config, quantize_in_place

    path = model_path(ModelSettings(pretrained="tiny:llama"))
    ms = get_kind("causal").settings(ModelSettings(pretrained="tiny:llama"))
    ms.quantization, ms.lora.enabled = "4bit", True
    mine = quantize_in_place(AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32), ms)
    theirs = AutoModelForCausalLM.from_pretrained(
        path, dtype=torch.float32, quantization_config=bnb_config(ms)
    )
    assert type(mine.model.layers[1].mlp.down_proj).__name__ == "Linear4bit"
    assert type(mine.lm_head) is torch.nn.Linear  # the output head stays (as transformers leaves it)
    x = torch.tensor([[1, 5, 9, 42, 7]])
    assert torch.equal(mine(input_ids=x).logits, theirs(input_ids=x).logits)


def test_decoding_does_not_merge_into_a_quantized_base(tmp_path):
    from multimsd.training.decode import _lora_layers, merged_lora

    _, net, _, batch = loaded(tmp_path)
    assert _lora_layers(net) == []  # merging would dequantize and quantize again: not exact
    net.eval()
    before = net(input_ids=batch["input_ids"]).logits
    with merged_lora(net):
        inside = net(input_ids=batch["input_ids"]).logits
    assert torch.equal(before, inside)


# ------------------------------------------------------------------------------------------ saving and reloading
@pytest.mark.integration
def test_a_saved_adapter_reloads_onto_a_freshly_quantized_base(tmp_path):
    from multimsd.training.kinds import get_kind
    from multimsd.training.optimizers import build_optimizer

    tc, net, tok, batch = loaded(tmp_path)
    opt = build_optimizer(tc.optim, [p for p in net.parameters() if p.requires_grad])
    net.train()
    for _ in range(2):
        net(input_ids=batch["input_ids"], labels=batch["labels"]).loss.backward()
        opt.step()
        opt.zero_grad()
    net.eval()
    want = net(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    kind = get_kind("causal")
    kind.save_pretrained(net, tok, tmp_path / "best", torch.save)
    saved = json.loads((tmp_path / "best" / "adapter_config.json").read_text())
    assert saved["r"] == 4 and not list((tmp_path / "best").glob("model*.safetensors"))  # the adapter alone

    _, fresh, _, _ = loaded(tmp_path)  # a new process would load the base and quantize it again
    fresh = kind.load_best(tc, tmp_path / "best", fresh)
    fresh.eval()
    assert not torch.equal(
        fresh.get_base_model().model.layers[0].self_attn.q_proj.lora_B["default"].weight, torch.zeros(1)
    )
    got = fresh(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    assert torch.equal(got, want)


@pytest.mark.integration
def test_merging_for_the_hub_goes_into_the_dequantized_base(tmp_path):
    from multimsd.training import hub
    from multimsd.training.kinds import get_kind
    from multimsd.training.loop import to_train_config

    tc, net, tok, batch = loaded(tmp_path)
    with torch.no_grad():  # an adapter that does something (LoRA's B starts at zero)
        for name, p in net.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.05)
    net.eval()
    want = net(input_ids=batch["input_ids"]).logits
    get_kind("causal").save_pretrained(net, tok, tmp_path / "best", torch.save)
    cfg = to_train_config(cfg_for(tmp_path, hub={"merge_lora": True, "repo_id": "me/x"}))
    folder = hub.prepare_upload(cfg, tmp_path / "best", {"after": {}}, tmp_path / "up")

    from transformers import AutoModelForCausalLM

    merged = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    down = merged.model.layers[0].mlp.down_proj
    assert type(down) is torch.nn.Linear and down.weight.dtype == torch.float32
    assert not (folder / "adapter_config.json").exists()
    torch.testing.assert_close(merged(input_ids=batch["input_ids"]).logits, want, rtol=1e-4, atol=1e-4)
    card = (folder / "README.md").read_text()
    assert "on a 4-bit NF4 (double quantization) base (QLoRA)" in card
    assert "merged into that base dequantized to float32" in card


# ------------------------------------------------------------------------------------------ the training stage
def step_losses(res: dict) -> list[float]:
    return [h["loss"] for h in res["history"] if "step" in h]


def run_fresh(cfg: dict) -> dict:
    from accelerate.state import AcceleratorState, GradientState

    from multimsd.training import loop

    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    return loop.run(cfg)


class Killed(KeyboardInterrupt):
    pass


@pytest.mark.integration
def test_a_qlora_run_checkpoints_the_adapter_alone_and_resumes_exactly(tmp_path, monkeypatch):
    from safetensors.torch import load_file

    from multimsd.training import loop

    ref = run_fresh(cfg_for(tmp_path, "ref"))
    assert ref["quantization"] == "4bit"
    expected = step_losses(ref)
    assert len(expected) == 8 and all(torch.isfinite(torch.tensor(expected)))
    saved = json.loads((tmp_path / "ref" / "all_results.json").read_text())
    assert saved["quantization"] == "4bit"
    ckpt = load_file(tmp_path / "ref" / "checkpoints" / "step_00000008" / "model.safetensors")
    assert ckpt and all("lora_" in k for k in ckpt)  # never the quantized base

    save = loop.save_checkpoint

    def save_then_die(accelerator, out, state, keep=2):
        path = save(accelerator, out, state, keep)
        if state.step == 2:
            raise Killed
        return path

    monkeypatch.setattr(loop, "save_checkpoint", save_then_die)
    with pytest.raises(Killed):
        run_fresh(cfg_for(tmp_path, "cut"))
    monkeypatch.setattr(loop, "save_checkpoint", save)
    resumed = run_fresh(cfg_for(tmp_path, "cut"))
    assert resumed["resumed_from"].endswith("step_00000002")
    assert step_losses(resumed) == expected  # exactly: the same quantized base, adapter, batches and draws
    got = load_file(tmp_path / "cut" / "checkpoints" / "step_00000008" / "model.safetensors")
    assert got.keys() == ckpt.keys() and all(torch.equal(got[k], ckpt[k]) for k in ckpt)
