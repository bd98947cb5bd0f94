"""model.fused_kernels (multimsd.training.kernels): when liger-kernel's RMSNorm / SwiGLU / RoPE apply, what they
are called with (never liger's losses), and the one line where they cannot apply."""

from __future__ import annotations

import inspect
import logging
import sys
import textwrap

import pytest
import torch

from multimsd.errors import MultimsdError
from multimsd.training.kernels import (
    apply_fused_kernels,
    fused_kernels_mode,
    liger_kwargs,
    why_not_fused,
)

pytestmark = pytest.mark.usefixtures("fresh_accelerate_state")


def _tiny_llama(fused="false"):
    from multimsd.training.kinds.transformer import TransformerModelSettings
    from multimsd.training.modeling import load_model_and_tokenizer

    ms = TransformerModelSettings(
        name="tiny_llama", kind="causal", pretrained="tiny:llama", fused_kernels=fused
    )
    return load_model_and_tokenizer(ms)[0]


def test_mode_accepts_yaml_and_command_line_booleans():
    assert [fused_kernels_mode(v) for v in (True, "True", "true", False, "False", "auto", " AUTO ")] == [
        "true",
        "true",
        "true",
        "false",
        "false",
        "auto",
        "auto",
    ]
    with pytest.raises(MultimsdError, match="model.fused_kernels='maybe': choose auto, true or false"):
        fused_kernels_mode("maybe")


def test_which_models_get_the_kernels():
    for model_type in ("llama", "mistral", "qwen2", "qwen3", "phi3"):
        assert why_not_fused(model_type, cuda=True, liger=True) is None
    assert "no CUDA device" in why_not_fused("llama", cuda=False, liger=True)
    assert "not installed" in why_not_fused("llama", cuda=True, liger=False)
    # mBART (LayerNorm, GELU, learned positions), Gemma (GeGLU), unknown configs: left alone
    for model_type in ("mbart", "gemma", None):
        assert "has no liger RMSNorm + SwiGLU + RoPE" in why_not_fused(model_type, cuda=True, liger=True)


def test_liger_is_called_with_its_losses_off_or_not_at_all():
    def apply_llama(
        rope=True,
        cross_entropy=False,
        fused_linear_cross_entropy=True,
        rms_norm=True,
        swiglu=True,
        model=None,
    ):
        """liger-kernel 0.8.5's apply_liger_kernel_to_llama signature (fused linear CE on by default)."""

    def apply_gemma(
        rope=True, cross_entropy=False, fused_linear_cross_entropy=True, rms_norm=True, geglu=True, model=None
    ):
        """Gemma's: GeGLU, no swiglu switch."""

    def apply_unswitchable(rope=True, rms_norm=True, swiglu=True, model=None):
        """A function that cannot be told to leave the loss alone."""

    kw = liger_kwargs(inspect.signature(apply_llama).parameters)
    assert kw == {
        "rope": True,
        "rms_norm": True,
        "swiglu": True,
        "cross_entropy": False,
        "fused_linear_cross_entropy": False,
    }
    assert liger_kwargs(inspect.signature(apply_gemma).parameters) is None
    assert liger_kwargs(inspect.signature(apply_unswitchable).parameters) is None


def test_auto_without_cuda_applies_nothing_and_says_why(caplog):
    with caplog.at_level(logging.INFO, logger="multimsd.training.kernels"):
        model = _tiny_llama("auto")  # through the kind's load, as a run does
    lines = [r.getMessage() for r in caplog.records if r.name == "multimsd.training.kernels"]
    assert lines == [
        "model.fused_kernels=auto: not applied (no CUDA device: liger-kernel's kernels are Triton GPU kernels)"
    ]
    assert model.model.norm._get_name() == "LlamaRMSNorm"  # untouched
    caplog.clear()
    assert apply_fused_kernels(model, "false", cuda=True) == []  # false: not even a line
    assert not caplog.records


def test_true_where_the_kernels_cannot_apply_is_one_error_line():
    with pytest.raises(MultimsdError, match=r"model.fused_kernels=true: cannot apply \(no CUDA device"):
        _tiny_llama("true")
    model = _tiny_llama()
    if not _liger_installed():
        with pytest.raises(MultimsdError, match="liger-kernel is not installed"):
            apply_fused_kernels(model, True, cuda=True)


def _liger_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("liger_kernel") is not None


@pytest.fixture
def stand_in_liger(tmp_path, monkeypatch):
    """A liger_kernel package whose llama function records its call (the real one needs Triton and a GPU)."""
    pkg = tmp_path / "liger_kernel" / "transformers"
    pkg.mkdir(parents=True)
    (tmp_path / "liger_kernel" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "monkey_patch.py").write_text(
        textwrap.dedent(
            """
            CALLS = []

            def apply_liger_kernel_to_llama(
                rope=True, cross_entropy=False, fused_linear_cross_entropy=True, rms_norm=True, swiglu=True,
                model=None,
            ):
                CALLS.append(dict(rope=rope, cross_entropy=cross_entropy, rms_norm=rms_norm, swiglu=swiglu,
                                  fused_linear_cross_entropy=fused_linear_cross_entropy, model=model))

            MODEL_TYPE_TO_APPLY_LIGER_FN = {"llama": apply_liger_kernel_to_llama}
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m.startswith("liger_kernel")]:
        monkeypatch.delitem(sys.modules, name)
    yield
    for name in [m for m in sys.modules if m.startswith("liger_kernel")]:
        sys.modules.pop(name)


def test_liger_gets_the_base_model_and_no_loss(stand_in_liger, caplog):
    from liger_kernel.transformers.monkey_patch import CALLS as calls

    base = _tiny_llama()  # what load() hands to liger: the model before LoRA wraps it
    with caplog.at_level(logging.INFO, logger="multimsd.training.kernels"):
        assert apply_fused_kernels(base, "auto", cuda=True) == ["rms_norm", "swiglu", "rope"]
    assert calls == [
        {
            "rope": True,
            "cross_entropy": False,
            "rms_norm": True,
            "swiglu": True,
            "fused_linear_cross_entropy": False,
            "model": base,
        }
    ]
    assert caplog.messages == [
        "model.fused_kernels=auto: liger-kernel rms_norm + swiglu + rope applied to llama"
    ]


@pytest.mark.gpu
def test_liger_kernels_keep_the_logits_on_cuda():
    """The real kernels on a GPU (run with -m gpu where one is lent and liger-kernel is installed)."""
    if not torch.cuda.is_available() or not _liger_installed():
        pytest.skip("needs a CUDA device and liger-kernel (the gpu extra)")
    model = _tiny_llama().to("cuda").eval()
    ids = torch.tensor([[1, 11, 12, 21, 22, 13, 23]], device="cuda")
    with torch.no_grad():
        plain = model(input_ids=ids).logits  # before: liger's RoPE replaces Llama's for the whole process
        assert apply_fused_kernels(model, "true") == ["rms_norm", "swiglu", "rope"]
        assert model.model.norm._get_name() == "LigerRMSNorm"  # liger patches the instance
        torch.testing.assert_close(model(input_ids=ids).logits, plain, rtol=1e-4, atol=1e-4)
