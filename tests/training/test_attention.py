"""model.attn_implementation: what reaches the model, what transformers builds for a packed row, packed vs
padded losses through flex_attention and sdpa, and the rules of multimsd.training.attention (GPU refusal)."""

from __future__ import annotations

import pytest
import torch
from conftest import run_cli

from multimsd.errors import MultimsdError
from multimsd.training.attention import (
    check_attention,
    check_attn_implementation,
    decoding_attention,
    flex_has_backward,
)
from multimsd.training.data import Collator, PackingCollator
from multimsd.training.kinds import get_kind
from multimsd.training.loop import check_config, to_train_config
from multimsd.training.modeling import load_model_and_tokenizer

pytestmark = pytest.mark.usefixtures("fresh_accelerate_state")

EXAMPLES = [  # as in test_packing.py: 4 learned targets, 2 of them novel
    {"input_ids": [1, 11, 12, 21, 22], "labels": [-100, -100, -100, 21, 22], "novel": [0, 0, 0, 1, 0]},
    {"input_ids": [1, 13, 23], "labels": [-100, -100, 23], "novel": [0, 0, 1]},
    {"input_ids": [24, 14, 25], "labels": [24, -100, 25], "novel": [1, 0, 0]},
]
TARGETS = 4  # (12->21), (21->22), (13->23), (14->25): the loss's num_items for both layouts


def _cfg(attn: str | None, **over) -> object:
    model = {
        "name": "tiny_llama",
        "kind": "causal",
        "pretrained": "tiny:llama",
        "attn_implementation": attn,
        "lora": {"enabled": True, "dropout": 0.0},
    }
    return to_train_config({"model": model, "loss": {"theta": 4.0}, **over})


def _model(attn: str | None):
    """Tiny Llama + LoRA with non-zero adapters (B starts at 0: an untouched adapter is the identity), the
    same adapters for every ``attn`` (A is drawn from the global RNG)."""
    torch.manual_seed(0)
    model, tokenizer = load_model_and_tokenizer(_cfg(attn).model)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
    return model, tokenizer


@pytest.mark.integration
def test_attn_implementation_reaches_the_model(tmp_path):
    for attn, runs in [(None, "sdpa"), ("eager", "eager"), ("flex_attention", "flex_attention")]:
        model, _ = load_model_and_tokenizer(_cfg(attn).model)
        assert (
            model.config._attn_implementation == runs
        )  # through the LoRA wrapper to the base model's config
    # random:<architecture> models are built from their configuration: the same key reaches from_config
    from transformers import AutoModelForCausalLM, LlamaConfig

    from multimsd.training.kinds.transformer import build_random

    LlamaConfig(
        vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2
    ).save_pretrained(tmp_path)
    built = build_random(AutoModelForCausalLM, tmp_path, torch.float32, None, "eager")
    assert built.config._attn_implementation == "eager"


def test_unknown_or_uninstalled_attention_is_one_line():
    with pytest.raises(MultimsdError, match="choose sdpa, eager, flex_attention, flash_attention_2"):
        check_config(_cfg("flash"))
    with pytest.raises(MultimsdError, match="needs the flash-attn package.*flex_attention"):
        check_attn_implementation("flash_attention_2", flash_installed=False)
    check_attn_implementation("flash_attention_2", flash_installed=True)
    check_config(_cfg("flex_attention"))  # the other values pass


@pytest.mark.integration
def test_packed_row_masks_dense_for_sdpa_and_blockwise_for_flex():
    """What transformers 5.x builds for a packed row (position ids restarting, no attention mask, no cache):
    sdpa a dense [row, row] block-diagonal causal mask; flex_attention a BlockMask of the same pattern."""
    from torch.nn.attention.flex_attention import BlockMask
    from transformers import LlamaConfig
    from transformers.masking_utils import create_causal_mask

    packed = PackingCollator()(EXAMPLES)
    pos = packed["position_ids"]
    n = pos.shape[1]
    example = torch.tensor([0] * 5 + [1] * 3 + [2] * 3)
    q, kv = torch.arange(n)[:, None], torch.arange(n)[None, :]
    want = (example[q] == example[kv]) & (kv <= q)  # causal within each example, nothing across

    def mask(attn):
        config = LlamaConfig(hidden_size=16, num_attention_heads=2, num_hidden_layers=1)
        config._attn_implementation = attn
        embeds = torch.zeros(1, n, 16)
        return create_causal_mask(config, embeds, attention_mask=None, cache=None, position_ids=pos)

    dense = mask("sdpa")
    assert torch.is_tensor(dense) and dense.shape == (1, 1, n, n)  # quadratic in the packed row
    assert torch.equal(dense[0, 0], want)
    block = mask("flex_attention")
    assert isinstance(block, BlockMask)  # no [row, row] tensor: a mask function over blocks
    zero = torch.tensor(0)
    assert torch.equal(block.mask_mod(zero, zero, q, kv), want)


