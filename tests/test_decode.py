"""Decoding (multimsd.training.decode): length-sorted token-budget batches, LoRA merged bit-exactly, and the
same greedy outputs as the old path (input order, fixed chunks, adapter unmerged) for every model kind."""

import pytest
import torch

from multimsd.training.config import EvalSettings
from multimsd.training.decode import decode_batches, length_batches, merged_lora, shared_prefix_lengths


# ---------------------------------------------------------------------------------------------- batching
def test_length_batches_by_hand():
    lengths = [5, 20, 12, 20, 3]
    # longest first (ties in input order: 1 before 3); each row costs longest 20 + 5 new = 25 tokens:
    # 4 rows = 100 <= 100, a 5th would be 125
    assert length_batches(lengths, 100, 5) == [[1, 3, 2, 0], [4]]
    assert length_batches(lengths, 99, 5) == [[1, 3, 2], [0, 4]]  # 3 x 25 = 75; then 2 x (5 + 5) = 20
    assert length_batches(lengths, 100, 5, max_rows=2) == [[1, 3], [2, 0], [4]]
    # a row over the budget on its own still gets a batch
    assert length_batches([300, 10, 10], 100, 5) == [[0], [1, 2]]
    # budget 0: the old way, input order in chunks of max_rows (all rows without it)
    assert length_batches(lengths, 0, 5, max_rows=2) == [[0, 1], [2, 3], [4]]
    assert length_batches(lengths, 0, 5) == [[0, 1, 2, 3, 4]]
    assert length_batches([], 100, 5) == [] and length_batches([], 0, 5, max_rows=8) == []


def test_decode_batches_returns_input_order():
    lengths = [3, 9, 1, 7, 7, 2]
    seen = []

    def decode(idx):
        seen.append(list(idx))
        return [f"row {k}" for k in idx]

    settings = EvalSettings(max_new_tokens=1, max_batch_tokens=20, batch_size=1)
    out = decode_batches(lengths, settings, decode)
    assert out == [f"row {k}" for k in range(6)]
    # sorted longest first, 2 x (9 + 1) = 20 fits; batch_size does not cap a budgeted batch
    assert seen == [[1, 3], [4, 0], [5, 2]]
    seen.clear()
    settings = EvalSettings(max_new_tokens=1, max_batch_tokens=0, batch_size=4)
    assert decode_batches(lengths, settings, decode) == out
    assert seen == [[0, 1, 2, 3], [4, 5]]


def test_shared_prefix_lengths_by_hand():
    ids = [[1, 2, 3, 4], [1, 2, 3, 5, 6], [1, 2, 9], [7, 8]]
    assert shared_prefix_lengths(ids, ["a", "a", "b", "b"]) == [3, 3, 0, 0]
    # the group's common head, and never a row's last token (row 2 has 3 tokens: at most 2 shared)
    assert shared_prefix_lengths(ids, ["a", "a", "a", "b"]) == [2, 2, 2, 0]
    assert shared_prefix_lengths([[5, 6, 7], [5, 6, 7], [5, 6]], ["x", "x", "y"]) == [2, 2, 0]


# ---------------------------------------------------------------------------------------------- LoRA merge
def tiny_llama_lora(dtype="float32", seed=0):
    from multimsd.training.kinds.transformer import TransformerModelSettings as ModelSettings
    from multimsd.training.modeling import load_model_and_tokenizer

    ms = ModelSettings(name="tiny_llama", kind="causal", pretrained="tiny:llama", dtype=dtype)
    ms.lora.enabled = True
    torch.manual_seed(seed)
    model, tok = load_model_and_tokenizer(ms)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():  # LoRA's B starts at zero: make it count, so merging changes the weights
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.copy_(torch.randn(p.shape, generator=gen).to(p.dtype))
    return model.eval(), tok


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_merged_lora_restores_every_parameter_bit_for_bit(dtype):
    model, _ = tiny_llama_lora(dtype)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    ids = torch.tensor([[1, 5, 9, 200, 31]])
    with torch.no_grad():
        logits = model(input_ids=ids).logits
    with merged_lora(model):
        base = [n for n, p in model.named_parameters() if "base_layer.weight" in n]
        changed = [n for n in base if not torch.equal(dict(model.named_parameters())[n], before[n])]
        assert base and changed == base  # every adapted weight is merged
        with torch.no_grad():
            merged_logits = model(input_ids=ids).logits
        # the merged model computes the adapter's function (to rounding)
        tol = 1e-4 if dtype == "float32" else 0.1
        assert torch.allclose(merged_logits.float(), logits.float(), atol=tol, rtol=tol)
    after = dict(model.named_parameters())
    assert all(torch.equal(after[n], before[n]) for n in before)
    assert all(not m.merged for m in model.modules() if hasattr(m, "merged_adapters"))
    with torch.no_grad():
        assert torch.equal(model(input_ids=ids).logits, logits)  # and peft runs the adapter again
    if dtype == "bfloat16":
        # why the weights are copied back: peft's own unmerge (W + BA - BA) does not give W back
        model.merge_adapter()
        model.unmerge_adapter()
        assert not all(torch.equal(p, before[n]) for n, p in model.named_parameters())


def test_merged_lora_restores_after_an_error_and_is_a_noop_without_lora():
    model, _ = tiny_llama_lora()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    with pytest.raises(RuntimeError, match="boom"), merged_lora(model):
        raise RuntimeError("boom")
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters())
    with merged_lora(model, enabled=False):
        assert all(torch.equal(p, before[n]) for n, p in model.named_parameters())
    plain = torch.nn.Linear(3, 2)
    w = plain.weight.detach().clone()
    with merged_lora(plain):
        assert torch.equal(plain.weight, w)


