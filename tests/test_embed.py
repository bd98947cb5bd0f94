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