def _losses(model, tokenizer, cfg, *, grad: bool):
    """The novel-token weighted loss of the padded and of the packed batch (and the adapter's gradients)."""
    from accelerate import Accelerator

    losses = get_kind("causal").build_loss(cfg, model, tokenizer, Accelerator(cpu=True))
    out = []
    for batch in (Collator(tokenizer.pad_token_id, shift=True)(EXAMPLES), PackingCollator()(EXAMPLES)):
        model.zero_grad()
        with torch.set_grad_enabled(grad):
            loss = losses(model, batch, step=0, micro_batch=0) / TARGETS
        grads = {}
        if grad:
            loss.backward()
            grads = {k: p.grad.clone() for k, p in model.named_parameters() if p.requires_grad}
        out.append((loss.detach(), grads))
    return out, losses.chunked


@pytest.mark.e2e
@pytest.mark.parametrize("chunked", [True, False])
def test_packed_and_padded_losses_equal_through_flex_attention(chunked):
    """Forward only: torch's FlexAttention has no backward on a CPU (compiles through inductor, ~10 s)."""
    model, tokenizer = _model("flex_attention")
    model.eval()
    cfg = _cfg("flex_attention", loss={"theta": 4.0, "chunked": chunked})
    ((padded, _), (packed, _)), used_chunked = _losses(model, tokenizer, cfg, grad=False)
    assert used_chunked == chunked
    torch.testing.assert_close(packed, padded, rtol=1e-5, atol=1e-6)
    # the same model through sdpa gives the same loss: flex_attention changes how, not what, is attended
    model.get_base_model().set_attn_implementation("sdpa")
    ((sdpa, _), _), _ = _losses(model, tokenizer, cfg, grad=False)
    torch.testing.assert_close(padded, sdpa, rtol=1e-5, atol=1e-6)


def test_packed_and_padded_losses_and_gradients_equal_through_sdpa():
    model, tokenizer = _model(None)
    model.train()  # LoRA dropout is 0: no mask drawn
    ((padded, g_padded), (packed, g_packed)), _ = _losses(model, tokenizer, _cfg(None), grad=True)
    torch.testing.assert_close(packed, padded, rtol=1e-5, atol=1e-6)
    assert g_padded.keys() == g_packed.keys() and len(g_padded) > 0
    for name in g_padded:
        torch.testing.assert_close(g_packed[name], g_padded[name], rtol=1e-4, atol=1e-6)
    assert any(g.abs().sum() > 0 for g in g_padded.values())