# ---------------------------------------------------------------------------------------------- same outputs
def mixed_rows(n_per_lang=4, langs=("en", "de", "ja")):
    """Validation rows of a few languages, short and long, interleaved."""
    from multimsd.training.data import sample_gold_pairs

    pairs = sample_gold_pairs()["validation"]
    rows = []
    for lang in langs:
        mine = sorted((r for r in pairs if r["lang"] == lang), key=lambda r: len(r["complex"]))
        rows += mine[:: max(len(mine) // n_per_lang, 1)][:n_per_lang]  # spread over the lengths
    return rows[::2] + rows[1::2]


def outputs(cfg, model, tok, rows, **eval_settings):
    from accelerate import Accelerator

    from multimsd.training.predict import generate

    for k, v in eval_settings.items():
        setattr(cfg.eval, k, v)
    return generate(cfg, model, tok, rows, Accelerator(cpu=True))


def check_same_outputs(cfg, model, tok, rows, small_budget, monkeypatch, order=True):
    from multimsd.training import decode

    batches = []

    def spy(*args, **kwargs):
        batches.append(length_batches(*args, **kwargs))
        return batches[-1]

    monkeypatch.setattr(decode, "length_batches", spy)
    batch_size = cfg.eval.batch_size
    old = outputs(cfg, model, tok, rows, max_batch_tokens=0, batch_size=batch_size, merge_lora=False)
    # outputs that depend on the input, or a mix-up of rows would go unnoticed
    assert len(old) == len(rows) and len(set(old)) > len(rows) // 2, old
    if order:  # in input order: each row decoded on its own gives its output
        assert [outputs(cfg, model, tok, [r])[0] for r in rows] == old
    new = outputs(cfg, model, tok, rows, max_batch_tokens=EvalSettings.max_batch_tokens, merge_lora=True)
    assert new == old
    # a budget that cuts the rows into several batches of different sizes, unlike the old fixed chunks
    batches.clear()
    assert outputs(cfg, model, tok, rows, max_batch_tokens=small_budget, merge_lora=True) == old
    sizes = {len(b) for call in batches for b in call}
    assert len(sizes) > 1 and sizes != {batch_size}, batches


@pytest.fixture
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: one thread is fastest on a shared machine
    yield
    torch.set_num_threads(n)


@pytest.mark.usefixtures("fresh_accelerate_state", "one_thread")
def test_tiny_llama_lora_same_greedy_outputs(monkeypatch):
    from multimsd.training.kinds.causal import PromptHeads
    from multimsd.training.loop import to_train_config

    cfg = to_train_config({"model": {"kind": "causal", "pretrained": "tiny:llama"}})
    cfg.eval.max_new_tokens, cfg.eval.batch_size = 8, 4
    model, tok = tiny_llama_lora()
    rows = mixed_rows()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    shared = []
    real = PromptHeads.generate

    def spy(self, idx, pad, gen_kw):
        new = real(self, idx, pad, gen_kw)
        shared.append(new is not None)
        return new

    monkeypatch.setattr(PromptHeads, "generate", spy)
    check_same_outputs(cfg, model, tok, rows, 3 * (200 + 8), monkeypatch)
    assert any(shared)  # the new path decoded from the languages' shared prompt heads
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters())


@pytest.mark.usefixtures("fresh_accelerate_state", "one_thread")
def test_tiny_mbart_same_outputs_greedy_and_beam(monkeypatch):
    from multimsd.training.loop import to_train_config
    from multimsd.training.modeling import load_model_and_tokenizer

    cfg = to_train_config({"model": {"kind": "seq2seq", "pretrained": "tiny:mbart"}})
    cfg.eval.max_new_tokens, cfg.eval.batch_size, cfg.data.max_length = 8, 3, 64
    model, tok = load_model_and_tokenizer(cfg.model)
    torch.manual_seed(0)
    with torch.no_grad():
        # A tiny random mBART writes one token whatever it reads: larger weights make it depend on the input,
        # and special tokens are kept out of the (decoded, specials skipped) outputs.
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0, 0.3)
        model.final_logits_bias[0, tok.all_special_ids] = -1e4
    rows = mixed_rows()
    check_same_outputs(cfg, model, tok, rows, 2 * (40 + 8), monkeypatch)
    cfg.eval.num_beams = 2
    check_same_outputs(cfg, model, tok, rows, 2 * (40 + 8), monkeypatch, order=False)


@pytest.mark.usefixtures("fresh_accelerate_state", "one_thread")
def test_lstm_same_outputs(monkeypatch):
    from multimsd.training.data import sample_gold_pairs
    from multimsd.training.loop import to_train_config
    from multimsd.training.modeling import load_model_and_tokenizer

    cfg = to_train_config(
        {
            "model": {
                "kind": "lstm",
                "pretrained": "scratch",
                "lstm": {"embedding_size": 16, "hidden_size": 16, "encoder_layers": 2, "decoder_layers": 2},
            }
        }
    )
    cfg.eval.max_new_tokens, cfg.eval.batch_size = 8, 3
    torch.manual_seed(0)
    model, tok = load_model_and_tokenizer(cfg.model, sample_gold_pairs()["train"])
    with torch.no_grad():  # random small weights write one word whatever the input: larger ones do not
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0, 0.5)
    check_same_outputs(cfg, model, tok, mixed_rows(), 2 * (40 + 8), monkeypatch)
