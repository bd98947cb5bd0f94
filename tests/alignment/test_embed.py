"""Embedder back-ends, pooling and the on-disk embedding cache, on a tiny random local model."""

from pathlib import Path

import numpy as np
import pytest
import torch

from multimsd.alignment.embed import Embedder
from multimsd.config import EmbedderConfig
from multimsd.errors import MultimsdError

TEXTS = [
    "Deep vein thrombosis is a clot.",
    "Ein Blutgerinnsel im Bein.",
    "脚の静脈に血栓ができます。",
    "short",
]


def manual(path: Path, texts: list[str], pooling: str) -> np.ndarray:
    from transformers import AutoModel, AutoTokenizer

    tok, model = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path).eval()
    batch = tok(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        h = model(**batch).last_hidden_state
    if pooling == "cls":
        v = h[:, 0]
    else:
        m = batch["attention_mask"].unsqueeze(-1).float()
        v = (h * m).sum(1) / m.sum(1)
    return torch.nn.functional.normalize(v, dim=-1).numpy()


@pytest.mark.integration
@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_transformers_backend_pooling(tiny_encoder, tmp_path, pooling):
    cfg = EmbedderConfig(name="tiny", model=str(tiny_encoder), backend="transformers", pooling=pooling)
    vecs = Embedder(cfg, tmp_path).encode(TEXTS)
    assert vecs.shape == (4, 32) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(vecs, manual(tiny_encoder, TEXTS, pooling), atol=1e-5)


@pytest.mark.integration
def test_cache_hits_skip_the_model(tiny_encoder, tmp_path):
    cfg = EmbedderConfig(name="tiny", model=str(tiny_encoder), backend="transformers", pooling="cls")
    first = Embedder(cfg, tmp_path)
    a = first.encode(TEXTS + TEXTS[:2], prefix="query: ")  # repeats are encoded once
    assert first.n_encoded == 4
    second = Embedder(cfg, tmp_path)
    b = second.encode(TEXTS, prefix="query: ")
    assert second.n_encoded == 0 and second._model is None  # not even loaded
    np.testing.assert_array_equal(a[:4], b)
    # Another prefix is another text: encoded anew, and its vectors differ.
    c = second.encode(TEXTS[:1], prefix="passage: ")
    assert second.n_encoded == 1 and not np.allclose(c[0], b[0])
    # Another pooling is another model fingerprint: nothing shared.
    third = Embedder(
        EmbedderConfig(name="tiny", model=str(tiny_encoder), backend="transformers", pooling="mean"), tmp_path
    )
    third.encode(TEXTS[:2])
    assert third.n_encoded == 2


@pytest.mark.integration
def test_prefix_is_prepended(tiny_encoder, tmp_path):
    cfg = EmbedderConfig(
        name="tiny", model=str(tiny_encoder), backend="transformers", pooling="mean", cache_embeddings=False
    )
    e = Embedder(cfg, tmp_path)
    np.testing.assert_allclose(e.encode(["x y z"], prefix="query: "), e.encode(["query: x y z"]), atol=1e-6)


def test_bad_backend_and_pooling(tiny_encoder, tmp_path):
    with pytest.raises(MultimsdError, match="backend"):
        Embedder(EmbedderConfig(model=str(tiny_encoder), backend="onnx"), tmp_path).encode(["a"])
    with pytest.raises(MultimsdError, match="pooling"):
        Embedder(
            EmbedderConfig(model=str(tiny_encoder), backend="transformers", pooling="max"), tmp_path
        ).encode(["a"])


def test_missing_local_model_is_one_clear_error(tmp_path):
    cfg = EmbedderConfig(model=str(tmp_path / "nowhere"), cache_embeddings=False)
    with pytest.raises(MultimsdError, match="cannot load embedder model"):
        Embedder(cfg).encode(["a"])


def test_a_loaded_model_is_kept_for_the_process(tmp_path, monkeypatch):
    """load_model loads a configuration once per process (the stages of one run, the studio's re-alignments),
    loads again when the local directory's files change, and keeps only the KEEP_LOADED most recent."""
    from collections import OrderedDict

    import multimsd.alignment.embed as embed

    loads = []
    monkeypatch.setattr(embed, "_LOADED", OrderedDict())
    monkeypatch.setattr(embed, "_load_model", lambda cfg: loads.append(cfg.model) or object())
    model_dir = tmp_path / "enc"
    model_dir.mkdir()
    (model_dir / "config.json").write_text("{}")
    cfg = EmbedderConfig(name="tiny", model=str(model_dir), backend="transformers", pooling="cls")

    first = embed.load_model(cfg)
    assert embed.load_model(cfg) is first and loads == [str(model_dir)]
    (model_dir / "config.json").write_text('{"changed": true}')  # another size: rewritten in place
    assert embed.load_model(cfg) is not first and len(loads) == 2
    mean = embed.load_model(
        EmbedderConfig(name="t", model=str(model_dir), backend="transformers", pooling="mean")
    )
    assert len(loads) == 3 and embed.load_model(cfg) is not mean  # pooling is part of the key
    embed.load_model(EmbedderConfig(name="t", model="other/id", backend="transformers", pooling="cls"))
    assert len(embed._LOADED) == embed.KEEP_LOADED == 2  # the least recently used (mean) let go
    embed.load_model(EmbedderConfig(name="t", model=str(model_dir), backend="transformers", pooling="mean"))
    assert len(loads) == 5


# ------------------------------------------------- the encoders that need no sentence-transformers import


@pytest.fixture(scope="module")
def small_bert(tmp_path_factory) -> Path:
    """A random 1-layer BERT with a 40-piece WordPiece vocabulary: loads in a fraction of a second (the
    250k-piece XLM-R tokenizer of ``tiny_encoder`` takes ~4 s a load), and its tokenizer returns
    token_type_ids too."""
    from transformers import BertConfig, BertModel, BertTokenizerFast

    out = tmp_path_factory.mktemp("small-bert")
    words = [
        "the",
        "dose",
        "is",
        "mg",
        "twice",
        "a",
        "day",
        "sentence",
        "another",
        "one",
        "query",
        ":",
        ".",
        ",",
        "5",
        "ein",
        "satz",
        "das",
        "ist",
    ]
    (out / "vocab.txt").write_text(
        "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words, *"abcdefghijklmnopqrstuvwxyz"])
    )
    BertTokenizerFast(vocab_file=str(out / "vocab.txt")).save_pretrained(out)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64
    )
    BertModel(config).save_pretrained(out)
    return out