@pytest.mark.gpu
def test_packed_and_padded_losses_and_gradients_equal_through_flex_attention_on_cuda():
    """The training path itself, where FlexAttention has a backward (run with -m gpu where one is lent)."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    model, tokenizer = _model("flex_attention")
    model.to("cuda").train()

    def on_cuda(batch):
        return {k: v.to("cuda") for k, v in batch.items()}

    from accelerate import Accelerator

    cfg = _cfg("flex_attention")
    losses = get_kind("causal").build_loss(cfg, model, tokenizer, Accelerator())
    out = []
    for batch in (Collator(tokenizer.pad_token_id, shift=True)(EXAMPLES), PackingCollator()(EXAMPLES)):
        model.zero_grad()
        loss = losses(model, on_cuda(batch), step=0, micro_batch=0) / TARGETS
        loss.backward()
        out.append(
            (loss.detach(), {k: p.grad.clone() for k, p in model.named_parameters() if p.requires_grad})
        )
    (padded, g_padded), (packed, g_packed) = out
    torch.testing.assert_close(packed, padded, rtol=1e-4, atol=1e-5)
    for name in g_padded:
        torch.testing.assert_close(g_packed[name], g_padded[name], rtol=1e-3, atol=1e-5)
    assert check_attention(to_train_config({"data": {"packing": True}}), get_kind("causal"), model, "cuda")


@pytest.mark.integration
def test_packing_on_a_gpu_needs_an_attention_without_a_dense_mask():
    kind = get_kind("causal")
    packing = _cfg(None, data={"packing": True})
    sdpa, _ = load_model_and_tokenizer(_cfg(None).model)
    eager, _ = load_model_and_tokenizer(_cfg("eager").model)
    flex, _ = load_model_and_tokenizer(_cfg("flex_attention").model)
    for model in (sdpa, eager):
        with pytest.raises(
            MultimsdError, match=r"data.packing=true on a GPU .*model.attn_implementation=flex"
        ):
            check_attention(packing, kind, model, "cuda")
        assert check_attention(packing, kind, model, "cpu")  # on a CPU packing works through any of them
    assert check_attention(packing, kind, flex, "cuda")
    assert not check_attention(_cfg(None), kind, sdpa, "cuda")  # no packing asked: nothing to refuse
    # a kind that cannot pack keeps padded batches (the loop warns), whatever the attention
    assert not check_attention(packing, get_kind("seq2seq"), sdpa, "cuda")


def test_flex_attention_is_not_trained_on_a_cpu():
    assert not flex_has_backward("cpu")  # torch 2.13: "FlexAttention does not support backward on CPU"
    assert flex_has_backward("cuda")
    flex, _ = load_model_and_tokenizer(_cfg("flex_attention").model)
    with pytest.raises(MultimsdError, match="flex_attention cannot train on cpu.*attn_implementation=sdpa"):
        check_attention(_cfg("flex_attention"), get_kind("causal"), flex, "cpu")


@pytest.mark.e2e
def test_the_training_stage_refuses_with_one_line_and_exit_2(tmp_path, python, repo_root):
    """The loop's call of check_attention, as the user sees it: flex_attention on this CPU (the GPU packing
    rule goes through the same call; no GPU here to show it on)."""
    args = ["model=tiny_llama", "debug=train_tiny", "eval.generate=false", "eval.before_training=false"]
    proc = run_cli(
        python,
        repo_root,
        *args,
        "model.attn_implementation=flex_attention",
        "data.packing=true",
        f"output.dir={tmp_path / 'out'}",
        script="train.py",
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    errors = [ln for ln in proc.stderr.splitlines() if "flex_attention cannot train on cpu" in ln]
    assert len(errors) == 1 and "Traceback" not in proc.stderr


@pytest.mark.integration
def test_decoding_runs_sdpa_for_a_flex_attention_model():
    model, tokenizer = _model("flex_attention")
    model.eval()
    base = model.get_base_model()
    with decoding_attention(model):
        assert base.config._attn_implementation == "sdpa"
        ids = torch.tensor([[1, 11, 12, 21]])
        out = model.generate(input_ids=ids, max_new_tokens=3, do_sample=False, pad_token_id=0)
    assert base.config._attn_implementation == "flex_attention"
    ref, _ = _model(None)
    ref.eval()
    want = ref.generate(input_ids=ids, max_new_tokens=3, do_sample=False, pad_token_id=0)
    assert torch.equal(out, want)
    with decoding_attention(ref):  # anything else decodes as it is
        assert ref.get_base_model().config._attn_implementation == "sdpa"


@pytest.mark.integration
def test_a_flex_attention_model_decodes_through_the_training_stages_generate():
    """predict.generate (validation, test, mode=icl) decodes a flex_attention model with sdpa: on this CPU the
    flex decoding kernel does not even compile; the outputs are the sdpa model's."""
    from accelerate import Accelerator

    from multimsd.training.predict import generate

    rows = [
        {"complex": "The patient presented with acute hypertension.", "simple": "x", "lang": "en"},
        {"complex": "Take one tablet daily.", "simple": "y", "lang": "en"},
    ]
    outputs = {}
    for attn in ("flex_attention", None):
        cfg = _cfg(attn, eval={"max_new_tokens": 4})
        model, tokenizer = _model(attn)
        outputs[attn] = [p.text for p in generate(cfg, model, tokenizer, rows, Accelerator(cpu=True))]
        assert model.get_base_model().config._attn_implementation == (attn or "sdpa")  # restored
    assert outputs["flex_attention"] == outputs[None] and len(outputs[None]) == 2
