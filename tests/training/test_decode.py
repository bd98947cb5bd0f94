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


@pytest.mark.integration
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


@pytest.mark.integration
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


# ---------------------------------------------------------------------------------------------- the budget
def llama31_8b_config():
    from transformers import LlamaConfig

    # Llama-3.1-8B's shapes (its config.json)
    return LlamaConfig(
        hidden_size=4096,
        intermediate_size=14336,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=8,
        vocab_size=128256,
    )


def mbart_large_50_config():
    from transformers import MBartConfig

    # mBART-large-50's shapes (its config.json)
    return MBartConfig(
        d_model=1024,
        encoder_layers=12,
        decoder_layers=12,
        encoder_attention_heads=16,
        decoder_attention_heads=16,
        encoder_ffn_dim=4096,
        decoder_ffn_dim=4096,
        vocab_size=250054,
    )


def test_kv_cache_and_activation_bytes_by_hand():
    from multimsd.training.decode import activation_bytes_per_token, kv_cache_bytes_per_token

    llama = llama31_8b_config()
    # keys + values x 32 layers x 8 KV heads x head dim 4096 / 32 = 128 x 2 bytes (bf16)
    assert kv_cache_bytes_per_token(llama, 2) == 2 * 32 * 8 * 128 * 2 == 131_072
    assert kv_cache_bytes_per_token(llama, 2, num_beams=4) == 4 * 131_072
    # residual stream 4096 + gate and up 2 x 14336, bf16
    assert activation_bytes_per_token(llama, 2) == (4096 + 2 * 14336) * 2 == 65_536
    mbart = mbart_large_50_config()
    # a decoder layer's keys + values: 2 x 12 layers x 16 heads x 64 = 24,576 values, plus the encoder's output
    # (d_model 1024) kept for the cross-attention: 25,600 values, float32 4 bytes = 102,400; 5 beams: 512,000
    assert kv_cache_bytes_per_token(mbart, 4) == 102_400
    assert kv_cache_bytes_per_token(mbart, 4, num_beams=5) == 512_000
    assert kv_cache_bytes_per_token(mbart, 2, num_beams=5) == 256_000  # bf16
    # d_model 1024 + 2 x FFN 4096, float32
    assert activation_bytes_per_token(mbart, 4) == (1024 + 2 * 4096) * 4 == 36_864


def test_auto_batch_tokens_by_hand():
    from multimsd.training.decode import GIB, auto_batch_tokens

    # 10 GiB free: 90 % = 9 GiB, less 1 GiB = 8 GiB, over 128 KiB + 64 KiB a token = 8 * 2**30 / (192 * 2**10)
    assert auto_batch_tokens(10 * GIB, 131_072, 65_536) == 8 * 2**20 // 192 == 43_690
    assert auto_batch_tokens(10 * GIB, 131_072) == 8 * 2**20 // 128 == 65_536  # KV cache alone
    # 128 prompts x (100 + 256 new tokens) of Llama-8B fit in one batch on ~30 GiB free
    assert auto_batch_tokens(30 * GIB, 131_072, 65_536) >= 128 * 356
    assert auto_batch_tokens(GIB, 131_072) == 1  # nothing usable: a row at a time
    assert auto_batch_tokens(0, 131_072) == 1


def test_batch_token_budget(monkeypatch):
    from multimsd.training import decode

    model, _ = tiny_llama_lora()
    auto = EvalSettings()
    assert auto.max_batch_tokens == "auto" and auto.backend == "generate"
    # on a CPU (and without a model): today's figure
    assert decode.batch_token_budget(auto, model) == decode.CPU_BATCH_TOKENS == 8192
    assert decode.batch_token_budget(auto) == 8192
    assert decode.batch_token_budget(EvalSettings(max_batch_tokens=500), model) == 500
    assert decode.batch_token_budget(EvalSettings(max_batch_tokens=0), model) == 0
    # on CUDA, from the free memory: tiny Llama (2 layers, 2 KV heads of 32 / 4 = 8, float32) takes
    # 2 x 2 x 2 x 8 x 4 = 256 bytes of KV cache and (32 + 2 x 64) x 4 = 640 of activations a token
    monkeypatch.setattr(decode, "free_device_bytes", lambda device: 11 * decode.GIB)
    assert decode.batch_token_budget(auto, model) == (int(11 * decode.GIB * 0.9) - decode.GIB) // (256 + 640)
    beams = EvalSettings(num_beams=4)
    assert decode.batch_token_budget(beams, model) == (int(11 * decode.GIB * 0.9) - decode.GIB) // (
        4 * 256 + 640
    )