def _write_st_dir(root: Path, modules: list[str], pooling: dict, sbert: dict | None = None) -> Path:
    """A sentence-transformers directory's declarations (no weights: simple_chain reads only these)."""
    import json

    root.mkdir(parents=True)
    (root / "config.json").write_text("{}")
    paths = {"Transformer": "", "Pooling": "1_Pooling", "Normalize": "2_Normalize", "Dense": "2_Dense"}
    entries = [
        {"idx": i, "name": str(i), "path": paths[m], "type": f"sentence_transformers.models.{m}"}
        for i, m in enumerate(modules)
    ]
    (root / "modules.json").write_text(json.dumps(entries))
    (root / "1_Pooling").mkdir()
    (root / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    (root / "sentence_bert_config.json").write_text(json.dumps(sbert or {"max_seq_length": 128}))
    return root


def test_which_directories_are_encoded_without_sentence_transformers(tmp_path):
    from multimsd.encoders.pooled import simple_chain

    new_mean = {"embedding_dimension": 8, "pooling_mode": "mean", "include_prompt": True}
    old_cls = {
        "word_embedding_dimension": 8,
        "pooling_mode_cls_token": True,
        "pooling_mode_mean_tokens": False,
    }
    chain = ["Transformer", "Pooling", "Normalize"]
    assert simple_chain(_write_st_dir(tmp_path / "e5", chain, new_mean)) == ("mean", True)
    assert simple_chain(_write_st_dir(tmp_path / "old", chain[:2], old_cls)) == ("cls", False)
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "config.json").write_text("{}")
    assert simple_chain(plain) == (
        "mean",
        False,
    )  # what sentence-transformers makes of a transformers directory
    # Anything more goes through sentence-transformers: a Dense layer (LaBSE), lower-casing, another pooling,
    # the prompt left out of the mean, two modes at once; and a path that is not a model directory.
    assert (
        simple_chain(_write_st_dir(tmp_path / "labse", ["Transformer", "Pooling", "Dense"], old_cls)) is None
    )
    lower = {"max_seq_length": 128, "do_lower_case": True}
    assert simple_chain(_write_st_dir(tmp_path / "lower", chain, new_mean, lower)) is None
    assert simple_chain(_write_st_dir(tmp_path / "max", chain, {**new_mean, "pooling_mode": "max"})) is None
    assert (
        simple_chain(_write_st_dir(tmp_path / "noprompt", chain, {**new_mean, "include_prompt": False}))
        is None
    )
    both = {**old_cls, "pooling_mode_mean_tokens": True}
    assert simple_chain(_write_st_dir(tmp_path / "both", chain, both)) is None
    assert simple_chain(tmp_path / "missing") is None and simple_chain("org/hub-id") is None


