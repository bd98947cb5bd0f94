"""``random:<architecture>``: full-size shapes with random weights, for benchmarks where the Hub is unreachable."""

import pytest
import torch

from multimsd.errors import MultimsdError
from multimsd.training.kinds.transformer import TransformerModelSettings as ModelSettings
from multimsd.training.modeling import load_model_and_tokenizer


@pytest.mark.e2e
def test_random_architecture_has_the_real_shapes_and_is_seeded(tmp_path):
    from multimsd.training.models.random_init import random_model_dir

    path = random_model_dir("random:smollm2", cache_dir=tmp_path)
    assert not list(path.glob("*.safetensors"))  # configuration + tokenizer only
    ms = ModelSettings(name="r", kind="causal", pretrained="random:smollm2", dtype="bfloat16")
    torch.manual_seed(1)
    model, tokenizer = load_model_and_tokenizer(ms)
    # SmolLM2-135M-Instruct: 134,515,008 parameters (tied embeddings), its tokenizer and chat template
    assert sum(p.numel() for p in model.parameters()) == 134_515_008
    assert model.dtype == torch.bfloat16 and len(tokenizer) == 49152 and tokenizer.chat_template
    first = model.model.layers[0].self_attn.q_proj.weight.clone()
    torch.manual_seed(1)
    again, _ = load_model_and_tokenizer(ms)
    assert torch.equal(first, again.model.layers[0].self_attn.q_proj.weight)  # the run's seed decides


def test_unknown_architecture():
    ms = ModelSettings(name="r", kind="causal", pretrained="random:llama99")
    with pytest.raises(MultimsdError, match="known: random:llama31_8b"):
        load_model_and_tokenizer(ms)