@pytest.mark.parametrize("value", ["big", -1, 2.5, True, None])
def test_max_batch_tokens_must_be_auto_or_a_count(value):
    from multimsd.errors import MultimsdError
    from multimsd.training.loop import to_train_config

    with pytest.raises(
        MultimsdError, match=r"eval.max_batch_tokens=.*: choose auto .* or a number of tokens >= 0"
    ):
        EvalSettings(max_batch_tokens=value)
    with pytest.raises(MultimsdError, match="eval.max_batch_tokens="):
        to_train_config({"eval": {"max_batch_tokens": value}})
    assert to_train_config({"eval": {"max_batch_tokens": 65536}}).eval.max_batch_tokens == 65536
    assert to_train_config({"eval": {"max_batch_tokens": "auto"}}).eval.max_batch_tokens == "auto"


def test_backend_must_be_known():
    from multimsd.errors import MultimsdError
    from multimsd.training.loop import to_train_config

    with pytest.raises(MultimsdError, match="eval.backend='vllm': choose generate or static or continuous"):
        EvalSettings(backend="vllm")
    assert to_train_config({"eval": {"backend": "continuous"}}).eval.backend == "continuous"


def test_bucketed_by_hand():
    from multimsd.training.decode import bucketed

    assert [len(b) for b in bucketed([list(range(100))])] == [64, 32, 4]
    assert bucketed([[5, 3, 1], [2], [4, 0, 6, 7]]) == [[5, 3], [1], [2], [4, 0, 6, 7]]
    assert bucketed([]) == []
    lengths = [3, 9, 1, 7, 7, 2]
    seen = []

    def decode(idx):
        seen.append(list(idx))
        return [f"row {k}" for k in idx]

    # budget 30: 3 x (9 + 1) rows, then 3 x (2 + 1): cut to 2 + 1 each, in input order again
    settings = EvalSettings(max_new_tokens=1, max_batch_tokens=30)
    assert decode_batches(lengths, settings, decode, buckets=True) == [f"row {k}" for k in range(6)]
    assert seen == [[1, 3], [4], [0, 5], [2]]


# ---------------------------------------------------------------------------------------------- LoRA copies
def test_copies_fit_by_hand():
    from multimsd.training.decode import copies_fit

    assert copies_fit(10, None)  # a CPU: host memory is the device's
    assert copies_fit(50, 100) and not copies_fit(51, 100)  # at most half the free memory


def test_merged_lora_without_restore_stays_merged_and_copies_nothing(monkeypatch):
    from multimsd.training import decode

    model, _ = tiny_llama_lora()
    ids = torch.tensor([[1, 5, 9, 200, 31]])
    with torch.no_grad():
        logits = model(input_ids=ids).logits
    with merged_lora(model):
        merged = {n: p.detach().clone() for n, p in model.named_parameters()}

    def no_copies(params):
        raise AssertionError("copied")

    monkeypatch.setattr(decode, "_copy_aside", no_copies)
    with merged_lora(model, restore=False):
        pass
    # the same merged weights as with a restore, still in place after the block, and peft knows it
    assert all(torch.equal(p, merged[n]) for n, p in model.named_parameters())
    layers = [m for m in model.modules() if hasattr(m, "merged_adapters")]
    assert layers and all(m.merged for m in layers)
    with torch.no_grad():
        assert torch.allclose(model(input_ids=ids).logits, logits, atol=1e-4, rtol=1e-4)
    with merged_lora(model):  # merged already: nothing to merge, copy or restore
        pass
    assert all(torch.equal(p, merged[n]) for n, p in model.named_parameters())