@pytest.mark.parametrize("backend,pooling", [("sentence-transformers", "mean"), ("transformers", "cls")])
def test_pooled_encoder_gives_sentence_transformers_vectors_bit_for_bit(
    small_bert, tmp_path, backend, pooling
):
    """The same vectors, to the bit, as sentence-transformers on the same directory: with a prompt, a text
    truncated at max_length, with and without encode()'s normalisation; and a saved Transformer -> Pooling ->
    Normalize directory of the same model too."""
    from sentence_transformers import SentenceTransformer, models

    from multimsd.alignment.embed import load_model
    from multimsd.encoders.pooled import PooledEncoder

    texts = [*TEXTS, "The dose is 5 mg twice a day. " * 40]
    word = models.Transformer(str(small_bert), max_seq_length=32)
    reference = SentenceTransformer(modules=[word, models.Pooling(32, pooling_mode=pooling)], device="cpu")
    saved = tmp_path / "st-dir"
    SentenceTransformer(modules=[*reference, models.Normalize()], device="cpu").save(str(saved))
    with_normalize = SentenceTransformer(str(saved), device="cpu", local_files_only=True)
    with_normalize.max_seq_length = 32
    cases = [
        (str(small_bert), backend, reference, False),
        (str(saved), "sentence-transformers", with_normalize, True),
    ]
    for model, model_backend, st, normalized in cases:
        cfg = EmbedderConfig(name="t", model=model, backend=model_backend, pooling=pooling, max_length=32)
        ours = load_model(cfg)
        assert isinstance(ours, PooledEncoder) and ours.normalize is normalized
        for norm in (False, True):
            args = {"prompt": "query: ", "batch_size": len(texts), "normalize_embeddings": norm}
            want = st.encode(texts, convert_to_numpy=True, show_progress_bar=False, **args)
            got = ours.encode(texts, **args)
            assert got.dtype == np.float32 and got.shape == (len(texts), 32)
            assert np.array_equal(got, want)
    assert not np.allclose(with_normalize.encode(texts), reference.encode(texts))  # the Normalize module ran


def test_a_dense_head_is_loaded_by_sentence_transformers(small_bert, tmp_path):
    from sentence_transformers import SentenceTransformer, models

    from multimsd.alignment.embed import load_model

    word = models.Transformer(str(small_bert), max_seq_length=32)
    dense = models.Dense(32, 8)
    saved = tmp_path / "with-dense"
    SentenceTransformer(modules=[word, models.Pooling(32, pooling_mode="cls"), dense], device="cpu").save(
        str(saved)
    )
    model = load_model(EmbedderConfig(name="t", model=str(saved), max_length=32))
    assert isinstance(model, SentenceTransformer)
    assert model.encode(TEXTS, convert_to_numpy=True).shape == (len(TEXTS), 8)  # the Dense layer ran


@pytest.mark.integration
def test_aligning_with_a_plain_encoder_does_not_import_sentence_transformers(small_bert, tmp_path):
    """The point of multimsd.encoders.pooled: a process that encodes with such a model never pays the
    ~12 s import of sentence-transformers."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from multimsd.alignment.embed import Embedder\n"
        "from multimsd.config import EmbedderConfig\n"
        f"e = Embedder(EmbedderConfig(name='t', model={str(small_bert)!r}), {str(tmp_path)!r})\n"
        "assert e.encode(['a sentence', 'another one']).shape == (2, 32)\n"
        "print('sentence_transformers' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "False"
